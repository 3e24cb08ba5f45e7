"""Ingest: a normalised message → committed to SQLite → its chat's timer (re)armed.

Each message goes through ``Pipeline.receive`` of the real core (``running_core``: SQLite
store, pipeline, debouncer), as an adapter hands it over. Two kinds of load:

- **sustained**: an open-loop Poisson stream at 300 and at 1,000 msg/s over 10,000 chats
  (a fifth of them groups). Each message is its own task, as nonebot delivers them, and its
  latency counts from when it was due, so a backlog shows up in the tail.
- **ceiling**: closed loops that send the next message as soon as the last returns, one
  at a time (PTB hands over updates one by one) and 32 at a time.

The debounce wait is a minute, so no batch is answered while the load runs: this is the
cost of taking messages in. After each run the stored rows and armed timers are counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from adapters.app import utc_now
from bench.dataset import chat_keys
from bench.report import Figure, at_least, at_most, spread_figures
from bench.rig import MessageMaker, StallWatch, fresh_path, open_loop
from bench.stats import Spread
from bot.conversation import Phase
from bot.models import ChatKey
from fakes.harness import Harness, harness
from fakes.openai_api import FakeLLMServer

P99_TARGET_MS = 20.0  # docs/targets.md, ingest at the core (Pipeline.receive)
RATE_TARGET = 3000.0
_PACING = {"debounce_min_s": 60.0, "debounce_max_s": 60.0, "max_wait_s": 120.0, "max_batch": 1000}


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int
    rates: tuple[int, ...]  # offered msg/s
    seconds: float  # how long each rate is offered
    warm_up_s: float
    ceiling_s: float
    concurrency: int


FULL = Scale(
    chats=10_000, rates=(300, 1000), seconds=10.0, warm_up_s=1.0, ceiling_s=4.0, concurrency=32
)
QUICK = Scale(
    chats=200, rates=(300, 1000), seconds=0.15, warm_up_s=0.05, ceiling_s=0.1, concurrency=8
)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure sustained ingest latency and the ingest ceiling."""
    scale = QUICK if quick else FULL
    chats = chat_keys(scale.chats)
    figures: list[Figure] = []
    async with (
        FakeLLMServer() as llm,
        harness(fresh_path(workdir, "ingest"), llm, pacing=_PACING) as bot,
    ):
        maker = MessageMaker(random.Random(6), now=utc_now)
        for rate in scale.rates:
            figures += await _sustained(bot, maker, chats, rate=rate, scale=scale)
        figures += await _ceiling(bot, maker, chats, scale=scale)
    return figures


async def _sustained(
    bot: Harness, maker: MessageMaker, chats: list[ChatKey], *, rate: int, scale: Scale
) -> list[Figure]:
    rng = random.Random(rate)
    loop = asyncio.get_running_loop()
    stored_before = _count_messages(bot)
    latencies: list[float] = []
    tasks: set[asyncio.Task[None]] = set()
    sent_chats: set[ChatKey] = set()

    def start(index: int, due: float) -> None:
        chat = rng.choice(chats)
        sent_chats.add(chat)
        task = asyncio.create_task(_timed(bot, maker, chat, due, latencies, measured=index >= warm))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    warm = int(rate * scale.warm_up_s)
    arrivals = _poisson(rng, rate=rate, count=warm + int(rate * scale.seconds), start=loop.time())
    watch = StallWatch()
    async with watch.watching():
        await open_loop(arrivals, start)
        await asyncio.gather(*tasks)
    finished = loop.time()
    armed = sum(bot.ops.status.phase(chat) is Phase.WAITING for chat in sent_chats)
    stored = _count_messages(bot) - stored_before
    measured = arrivals[warm:]
    offered = (len(measured) - 1) / (measured[-1] - measured[0])
    achieved = (len(measured) - 1) / (finished - measured[0])
    name = f"ingest.{rate}/s"
    return [
        *spread_figures(
            f"{name}.latency",
            Spread.of(latencies).scaled(1000),
            "ms",
            p99_target=at_most(P99_TARGET_MS),
            limit_prefix="limits.roundtrip",
        ),
        Figure(f"{name}.offered", offered, "msg/s"),
        Figure(f"{name}.achieved", achieved, "msg/s"),
        Figure(f"{name}.kept_up", achieved / offered, "fraction", target=at_least(0.98)),
        Figure(f"{name}.stored", stored / len(arrivals), "fraction", target=at_least(1.0)),
        Figure(f"{name}.armed", armed / len(sent_chats), "fraction", target=at_least(1.0)),
        Figure(f"{name}.longest_stall", watch.longest_s * 1000, "ms"),
    ]


async def _timed(
    bot: Harness,
    maker: MessageMaker,
    chat: ChatKey,
    due: float,
    latencies: list[float],
    *,
    measured: bool,
) -> None:
    await bot.pipeline.receive_many((maker.message(chat),))
    if measured:
        latencies.append(asyncio.get_running_loop().time() - due)


async def _ceiling(
    bot: Harness, maker: MessageMaker, chats: list[ChatKey], *, scale: Scale
) -> list[Figure]:
    figures = []
    for concurrency in (1, scale.concurrency):
        rate, latencies = await _closed_loop(
            bot,
            maker,
            random.Random(concurrency),
            chats,
            concurrency=concurrency,
            seconds=scale.ceiling_s,
        )
        name = f"ingest.ceiling.{concurrency}_at_once"
        figures += [
            Figure(
                f"{name}.rate",
                rate,
                "msg/s",
                target=at_least(RATE_TARGET),
                limit="limits.commit.rows_per_s",
            ),
            Figure(f"{name}.latency.p99", Spread.of(latencies).p99 * 1000, "ms"),
        ]
    return figures


async def _closed_loop(
    bot: Harness,
    maker: MessageMaker,
    rng: random.Random,
    chats: list[ChatKey],
    *,
    concurrency: int,
    seconds: float,
) -> tuple[float, list[float]]:
    """Keep ``concurrency`` messages in flight for ``seconds``; return msg/s and latencies."""
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []

    async def one_after_another() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await bot.pipeline.receive_many((maker.message(rng.choice(chats)),))
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one_after_another() for _ in range(concurrency)))
    return len(latencies) / (time.perf_counter() - started), latencies


def _poisson(rng: random.Random, *, rate: float, count: int, start: float) -> list[float]:
    arrivals = []
    at = start
    for _ in range(count):
        at += rng.expovariate(rate)
        arrivals.append(at)
    return arrivals


def _count_messages(bot: Harness) -> int:
    with contextlib.closing(sqlite3.connect(bot.config.database_path)) as db:
        (count,) = db.execute("SELECT count(*) FROM messages").fetchone()
    return int(count)
