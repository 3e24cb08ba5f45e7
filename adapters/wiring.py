"""Put the core together from the parts the composition root opened.

:func:`build_core` makes the objects of one running bot and hands them to each other:
the gate and the loop watch, the prompter, the answerer, the pipeline, the operations
every face uses, the inbox the platforms deliver to, and (with ``[stickers] enabled``) the
sticker collections. It starts nothing: ``adapters/app.py`` opens the parts and runs the
lifecycles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.answer import Answerer
from bot.budget import Spending, UsageLog
from bot.commands.runner import CommandRunner
from bot.config import Config
from bot.context import Prompter
from bot.gate import CallGate, RoomLog, WordCutter
from bot.inbox import Inbox
from bot.loops import LoopWatch
from bot.memory.stack import Memory
from bot.ops import Ops
from bot.ops.cost import CostOps
from bot.ops.memory import MemoryOps
from bot.ops.status import StatusOps, StatusStore
from bot.ops.stickers import StickerOps
from bot.ops.traces import TraceOps
from bot.pipeline import Pipeline
from bot.ports import LLM, PictureSource, Platform, Store, TraceLog
from bot.retries import Retries
from bot.stickers import Stickers, StickerSource, StickerStore


class CoreStore(Store, StatusStore, TraceLog, StickerStore, UsageLog, RoomLog, Protocol):
    """Every port the core reads and writes, as one store."""


@dataclass(frozen=True, slots=True)
class Core:
    """The running core: the story of a message, where adapters deliver, and what an
    operator sees and does."""

    pipeline: Pipeline
    inbox: Inbox
    ops: Ops


def build_core(
    config: Config,
    store: CoreStore,
    memory: Memory,
    platforms: Mapping[str, Platform],
    *,
    llm: LLM,
    splitter: LLM,
    pictures: Mapping[str, PictureSource],
    sticker_sources: Mapping[str, StickerSource],
    spending: Spending,
    words: WordCutter,
    now: Callable[[], datetime],
    draw: Callable[[], float],
    retries: Retries,
) -> Core:
    """Make the core's objects and hand them to each other.

    ``now`` is the wall clock and ``draw`` the gate's random draw against ``talk_value``;
    tests pass their own.
    """
    stickers = (
        Stickers(config, store, sticker_sources, now=now) if config.stickers.enabled else None
    )
    loops = LoopWatch(now=now, zone=config.bot.zone)
    gate = CallGate(config, store, words, spending=spending, loops=loops, now=now, draw=draw)
    prompter = Prompter(config, store, memory, platforms, now=now, stickers=stickers)
    answerer = Answerer(
        config,
        store,
        llm,
        splitter=splitter,
        memory=memory,
        prompter=prompter,
        gate=gate,
        spending=spending,
        now=now,
        pictures=pictures,
        stickers=stickers,
    )
    pipeline = Pipeline(
        config,
        store,
        platforms,
        answerer,
        traces=store,
        now=now,
        loops=loops,
        retries=retries,
        stickers=stickers,
    )
    cost = CostOps(config.budget, store, spending)
    ops = Ops(
        status=StatusOps(
            config,
            store,
            chats=pipeline,
            prompts=prompter,
            platforms=platforms,
            cost=cost,
            gate=gate,
            loops=loops,
            now=now,
        ),
        memory=MemoryOps(config, memory, store),
        traces=TraceOps(store, keep=config.memory.trace_keep),
        stickers=StickerOps(stickers),
        cost=cost,
    )
    return Core(pipeline, Inbox(pipeline, CommandRunner(config, ops), platforms), ops)
