"""Timers: many chats with live debounce timers, each armed once and reset five times.

For 10,000 and 100,000 chats the real :class:`bot.debounce.Debouncer` is driven by a
schedule: each chat's first message comes at a random moment of the arming period, then
five more, each before the chat's wait has run out, so every message resets a live timer.
When a chat's timer fires, its lateness is the loop time minus the deadline the debouncer
set (known from the random draw it used). The same schedule is then replayed on bare
``loop.call_at`` handles: the loop's own lateness under that load, the limit.

Memory is measured first, in the fresh process: ``tracemalloc`` and RSS before and after
arming every chat (each chat key made new, as adapters make one per message), and what is
left once every timer has fired (an idle chat should cost nothing). Each waiting chat
costs what it costs in the pipeline: its debounce timer and its
:class:`~bot.conversation.Conversation`, made and forgotten as ``Pipeline`` does.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.machine import rss_bytes
from bench.report import Figure, at_most, spread_figures
from bench.stats import Spread
from bot.config.model import PacingConfig
from bot.conversation import Conversation
from bot.models import ChatKey, ChatKind
from fakes.events import debouncer_calling

LATENESS_P99_TARGET_MS = 10.0
LATENESS_MAX_TARGET_MS = 100.0
ARMED_MEMORY_TARGET_B = 1024.0
_TARGET_CHATS = 100_000  # docs/targets.md: lateness bounds hold with 100,000 live timers
_RESETS = 5


@dataclass(frozen=True, slots=True)
class Load:
    chats: int
    arm_s: float  # first messages spread over this long
    gap_s: tuple[float, float]  # between two messages of a chat; below the shortest wait
    wait_s: tuple[float, float]  # debounce_min_s, debounce_max_s


FULL = (
    Load(10_000, arm_s=2.0, gap_s=(0.2, 1.0), wait_s=(1.5, 3.0)),
    Load(100_000, arm_s=3.0, gap_s=(0.6, 2.8), wait_s=(3.0, 6.0)),
)
QUICK = (Load(500, arm_s=0.05, gap_s=(0.01, 0.03), wait_s=(0.04, 0.06)),)


class _Draws(random.Random):
    """A random source that remembers its last draw, so a deadline can be recomputed."""

    last = 0.0

    def random(self) -> float:
        self.last = super().random()
        return self.last


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure timer memory and lateness at each load."""
    figures: list[Figure] = []
    for load in QUICK if quick else FULL:
        figures += await _memory(load)
    for load in QUICK if quick else FULL:
        figures += await _lateness(load)
    return figures


def _keys(count: int) -> Iterator[ChatKey]:
    for index in range(count):
        yield ChatKey("telegram", ChatKind.PRIVATE, str(100_000_000 + index))


def _pacing(load: Load) -> PacingConfig:
    low, high = load.wait_s
    return PacingConfig(
        debounce_min_s=low, debounce_max_s=high, max_wait_s=1e6, max_batch=_RESETS + 10
    )


class _WaitingChats:
    """Per-chat state of waiting chats as the pipeline keeps it: a timer and a conversation."""

    def __init__(self, pacing: PacingConfig) -> None:
        self.conversations: dict[ChatKey, Conversation] = {}
        self.debouncer = debouncer_calling(pacing, self._on_quiet)

    def touch(self, chat: ChatKey) -> None:
        conversation = self.conversations.get(chat)
        if conversation is None:
            conversation = self.conversations[chat] = Conversation(cancel_mode=True)
        conversation.more_waiting()
        self.debouncer.touch(chat)

    def fire_all(self) -> None:
        self.debouncer.fire_all()

    def _on_quiet(self, chat: ChatKey) -> None:
        conversation = self.conversations[chat]
        conversation.timer_fired()
        conversation.answer_ended()  # answered at once: the chat is idle again
        del self.conversations[chat]


async def _memory(load: Load) -> list[Figure]:
    """Bytes per chat: armed (tracemalloc, RSS), idle after firing, and bare handles."""
    name = f"timers.{load.chats}"
    hour = {"debounce_min_s": 3600.0, "debounce_max_s": 3600.0}  # nothing fires meanwhile
    debouncer = _WaitingChats(_pacing(load).model_copy(update=hour))

    # RSS first, with tracemalloc off: its own bookkeeping would count too.
    gc.collect()
    rss_before = rss_bytes()
    for chat in _keys(load.chats):
        debouncer.touch(chat)
    rss_armed = rss_bytes() - rss_before
    debouncer.fire_all()
    await asyncio.sleep(0)

    gc.collect()
    tracemalloc.start()
    before = _traced()
    for chat in _keys(load.chats):
        debouncer.touch(chat)
    armed = _traced() - before
    debouncer.fire_all()
    await asyncio.sleep(0)  # the loop drops the cancelled handles (and their chat keys)
    idle = _traced() - before
    tracemalloc.stop()

    tracemalloc.start()
    before = _traced()
    bare = _bare_handles(load.chats)
    bare_bytes = _traced() - before
    tracemalloc.stop()
    for handle in bare.values():
        handle.cancel()
    per_chat = float(load.chats)
    return [
        Figure(
            f"{name}.memory.armed",
            armed / per_chat,
            "B/chat",
            target=at_most(ARMED_MEMORY_TARGET_B),
            limit=f"{name}.memory.bare",
            note="tracemalloc: key + timer state + handle + conversation",
        ),
        Figure(f"{name}.memory.armed_rss", rss_armed / per_chat, "B/chat", note="RSS delta"),
        Figure(f"{name}.memory.idle", idle / per_chat, "B/chat", note="left after firing"),
        Figure(
            f"{name}.memory.bare",
            bare_bytes / per_chat,
            "B/chat",
            note="key + dict slot + call_at handle",
        ),
    ]


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def _bare_handles(count: int) -> dict[ChatKey, asyncio.TimerHandle]:
    loop = asyncio.get_running_loop()
    return {chat: loop.call_at(loop.time() + 3600, _nothing) for chat in _keys(count)}


def _nothing() -> None:
    pass


def _schedule(load: Load, rng: random.Random) -> list[tuple[float, int]]:
    """Return (offset in seconds, chat index) of every message, in time order."""
    events = []
    for index in range(load.chats):
        at = rng.uniform(0, load.arm_s)
        events.append((at, index))
        for _ in range(_RESETS):
            at += rng.uniform(*load.gap_s)
            events.append((at, index))
    events.sort()
    return events


async def _lateness(load: Load) -> list[Figure]:
    name = f"timers.{load.chats}"
    schedule = _schedule(load, random.Random(load.chats))
    chats = list(_keys(load.chats))
    debounced = await _replay(load, schedule, chats, bare=False)
    bare = await _replay(load, schedule, chats, bare=True)
    at_target = load.chats == _TARGET_CHATS
    return [
        *spread_figures(
            f"{name}.lateness",
            debounced.scaled(1000),
            "ms",
            p99_target=at_most(LATENESS_P99_TARGET_MS) if at_target else None,
            max_target=at_most(LATENESS_MAX_TARGET_MS) if at_target else None,
            limit_prefix=f"{name}.bare_lateness",
        ),
        *spread_figures(f"{name}.bare_lateness", bare.scaled(1000), "ms"),
        Figure(
            f"{name}.messages_per_s",
            len(schedule) / schedule[-1][0],
            "msg/s",
            note="touches offered while the timers run",
        ),
    ]


async def _replay(
    load: Load, schedule: list[tuple[float, int]], chats: list[ChatKey], *, bare: bool
) -> Spread:
    """Play the schedule on the debouncer (or bare handles); return the lateness spread."""
    loop = asyncio.get_running_loop()
    pacing = _pacing(load)
    span = pacing.debounce_max_s - pacing.debounce_min_s
    draws = _Draws(load.chats)
    deadlines = [0.0] * load.chats
    index_of = {chat: index for index, chat in enumerate(chats)}
    lateness: list[float] = []
    done = asyncio.Event()

    def on_quiet(chat: ChatKey) -> None:
        lateness.append(loop.time() - deadlines[index_of[chat]])
        if len(lateness) == load.chats:
            done.set()

    debouncer = debouncer_calling(pacing, on_quiet, rng=draws)
    handles: dict[ChatKey, asyncio.TimerHandle] = {}

    def touch_bare(chat: ChatKey, deadline: float) -> None:
        old = handles.get(chat)
        if old is not None:
            old.cancel()
        handles[chat] = loop.call_at(deadline, on_quiet, chat)

    touch: Callable[[ChatKey], None] = debouncer.touch
    start = loop.time() + 0.05
    position = 0
    while position < len(schedule):
        now = loop.time()
        while position < len(schedule) and start + schedule[position][0] <= now:
            index = schedule[position][1]
            chat = chats[index]
            at = loop.time()
            if bare:
                deadline = at + pacing.debounce_min_s + draws.random() * span
                touch_bare(chat, deadline)
            else:
                touch(chat)
                deadline = at + pacing.debounce_min_s + draws.last * span
            deadlines[index] = deadline
            position += 1
        await asyncio.sleep(0.001)
    await asyncio.wait_for(done.wait(), timeout=pacing.debounce_max_s + 30)
    return Spread.of(lateness)
