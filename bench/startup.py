"""Start-up after a restart: 10,000 chats hold messages that no batch has taken yet.

A database with 10,000 chats, each with two waiting messages and twenty answered ones,
is built once per invocation and copied for each run. A run then starts the core as
``running_core`` does (open and migrate the store, warm jieba up, freeze the start-up
heap, build the pipeline, ``Pipeline.recover``) while a ticker measures the event loop's
stalls. The figures: the time to re-arm every chat, the longest stall while re-arming
(docs/targets.md: none over 50 ms) and while opening the store (before any platform takes updates),
and the memory each re-armed chat holds in the pipeline (``tracemalloc``, in a second
pass).
"""

from __future__ import annotations

import asyncio
import gc
import random
import shutil
import time
import tracemalloc
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from adapters.app import freeze_startup_heap, utc_now
from adapters.wiring import Core, build_core
from bench.dataset import ChatHistory, build, chat_keys
from bench.report import Figure, at_least, at_most
from bench.rig import NoLLM, StallWatch, fresh_path
from bot.budget import Spending
from bot.config.model import Config, parse_config
from bot.config.settings import Settings
from bot.memory.stack import Memory
from bot.ports import Platform
from bot.retries import DEFAULT_RETRIES
from fakes.harness import RecordingPlatform
from storage.sqlite import SqliteStore
from storage.words import RecallWords

STALL_TARGET_MS = 50.0


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int
    waiting: int  # per chat
    answered: int  # per chat


FULL = Scale(chats=10_000, waiting=2, answered=20)
QUICK = Scale(chats=200, waiting=2, answered=5)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure re-arming at start-up: time, loop stalls, memory per chat."""
    scale = QUICK if quick else FULL
    pristine = workdir / f"startup-{scale.chats}.sqlite3"
    figures = []
    if not pristine.exists():
        histories = [
            ChatHistory(chat, days=1, messages=scale.answered, waiting=scale.waiting)
            for chat in chat_keys(scale.chats)
        ]
        built = await build(pristine, histories, now=datetime.now(UTC))
        figures.append(Figure("startup.build.seconds", built.seconds, "s"))
    path = fresh_path(workdir, "startup-run.sqlite3")
    await asyncio.to_thread(shutil.copyfile, pristine, path)
    config = parse_config({}, base_dir=workdir)

    watch = StallWatch()
    async with watch.watching():
        await asyncio.sleep(0.01)  # let the ticker start
        watch.reset()
        started = time.perf_counter()
        store = await SqliteStore.open(path)
        opened = time.perf_counter()
        await asyncio.sleep(0.01)  # the ticker notes a stall on its next turn
        open_stall = watch.longest_s
        try:
            core = _core(config, store)
            pipeline = core.pipeline
            freezing = time.perf_counter()
            freeze_startup_heap()  # as ``running_core`` does, once the core is wired
            freeze_s = time.perf_counter() - freezing
            await asyncio.sleep(0.01)  # let the ticker see that pause before counting afresh
            watch.reset()
            recovering = time.perf_counter()
            await pipeline.recover()
            rearm_s = time.perf_counter() - recovering
            await asyncio.sleep(0.01)  # the ticker notes the last slice's stall on its next turn
            recover_stall = watch.longest_s
            armed = len(core.ops.status.live_chats())
            await pipeline.stop()
            memory = await _memory_per_chat(config, store, scale.chats)
        finally:
            await store.close()
    return [
        *figures,
        Figure("startup.rearm.seconds", rearm_s, "s"),
        Figure("startup.rearm.chats_per_s", armed / rearm_s, "chats/s"),
        Figure(
            "startup.rearm.longest_stall",
            recover_stall * 1000,
            "ms",
            target=at_most(STALL_TARGET_MS),
        ),
        Figure("startup.rearmed", armed / scale.chats, "fraction", target=at_least(1.0)),
        Figure("startup.open.seconds", opened - started, "s", note="open, migrate, warm jieba"),
        Figure("startup.open.longest_stall", open_stall * 1000, "ms", note="before platforms"),
        Figure("startup.freeze.seconds", freeze_s, "s", note="gc.collect + gc.freeze, once"),
        Figure("startup.memory.armed", memory, "B/chat", note="pipeline, tracemalloc"),
    ]


def _core(config: Config, store: SqliteStore) -> Core:
    """Wire the core the way ``running_core`` does, with a platform that records."""
    llm = NoLLM()
    settings = Settings(config, persona="你是小满。")
    memory = Memory(settings, store, llm, now=utc_now)
    platforms: dict[str, Platform] = {"telegram": RecordingPlatform(name="telegram")}
    core = build_core(
        settings,
        store,
        memory,
        platforms,
        llm=llm,
        splitter=llm,
        pictures={},
        sticker_sources={},
        spending=Spending(settings, store, now=utc_now),
        words=RecallWords(),
        now=utc_now,
        draw=random.random,
        retries=DEFAULT_RETRIES,
    )
    return core


async def _memory_per_chat(config: Config, store: SqliteStore, chats: int) -> float:
    """Re-arm again in a fresh pipeline under tracemalloc; return bytes per armed chat."""
    pipeline = _core(config, store).pipeline
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await pipeline.recover()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    await pipeline.stop()
    return (after - before) / chats
