"""Send pacing: per chat, per group and overall limits, without head-of-line blocking."""

from __future__ import annotations

import random

from bot.models import ChatKey, ChatKind
from bot.pacing import Budget, Pacer, SlidingWindow
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


def test_a_forums_topics_share_their_groups_limits() -> None:
    """Telegram counts a forum's sends by group: its topics share the interval and window."""
    pacer = Pacer(TELEGRAM, clock=Clock())
    topics = [ChatKey("telegram", ChatKind.GROUP, "-100", str(n)) for n in range(21)]
    slots = [pacer.reserve(topic) for topic in topics]
    assert slots[:3] == [1000.0, 1001.0, 1002.0]
    assert slots[20] == 1060.0
    pacer.give_back(topics[20], slots[20])
    assert pacer.reserve(GROUP) == 1060.0


def test_window_forgets_old_events() -> None:
    """Events older than the window no longer count."""
    window = SlidingWindow(size_s=1.0, limit=1)
    window.add(0.0)
    assert window.earliest(0.5) == 1.0
    assert window.earliest(5.0) == 5.0


def test_a_chat_waiting_for_its_interval_does_not_free_the_overall_window() -> None:
    """Reserving a future slot for one chat never forgets sends that still fill this second."""
    pacer = Pacer(TELEGRAM, clock=Clock())
    assert [pacer.reserve(private(n)) for n in range(25)] == [1000.0] * 25
    assert pacer.reserve(private(0)) == 1001.0  # its own interval: a slot a second ahead
    assert pacer.reserve(private(25)) == 1001.0  # the 26th send of second 1000 must wait too


def test_window_keeps_events_a_future_question_has_passed() -> None:
    """Asking about a later moment leaves earlier events counting for earlier moments."""
    window = SlidingWindow(size_s=1.0, limit=1)
    window.add(0.0)
    assert window.earliest(5.0) == 5.0
    assert window.earliest(0.5) == 1.0
    window.forget_before(5.0)
    assert window.earliest(0.5) == 0.5


def test_a_slot_given_back_frees_the_chat_and_the_windows() -> None:
    """A send that never reached the platform does not count against any limit."""
    limits = PacingLimits(chat_interval_s=1.0, group_per_minute=2, overall_per_s=2.0)
    pacer = Pacer(limits, clock=Clock())
    first = pacer.reserve(GROUP)
    failed = pacer.reserve(GROUP)
    assert failed == 1001.0
    pacer.give_back(GROUP, failed)
    assert pacer.reserve(GROUP) == 1001.0  # not 1060.0: the group still has room
    pacer.give_back(GROUP, 1001.0)
    pacer.give_back(GROUP, first)
    assert pacer.reserve(GROUP) == 1000.0
    assert [pacer.reserve(private(n)) for n in range(2)] == [1000.0, 1001.0]


def test_giving_back_a_slot_twice_forgets_nothing_else() -> None:
    """Only the one reservation is forgotten, however often it is given back."""
    pacer = Pacer(
        PacingLimits(chat_interval_s=0.0, group_per_minute=20, overall_per_s=1.0), clock=Clock()
    )
    kept = pacer.reserve(private(1))
    given = pacer.reserve(private(2))
    pacer.give_back(private(2), given)
    pacer.give_back(private(2), given)
    assert kept == 1000.0
    assert pacer.reserve(private(3)) == 1001.0  # private(1)'s send still fills the second


def test_budget_lets_a_second_through_then_refills_at_its_rate() -> None:
    """A budget of 5/s takes a burst of 5, refuses the 6th, and has one more 0.2 s later."""
    clock = Clock()
    budget = Budget(per_s=5.0, clock=clock)
    burst = [budget.take() for _ in range(6)]
    clock.now += 0.2
    later = [budget.take(), budget.take()]
    clock.now += 10.0
    refilled = sum(budget.take() for _ in range(7))
    assert (burst, later, refilled) == ([True] * 5 + [False], [True, False], 5)


def test_a_chat_idle_past_the_windows_leaves_no_key() -> None:
    """A thousand chats sent to once (their slots spread over 40 s by the overall limit) are
    forgotten a minute after the last of them, when another chat sends: the pacer holds
    only the chats whose last send still limits something."""
    clock = Clock()
    pacer = Pacer(TELEGRAM, clock=clock)
    for number in range(1000):
        pacer.reserve(private(number))
        clock.now += 0.001
    before = len(pacer)
    clock.now += 40.0 + 61.0
    pacer.reserve(GROUP)
    assert (before, len(pacer)) == (1000, 1)


def test_a_group_that_just_sent_keeps_its_window() -> None:
    """A group that sent 30 s ago is still remembered: its minute's window still counts."""
    clock = Clock()
    pacer = Pacer(TELEGRAM, clock=clock)
    for _ in range(20):
        pacer.reserve(GROUP)
    clock.now += 30.0
    pacer.reserve(private(1))
    assert (len(pacer), pacer.reserve(GROUP) >= 1060.0) == (2, True)


def test_the_earliest_room_is_the_first_moment_a_counted_event_has_left() -> None:
    """Over random windows, the earliest moment is the first of ``at`` and the moments a
    window after each event that has room, counting events on both sides (the times are
    quarters of a second, so their sums are exact)."""
    rng = random.Random(7)
    for _ in range(300):
        size_s, limit = rng.choice([0.5, 1.0, 60.0]), rng.randint(1, 6)
        window = SlidingWindow(size_s=size_s, limit=limit)
        times = sorted(rng.randint(0, int(16 * size_s)) / 4 for _ in range(rng.randint(0, 40)))
        for t in times:
            window.add(t)
        at = rng.randint(-4, int(20 * size_s)) / 4
        assert window.earliest(at) == _first_room(times, at, size_s=size_s, limit=limit)


def test_the_earliest_room_holds_through_reserving_giving_back_and_forgetting() -> None:
    """Whatever a window was asked, given and told to forget before, its answer is the
    first moment with room among those it holds now (the span it found full last time
    never hides a moment that room has opened at since)."""
    rng = random.Random(11)
    for _ in range(200):
        size_s, limit = rng.choice([0.5, 1.0, 60.0]), rng.randint(1, 4)
        window, held, now = SlidingWindow(size_s=size_s, limit=limit), list[float](), 0.0
        for _ in range(60):
            step = rng.random()
            if step < 0.5:  # reserve, as Pacer.reserve does
                at = now + rng.randint(0, int(8 * size_s)) / 4
                slot = window.earliest(at)
                assert slot == _first_room(held, at, size_s=size_s, limit=limit)
                window.add(slot)
                held.append(slot)
            elif step < 0.7 and held:  # give a slot back
                slot = rng.choice(held)
                window.remove(slot)
                held.remove(slot)
            elif step < 0.85:  # time passes
                now += rng.randint(0, int(4 * size_s)) / 4
                window.forget_before(now)
                held = [t for t in held if t > now - size_s]
            else:  # a question about any moment, the past too
                at = now + rng.randint(-int(4 * size_s), int(20 * size_s)) / 4
                assert window.earliest(at) == _first_room(held, at, size_s=size_s, limit=limit)


def _first_room(held: list[float], at: float, *, size_s: float, limit: int) -> float:
    moments = [at, *(t + size_s for t in held)]
    return min(
        moment
        for moment in moments
        if moment >= at and sum(abs(t - moment) < size_s for t in held) < limit
    )
