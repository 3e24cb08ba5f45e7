"""Sender: how much later than intended a reply reaches the Bot API, at 30 sends/s offered.

Answered batches arrive as a Poisson stream over hundreds of chats (a few of them
groups); each holds 1–3 replies with 1–4 s between them, 30 replies/s in all. Each batch
is closed in the real SQLite store and handed to the real :class:`bot.sender.Sender`,
which posts through the real :class:`adapters.telegram.platform.TelegramPlatform` (PTB)
to the fake Bot API; the fake notes when each ``sendMessage`` arrives.

Telegram allows ≤ 25 messages/s overall and ≤ 1/s per chat, so at 30/s offered a queue
builds on purpose. What is intended is therefore not the due time alone but the pacing
slot an ideal sender would get: the same :class:`bot.pacing.Pacer` replayed over the due
times, each chat's next reply taken once its previous one is out and its planned pause
after it has passed (a reply held back moves the next one later by as much). Then

- ``pacing`` = intended slot − due time: delay chosen on purpose;
- ``overhead`` = arrival at the Bot API − max(due time, intended slot): the cost.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from adapters.app import freeze_startup_heap
from adapters.telegram.platform import TelegramPlatform
from bench.dataset import chat_keys
from bench.report import Figure, at_most, spread_figures
from bench.rig import LoopClock, fresh_path, open_loop
from bench.stats import Spread
from bot.config.model import PacingConfig
from bot.models import BatchOutcome, ChatKey, IncomingMessage
from bot.pacing import Pacer
from bot.ports import PacingLimits
from bot.replies.items import PlannedReply, Text
from bot.sender import Sender
from fakes.bot_api import FakeBotAPI
from storage.sqlite import SqliteStore

OVERHEAD_P99_TARGET_MS = 50.0
_REPLIES = (1, 1, 1, 2, 2, 3)  # replies per batch: 1.67 on average


@dataclass(frozen=True, slots=True)
class Scale:
    sends_per_s: float
    seconds: float
    delay_s: tuple[float, float]  # send_delay_seconds between two replies of a batch
    chats: int
    direct_sends: int  # sequential PTB sends measured first: the floor


FULL = Scale(sends_per_s=30.0, seconds=20.0, delay_s=(1.0, 4.0), chats=600, direct_sends=200)
QUICK = Scale(sends_per_s=30.0, seconds=0.3, delay_s=(0.05, 0.2), chats=40, direct_sends=10)


class _TimedBotAPI(FakeBotAPI):
    """The fake Bot API, noting the loop time each ``sendMessage`` arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: dict[str, float] = {}

    async def _send_message(self, params: dict[str, Any]) -> Any:
        self.arrived[str(params.get("text"))] = asyncio.get_running_loop().time()
        return await super()._send_message(params)


class _NoUpdates:
    """A message sink for a bot that only sends."""

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        pass

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        pass

    def platform_ready(self, platform: str) -> None:
        pass


@dataclass(frozen=True, slots=True)
class _Planned:
    chat: ChatKey
    delays_s: tuple[float, ...]  # after the first reply, each from the previous one


@dataclass(frozen=True, slots=True)
class _Sent:
    chat: ChatKey
    text: str
    due: float  # loop time


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure the sender's extra delay beyond pacing at 30 sends/s."""
    scale = QUICK if quick else FULL
    rng = random.Random(30)
    async with _TimedBotAPI() as api:
        platform = TelegramPlatform(
            token=api.token, api_base_url=api.base_url, bot_name="小满", poll_timeout_s=1.0
        )
        await platform.start(_NoUpdates())
        try:
            async with asyncio.timeout(10):
                await platform.wait_ready()
            direct = await _direct_sends(platform, scale.direct_sends)
            store = await SqliteStore.open(fresh_path(workdir, "sender.sqlite3"))
            freeze_startup_heap()  # as ``running_core`` does
            try:
                sent, offered = await _offer(store, platform, api, rng, scale)
            finally:
                await store.close()
        finally:
            await platform.stop()
    intended = _ideal_slots(sent, platform.limits)
    arrived = [api.arrived.get(item.text) for item in sent]
    overhead = [
        a - max(item.due, slot)
        for item, slot, a in zip(sent, intended, arrived, strict=True)
        if a is not None
    ]
    pacing = [slot - item.due for item, slot in zip(sent, intended, strict=True)]
    return [
        *spread_figures(
            "sender.overhead",
            Spread.of(overhead).scaled(1000),
            "ms",
            p99_target=at_most(OVERHEAD_P99_TARGET_MS),
            limit_prefix="sender.direct_send",
        ),
        *spread_figures("sender.pacing", Spread.of(pacing).scaled(1000), "ms"),
        *spread_figures("sender.direct_send", direct.scaled(1000), "ms"),
        Figure("sender.offered", offered, "sends/s", note="replies queued per second"),
        Figure(
            "sender.busiest_second",
            _busiest_second([a for a in arrived if a is not None]),
            "sends",
            note="most sendMessage calls in any 1 s",
        ),
        Figure("sender.delivered", sum(a is not None for a in arrived) / len(sent), "fraction"),
        Figure("sender.typing_calls", len(api.calls_to("sendChatAction")) / len(sent), "per send"),
    ]


async def _direct_sends(platform: TelegramPlatform, count: int) -> Spread:
    """Time sequential sends straight through PTB: the floor under any sender."""
    chat = chat_keys(1)[0]
    samples = []
    for number in range(count):
        started = time.perf_counter()
        await platform.send(chat, Text(f"direct {number}"))
        samples.append(time.perf_counter() - started)
    return Spread.of(samples[min(5, count // 2) :])


async def _offer(
    store: SqliteStore,
    platform: TelegramPlatform,
    api: _TimedBotAPI,
    rng: random.Random,
    scale: Scale,
) -> tuple[list[_Sent], float]:
    """Queue batches at the offered rate; return every reply with its due loop time."""
    loop = asyncio.get_running_loop()
    clock = LoopClock()
    chats = chat_keys(scale.chats, group_every=20)
    mean_replies = sum(_REPLIES) / len(_REPLIES)
    count = max(1, round(scale.sends_per_s / mean_replies * scale.seconds))
    rng.shuffle(chats)
    # One answer at a time per chat, as the pipeline does: chats take turns.
    plans = [
        _Planned(chats[number % len(chats)], _delays(rng, scale.delay_s)) for number in range(count)
    ]
    batches = await _open_batches(store, plans, clock)
    sender = Sender(
        store, {platform.name: platform}, PacingConfig(), bot_name="小满", now=clock.now
    )
    sent: list[_Sent] = []
    closing: set[asyncio.Task[None]] = set()
    numbers = itertools.count()

    async def answer(index: int) -> None:
        plan = plans[index]
        due = clock.now()
        replies = []
        for position, delay in enumerate((0.0, *plan.delays_s)):
            due += timedelta(seconds=delay)
            text = f"#{next(numbers)} 好的呀，我也这么想 ({position + 1})"
            replies.append(PlannedReply(Text(text), due))
            sent.append(_Sent(plan.chat, text, clock.loop_time(due)))
        await store.close_batch(
            batches[index], BatchOutcome.ANSWERED, now=clock.now(), replies=replies
        )
        sender.wake(plan.chat)

    def start(index: int, due: float) -> None:
        task = asyncio.create_task(answer(index))
        closing.add(task)
        task.add_done_callback(closing.discard)

    arrivals = []
    at = loop.time() + 0.1
    for _ in plans:
        at += rng.expovariate(scale.sends_per_s / mean_replies)
        arrivals.append(at)
    first = arrivals[0]
    await open_loop(arrivals, start)
    await asyncio.gather(*closing)
    offered = len(sent) / max(arrivals[-1] - first, 1e-9)
    async with asyncio.timeout(scale.seconds + 60):
        await sender.drain()
    await sender.stop()
    return sent, offered


def _delays(rng: random.Random, delay_s: tuple[float, float]) -> tuple[float, ...]:
    return tuple(rng.uniform(*delay_s) for _ in range(rng.choice(_REPLIES) - 1))


async def _open_batches(
    store: SqliteStore, plans: Sequence[_Planned], clock: LoopClock
) -> list[int]:
    """Store one message per batch and open the batches, before the clock starts."""
    batch_ids = []
    for number, plan in enumerate(plans):
        message = IncomingMessage(
            chat=plan.chat,
            message_id=f"m{number}",
            sender_id="7",
            sender_name="小明",
            text="你觉得呢？",
            sent_at=clock.now(),
            addresses_bot=True,
        )
        await store.add_message(message, received_at=clock.now())
        batch = await store.open_batch(plan.chat, limit=30, now=clock.now())
        if batch is None:
            msg = f"no waiting message for batch {number}"
            raise RuntimeError(msg)
        batch_ids.append(batch.id)
    return batch_ids


def _busiest_second(arrivals: list[float]) -> float:
    """Return the most arrivals within any one-second window."""
    arrivals.sort()
    busiest, first = 0, 0
    for last, at in enumerate(arrivals):
        while at - arrivals[first] >= 1.0:
            first += 1
        busiest = max(busiest, last - first + 1)
    return float(busiest)


def _ideal_slots(sent: Sequence[_Sent], limits: PacingLimits) -> list[float]:
    """Replay pacing over the due times: when an ideal sender would post each reply."""
    by_chat: dict[ChatKey, list[int]] = {}
    for index, item in enumerate(sent):
        by_chat.setdefault(item.chat, []).append(index)
    for indexes in by_chat.values():
        indexes.sort(key=lambda index: (sent[index].due, index))
    now = 0.0
    pacer = Pacer(limits, clock=lambda: now)
    ready = [(sent[indexes[0]].due, indexes[0], chat, 0) for chat, indexes in by_chat.items()]
    heapq.heapify(ready)
    slots = [0.0] * len(sent)
    while ready:
        now, index, chat, position = heapq.heappop(ready)
        slot = pacer.reserve(chat)
        slots[index] = slot
        following = by_chat[chat]
        if position + 1 < len(following):
            after = following[position + 1]
            paused = slot + (sent[after].due - sent[index].due)  # the planned pause kept
            heapq.heappush(ready, (max(sent[after].due, paused), after, chat, position + 1))
    return slots
