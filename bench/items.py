"""Reply items: how fast plans of every kind are read and delivered, and what stickers cost.

**Reading.** ``parse_replies`` (then the check of what a chat is offered) on a plan of a
text, a reaction, a sticker, a voice note and a later, many times over: items per second.

**Delivering.** Private chats each get one batch answered with two texts and two
reactions through the real core (``fakes.harness``: the inbox, SQLite, the outbox, the
sender, the openai SDK against the fake server, a recording platform that takes texts and
reactions, unpaced): items delivered per second from the first LLM request to the last
item out, and the LLM calls per batch (exactly one: items cost no call).

**The stickers part.** A collection of 64 stickers with captions as the model writes
them: the tokens the prompt's "stickers you can send" part costs at ``in_prompt`` = 12.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.dataset import chat_keys
from bench.report import Figure, exactly
from bench.rig import fresh_path
from bot.config.model import Config, parse_config
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.prompt import estimate_tokens
from bot.replies.items import ItemKind
from bot.replies.plan import deliverable, parse_replies
from bot.stickers import Stickers
from fakes.harness import harness
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

_PLAN = json.dumps(
    {
        "replies": [
            {"react": "👍", "to": "1", "send_delay_seconds": 0},
            {"content": "哈哈哈哈", "send_delay_seconds": 1},
            {"sticker": "s7", "send_delay_seconds": 2},
            {"voice": "早点睡，明天还要考试呢", "send_delay_seconds": 3},
            {"later": {"at": "2026-11-27 09:00", "note": "提醒交作业", "kind": "remind"}},
        ]
    },
    ensure_ascii=False,
)
_ALL_KINDS = frozenset(ItemKind)
_CAPTIONS = ("猫猫震惊", "狗头", "笑哭", "我太难了", "好耶", "摸鱼", "流汗黄豆", "吃瓜")


@dataclass(frozen=True, slots=True)
class Scale:
    """How many plans are read, and how many chats get a batch delivered."""

    reads: int
    chats: int


FULL = Scale(reads=20_000, chats=200)
QUICK = Scale(reads=500, chats=10)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Read plans, deliver items through the core, and price the stickers part."""
    scale = QUICK if quick else FULL
    return [
        *_reading(scale),
        *await _delivering(scale, workdir),
        *await _stickers_part(workdir),
    ]


def _reading(scale: Scale) -> list[Figure]:
    shown = frozenset({"1"})
    started = time.perf_counter()
    for _ in range(scale.reads):
        plan = parse_replies(_PLAN, finish_reason="stop", max_delay_s=10.0)
        deliverable(plan.replies, kinds=_ALL_KINDS, shown_ids=shown)
    seconds = time.perf_counter() - started
    return [Figure("items.read.rate", scale.reads * 5 / seconds, "items/s")]


async def _delivering(scale: Scale, workdir: Path) -> list[Figure]:
    reply = {
        "replies": [
            {"react": "👍", "to": "1"},
            {"content": "好的", "send_delay_seconds": 0},
            {"react": "🎉", "to": "1"},
            {"content": "那就这么定了", "send_delay_seconds": 0},
        ]
    }
    pacing = {"debounce_min_s": 0.01, "debounce_max_s": 0.01, "max_delay_s": 0.0}
    async with (
        FakeLLMServer(default=json.dumps(reply, ensure_ascii=False)) as llm,
        harness(fresh_path(workdir, "items"), llm, pacing=pacing) as bot,
    ):
        chats = chat_keys(scale.chats, platform=bot.platform.name, group_every=0)
        for chat in chats:
            await bot.inbox.receive_many((_message(chat),))
        await llm.wait_for_requests(1, timeout=30)
        started = asyncio.get_running_loop().time()
        await bot.settle()
        seconds = asyncio.get_running_loop().time() - started
        items = len(bot.platform.sent) + len(bot.platform.reactions)
    return [
        Figure("items.deliver.rate", items / seconds, "items/s"),
        Figure("items.deliver.items", float(items), "items"),
        Figure(
            "items.calls_per_batch", len(llm.requests) / len(chats), "calls", target=exactly(1.0)
        ),
    ]


def _message(chat: ChatKey) -> IncomingMessage:
    return IncomingMessage(chat, "1", "7", "小明", "明天见", datetime.now(UTC), True)


async def _stickers_part(workdir: Path) -> list[Figure]:
    path = fresh_path(workdir, "stickers") / "data" / "pacebot.sqlite3"
    config: Config = parse_config({"stickers": {"enabled": True}}, base_dir=path.parent)
    chat = ChatKey("telegram", ChatKind.GROUP, "-100")
    rng = random.Random(25)
    async with await SqliteStore.open(path) as store:
        for number in range(config.stickers.max_per_chat):
            caption = f"{rng.choice(_CAPTIONS)} {rng.choice(_CAPTIONS)}"
            await store.see_sticker(
                str(chat),
                platform="telegram",
                key=f"us-{number}",
                file_ref=f"sticker-{number}",
                caption=caption,
                chat=chat,
                message_id=str(number),
                keep=config.stickers.max_per_chat,
                now=datetime.now(UTC),
            )
        part = await Stickers(config, store, {}, now=lambda: datetime.now(UTC)).prompt_part(chat)
    return [
        Figure(
            "items.stickers_part.tokens",
            float(estimate_tokens(part)),
            "tokens",
            note=f"in_prompt = {config.stickers.in_prompt}",
        )
    ]
