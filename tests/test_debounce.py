"""The debounce: a fresh random wait after the latest message, capped by max_wait and max_batch."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from bot.config.model import PacingConfig
from bot.conversation import Unheard, WaitEnd
from bot.debounce import Debouncer, looks_unfinished, quiet_deadline
from bot.models import ChatKey, ChatKind
from fakes.events import debouncer_calling

# The debouncer runs on the event loop's clock alone (call_at, loop.time(), no threads), so its
# timed tests run on looptime's fast-forwarded loop: every wait is exact, none depends on how
# busy the machine is, and a test that waits 200 ms of loop time takes microseconds.
pytestmark = pytest.mark.looptime

CHAT = ChatKey("telegram", ChatKind.PRIVATE, "1")
OTHER = ChatKey("telegram", ChatKind.PRIVATE, "2")
PACING = PacingConfig(debounce_min_s=5, debounce_max_s=15, max_wait_s=60, max_batch=3)


@pytest.mark.parametrize(
    ("now", "draw", "answer_by", "expected"),
    [
        (100.0, 0.0, math.inf, (105.0, WaitEnd.QUIET)),  # the shortest wait
        (100.0, 1.0, math.inf, (115.0, WaitEnd.QUIET)),  # the longest wait
        (100.0, 0.5, math.inf, (110.0, WaitEnd.QUIET)),
        (155.0, 1.0, math.inf, (160.0, WaitEnd.MAX_WAIT)),  # first at 100, max_wait 60
        (100.0, 1.0, 112.0, (112.0, WaitEnd.ANSWER_BOUND)),  # an @ at 92, bound 20 s
        (155.0, 1.0, 170.0, (160.0, WaitEnd.MAX_WAIT)),  # max_wait still caps the bound
    ],
)
def test_quiet_deadline(
    now: float, draw: float, answer_by: float, expected: tuple[float, WaitEnd]
) -> None:
    """The deadline is now + a wait drawn in [min, max], never past first + max_wait nor
    past the answer bound; it says which of the three set it."""
    deadline = quiet_deadline(PACING, now=now, first_at=100.0, draw=draw, answer_by=answer_by)
    assert deadline == expected


def test_unfinished_message_waits_longest() -> None:
    """A message that reads unfinished gets the longest wait whatever the draw."""
    deadline = quiet_deadline(PACING, now=0.0, first_at=0.0, draw=0.0, unfinished=True)
    assert deadline == (15.0, WaitEnd.QUIET)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("我想想，", True), ("wait...", True), ("我想想", True), ("好的。", False), ("ok", False)],
)
def test_looks_unfinished(text: str, expected: bool) -> None:
    """Trailing commas, ellipses and 'let me think' read as unfinished."""
    assert looks_unfinished(text) is expected


FAST = PacingConfig(debounce_min_s=0.05, debounce_max_s=0.05, max_wait_s=0.2, max_batch=10)


def ms(seconds: float) -> int:
    """Return a loop-time duration in whole milliseconds, free of float noise."""
    return round(seconds * 1000)


async def test_fires_once_after_quiet() -> None:
    """Three quick touches lead to one firing, after the wait following the last one."""
    fired: list[tuple[ChatKey, float]] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(FAST, lambda chat: fired.append((chat, loop.time())))
    start = loop.time()
    for _ in range(2):
        debouncer.touch(CHAT)
        await asyncio.sleep(0.02)
    last = loop.time()
    debouncer.touch(CHAT)
    await asyncio.sleep(0.12)
    assert [(chat, ms(at - last), ms(at - start)) for chat, at in fired] == [(CHAT, 50, 90)]
    assert len(debouncer) == 0


async def test_each_touch_resets_the_timer() -> None:
    """A message inside the wait pushes the answer back."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST, fired.append)
    debouncer.touch(CHAT)
    await asyncio.sleep(0.035)
    debouncer.touch(CHAT)
    await asyncio.sleep(0.035)  # 70 ms after the first touch: it would have fired by now
    assert fired == []
    await asyncio.sleep(0.04)
    assert fired == [CHAT]


async def test_max_wait_caps_a_steady_stream() -> None:
    """Messages every 30 ms never let the chat go quiet, but max_wait_s fires anyway."""
    pacing = PacingConfig(debounce_min_s=0.05, debounce_max_s=0.05, max_wait_s=0.12, max_batch=100)
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(pacing, lambda chat: fired.append(loop.time()))
    start = loop.time()
    while loop.time() - start < 0.25 and not fired:
        debouncer.touch(CHAT)
        await asyncio.sleep(0.03)
    assert [ms(at - start) for at in fired] == [120]


async def test_max_batch_fires_at_once() -> None:
    """The max_batch-th waiting message fires the chat without waiting."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST.model_copy(update={"max_batch": 3}), fired.append)
    debouncer.touch(CHAT)
    debouncer.touch(CHAT)
    assert debouncer.waiting(CHAT) == 2
    debouncer.touch(CHAT)
    await asyncio.sleep(0)
    assert fired == [CHAT]


async def test_chats_are_independent() -> None:
    """A message in one chat does not delay another chat."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST, fired.append, rng=random.Random(1))
    debouncer.touch(CHAT)
    await asyncio.sleep(0.03)
    debouncer.touch(OTHER)
    await asyncio.sleep(0.03)
    assert fired == [CHAT]
    await asyncio.sleep(0.04)
    assert fired == [CHAT, OTHER]


async def test_fire_all_and_cancel_all() -> None:
    """fire_all answers every waiting chat now; cancel_all forgets the rest."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST, fired.append)
    debouncer.touch(CHAT)
    debouncer.fire_all()
    debouncer.touch(OTHER)
    debouncer.cancel_all()
    await asyncio.sleep(0.08)
    assert fired == [CHAT]
    assert len(debouncer) == 0


class ScriptedDraws(random.Random):
    """A random source that returns the draws it was given, in order."""

    def __init__(self, *draws: float) -> None:
        super().__init__()
        self._draws = list(draws)

    def random(self) -> float:
        return self._draws.pop(0)


async def test_a_shorter_fresh_wait_moves_the_answer_sooner() -> None:
    """A message whose fresh draw is shorter than the wait still running is answered sooner."""
    pacing = PacingConfig(debounce_min_s=0.02, debounce_max_s=0.2, max_wait_s=1.0, max_batch=10)
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(
        pacing, lambda chat: fired.append(loop.time()), rng=ScriptedDraws(1, 0)
    )
    debouncer.touch(CHAT)  # the longest wait: 200 ms
    await asyncio.sleep(0.01)
    second = loop.time()
    debouncer.touch(CHAT)  # the shortest: 20 ms after this message
    await asyncio.sleep(0.1)
    assert [ms(at - second) for at in fired] == [20]


async def test_a_later_deadline_fires_once_at_the_latest_message() -> None:
    """Waits that keep moving later end in one answer, a full wait after the last message."""
    pacing = PacingConfig(debounce_min_s=0.1, debounce_max_s=0.3, max_wait_s=5.0, max_batch=10)
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(
        pacing, lambda chat: fired.append(loop.time()), rng=ScriptedDraws(0, 0.5, 1)
    )
    debouncer.touch(CHAT)  # 100 ms
    await asyncio.sleep(0.05)
    debouncer.touch(CHAT)  # 200 ms after this one
    await asyncio.sleep(0.05)
    last = loop.time()
    debouncer.touch(CHAT)  # 300 ms after this one: the first handle fires early and re-arms
    await asyncio.sleep(0.2)
    assert fired == []
    await asyncio.sleep(0.2)
    assert [ms(at - last) for at in fired] == [300]
    assert debouncer.waiting(CHAT) == 0


async def test_a_message_that_does_not_re_arm_leaves_the_deadline_alone() -> None:
    """Bystanders' messages every 20 ms while an asker waits: the answer comes a wait after
    the asker's message, not after the room's last one, and they all count as waiting."""
    pacing = PacingConfig(debounce_min_s=0.08, debounce_max_s=0.08, max_wait_s=5.0, max_batch=99)
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(pacing, lambda chat: fired.append(loop.time()))
    debouncer.touch(CHAT)  # the asker
    asked = loop.time()
    waiting = []
    while not fired and loop.time() - asked < 0.5:
        await asyncio.sleep(0.02)
        debouncer.touch(CHAT, rearm=False, unfinished=True)  # chatter, even "unfinished"
        waiting.append(debouncer.waiting(CHAT))
    assert [ms(at - asked) for at in fired] == [80]
    assert waiting[:3] == [2, 3, 4]


async def test_context_does_not_count_toward_max_batch() -> None:
    """Messages that only join the wait as context do not fill the batch: with max_batch 3
    an asker's wait holding five of them still ends at its quiet deadline; the asker's own
    third line, counted from the question (restart_cap), fires it at once."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST.model_copy(update={"max_batch": 3}), fired.append)
    debouncer.touch(CHAT)  # the room, before anyone asks
    debouncer.touch(CHAT)
    debouncer.touch(CHAT, restart_cap=True)  # the question: the room's two are context now
    for _ in range(5):
        debouncer.touch(CHAT, rearm=False)
    await asyncio.sleep(0)
    before = (list(fired), debouncer.waiting(CHAT))
    debouncer.touch(CHAT)
    debouncer.touch(CHAT)  # the asker's third line
    await asyncio.sleep(0)
    assert (before, fired) == (([], 8), [CHAT])


async def test_the_first_waiting_message_arms_even_if_it_would_not_re_arm() -> None:
    """With nothing waiting yet, a message that would only join a wait starts one."""
    fired: list[ChatKey] = []
    debouncer = debouncer_calling(FAST, fired.append)
    debouncer.touch(CHAT, rearm=False)
    await asyncio.sleep(0.08)
    assert fired == [CHAT]


async def test_the_first_question_in_a_busy_room_gets_a_whole_max_wait() -> None:
    """The room has waited almost max_wait_s when someone asks: with restart_cap the cap
    counts from the question, so the asker's wait is not cut short by the room's."""
    pacing = PacingConfig(debounce_min_s=0.1, debounce_max_s=0.1, max_wait_s=0.15, max_batch=99)
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    debouncer = debouncer_calling(pacing, lambda chat: fired.append(loop.time()))
    debouncer.touch(CHAT)
    await asyncio.sleep(0.05)
    debouncer.touch(CHAT)
    await asyncio.sleep(0.05)  # 100 ms into the room's wait: its cap is 50 ms away
    asked = loop.time()
    debouncer.touch(CHAT, restart_cap=True)
    await asyncio.sleep(0.2)
    assert [ms(at - asked) for at in fired] == [100]


class Ended(Unheard):
    """Events that record each chat whose wait ended, with why and when (loop time)."""

    def __init__(self) -> None:
        self.ended: list[tuple[ChatKey, WaitEnd, float]] = []

    def quiet(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        self.ended.append((chat, ended_by, asyncio.get_running_loop().time()))


async def test_the_answer_bound_ends_a_wait_the_asker_keeps_re_arming() -> None:
    """An @ starts a 120 ms answer bound: lines re-arming the 50 ms wait every 30 ms do not
    hold the answer past it, and the wait says the bound ended it."""
    events = Ended()
    debouncer = Debouncer(FAST.model_copy(update={"max_wait_s": 5.0}))
    debouncer.report_to(events)
    loop = asyncio.get_running_loop()
    asked_at = loop.time()
    debouncer.touch(CHAT, restart_cap=True, answer_within_s=0.12)
    while not events.ended and loop.time() - asked_at < 1.0:
        await asyncio.sleep(0.03)
        debouncer.touch(CHAT)
    debouncer.cancel_all()
    [(chat, ended_by, at)] = events.ended
    assert (chat, ended_by, ms(at - asked_at)) == (CHAT, WaitEnd.ANSWER_BOUND, 120)
