"""Put the core together from the parts the composition root opened.

:func:`build_core` makes the objects of one running bot and hands them to each other:
the gate and the loop watch, the prompter, the answerer, the pipeline, the operations
every face uses, the inbox the platforms deliver to, (with ``[stickers] enabled``) the
sticker collections, (with ``[voice]`` on) the hearing of voice notes and the speaking of
voice items, and (with ``qq.backfill``) the fetching back of what a platform's history
holds and the store misses. It starts nothing: ``adapters/app.py`` opens the parts and
runs the lifecycles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.access import Access, Switches
from bot.addressing import Addressing, Quotes
from bot.answer import Answerer, AnswerStore
from bot.backfill import ActiveChats, Backfill, BackfillSettings
from bot.batches import Batches
from bot.budget import Spending, UsageLog
from bot.commands.runner import CommandRunner
from bot.company import Company
from bot.config.settings import Settings
from bot.context import ChatHistory, Prompter
from bot.conversation import Conversations
from bot.debounce import Debouncer
from bot.gate import CallGate, RoomLog, WordCutter
from bot.inbox import Inbox
from bot.initiative.schedule import Initiative
from bot.initiative.store import InitiativeStore
from bot.initiative.wakeup import LONGEST_WAIT_S
from bot.keeping import Keeper, KeptMessages
from bot.memory.ports import MemoryStore
from bot.memory.stack import Memory
from bot.ops import Ops
from bot.ops.access import AccessOps
from bot.ops.cost import CostOps
from bot.ops.initiative import InitiativeOps
from bot.ops.memory import MemoryOps
from bot.ops.status import StatusOps, StatusStore
from bot.ops.stickers import StickerOps
from bot.ops.tools import ToolOps
from bot.ops.traces import TraceOps
from bot.pipeline import Beside, Pipeline
from bot.ports import LLM, History, PictureSource, Platform
from bot.replies.hooks import HooksByKind, ItemHooks
from bot.replies.items import ItemKind
from bot.retries import Retries
from bot.sender import Outbox, Sender
from bot.stickers import Stickers, StickerSource, StickerStore
from bot.tools.ports import Toolbox
from bot.trace import TraceLog
from bot.voice.hearing import Hearing
from bot.voice.ports import Speech, TranscriptStore, VoiceSource
from bot.voice.speaking import Speaking


class CoreStore(
    KeptMessages,
    Quotes,
    Batches,
    Outbox,
    InitiativeStore,
    MemoryStore,
    ChatHistory,
    AnswerStore,
    ActiveChats,
    StatusStore,
    TraceLog,
    StickerStore,
    TranscriptStore,
    UsageLog,
    RoomLog,
    Switches,
    Protocol,
):
    """Every port the core reads and writes, as one store: the only place they meet."""


@dataclass(frozen=True, slots=True)
class VoiceParts:
    """What voice needs, opened by the composition root when ``[voice]`` is on: the
    speech endpoint, each platform's voice notes, and the format each platform sends."""

    speech: Speech
    sources: Mapping[str, VoiceSource]
    formats: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Core:
    """The running core: the story of a message, where adapters deliver, and what an
    operator sees and does."""

    pipeline: Pipeline
    inbox: Inbox
    ops: Ops
    settings: Settings  # what every room reads; a reload swaps it


def build_core(
    config: Settings,
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
    voice: VoiceParts | None = None,
    history: Mapping[str, tuple[History, BackfillSettings]] | None = None,
    clock_check_s: float = LONGEST_WAIT_S,
    toolbox: Toolbox | None = None,
) -> Core:
    """Make the core's objects and hand them to each other.

    ``history`` names the platforms missed messages are fetched back from; ``toolbox`` holds
    the tools outside the core (with ``[tools] enabled``). ``now`` is the
    core's clock and ``draw`` its random draw (the gate's against ``talk_value``, the
    openers' moments); tests pass their own. Initiative re-reads the wall clock at least
    every ``clock_check_s`` (a machine that slept is noticed; tests that move their clock
    pass a short one).
    """
    stickers = (
        Stickers(config, store, sticker_sources, now=now) if config.stickers.enabled else None
    )
    company = Company(zone=config.bot.zone)
    gate = CallGate(config, store, words, spending=spending, company=company, now=now, draw=draw)
    hearing = speaking = None
    if voice is not None and config.voice.transcribe:
        hearing = Hearing(config, store, voice.speech, voice.sources)
    if voice is not None and config.voice.speak:
        speaking = Speaking(config, voice.speech, voice.formats)
    hooks: dict[ItemKind, ItemHooks] = {}
    if stickers is not None:
        hooks[ItemKind.STICKER] = stickers
    if speaking is not None:
        hooks[ItemKind.VOICE] = speaking
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
        hearing=hearing,
        toolbox=toolbox,
    )
    access = Access(config, store, now=now)
    conversations = Conversations(
        cancel_mode=lambda chat: config.for_chat(chat).pacing.on_new_message == "cancel"
    )
    beside = Beside(
        conversations=conversations,
        addressing=Addressing(config, store, conversations, access),
        keeper=Keeper(store, retries=retries, now=now),
        debouncer=Debouncer(config.pacing),
        sender=Sender(
            store,
            platforms,
            config.pacing,
            bot_name=config.bot.name,
            now=now,
            hooks=HooksByKind(hooks),
            retries=retries,
        ),
        initiative=Initiative(
            config,
            store,
            platforms=platforms.keys(),
            now=now,
            draw=draw,
            clock_check_s=clock_check_s,
        ),
        company=company,
        stickers=stickers,
        hearing=hearing,
    )
    pipeline = Pipeline(config, store, platforms, answerer, beside, traces=store, now=now)
    cost = CostOps(store, spending)
    ops = Ops(
        status=StatusOps(
            config,
            store,
            chats=conversations,
            prompts=prompter,
            platforms=platforms,
            cost=cost,
            gate=gate,
            company=company,
            now=now,
        ),
        memory=MemoryOps(config, memory, store),
        traces=TraceOps(store, keep=config.memory.trace_keep),
        stickers=StickerOps(stickers),
        cost=cost,
        initiative=InitiativeOps(store, now=now),
        access=AccessOps(access),
        tools=ToolOps(config, toolbox),
    )
    commands = CommandRunner(config, ops)
    backfill = None
    if history:
        backfill = Backfill(store, pipeline, history, is_command=commands.is_command, now=now)
    inbox = Inbox(pipeline, commands, platforms, access=access, backfill=backfill)
    return Core(pipeline, inbox, ops, config)
