"""Send pacing: per chat, per group and overall limits, without head-of-line blocking."""

from __future__ import annotations

from bot.models import ChatKey, ChatKind
from bot.pacing import Pacer, SlidingWindow
from bot.ports import PacingLimits

TELEGRAM = PacingLimits(chat_interval_s=1.0, group_per_minute=20, overall_per_s=25.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def private(n: int) -> ChatKey:
    return ChatKey("telegram", ChatKind.PRIVATE, str(n))


GROUP = ChatKey("telegram", ChatKind.GROUP, "-100")


def test_one_per_second_per_chat() -> None:
    """Sends to one chat are spaced by chat_interval_s."""
    pacer = Pacer(TELEGRAM, clock=Clock())
    assert [pacer.reserve(private(1)) for _ in range(3)] == [1000.0, 1001.0, 1002.0]


def test_other_chats_are_not_held_up() -> None:
    """A chat waiting for its interval does not delay a different chat."""
    pacer = Pacer(TELEGRAM, clock=Clock())
    pacer.reserve(private(1))
    pacer.reserve(private(1))
    assert pacer.reserve(private(2)) == 1000.0


def test_overall_limit() -> None:
    """The 26th send within a second waits for the window to move on."""
    pacer = Pacer(TELEGRAM, clock=Clock())
    slots = [pacer.reserve(private(n)) for n in range(26)]
    assert slots[:25] == [1000.0] * 25
    assert slots[25] == 1001.0


def test_group_limit_per_minute() -> None:
    """A group gets at most 20 messages in any 60 seconds."""
    clock = Clock()
    pacer = Pacer(TELEGRAM, clock=clock)
    slots = [pacer.reserve(GROUP) for _ in range(21)]
    assert slots[19] == 1019.0
    assert slots[20] == 1060.0


def test_window_forgets_old_events() -> None:
    """Events older than the window no longer count."""
    window = SlidingWindow(size_s=1.0, limit=1)
    window.add(0.0)
    assert window.earliest(0.5) == 1.0
    assert window.earliest(5.0) == 5.0
