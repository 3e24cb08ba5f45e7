"""A busy group over the real wires: the one who asked is answered once they have finished,
whoever else is talking (Telegram through PTB polling, QQ through nonebot's WebSocket)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.app import Core, running_bot
from bot.models import ChatKey, ChatKind
from bot.secrets import Secrets
from bot.texts import Texts
from bot.trace import format_trace
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, free_port, make_config, qq_bot, replies_json, telegram_config
from fakes.onebot import at, text
from fakes.openai_api import FakeLLMServer

QUIET_S = 0.3  # debounce_min_s = debounce_max_s
CHATTER_EVERY_S = 0.05
SLACK_S = 0.6  # polling, the LLM request, a busy CI machine
BUSY = {"debounce_min_s": QUIET_S, "debounce_max_s": QUIET_S, "max_wait_s": 5.0}
TG_GROUP, QQ_GROUP, SELF_ID = -100500, 500, 10001
ALICE, BOB = 42, 43
UTC_ZONE = ZoneInfo("UTC")

Say = Callable[[int, str, bool], Awaitable[str]]
"""Post (sender, text, whether it @-mentions the bot) to the group; return its id."""


async def chatter_until_asked(llm: FakeLLMServer, say: Say) -> list[str]:
    """Let Bob chat every 50 ms until the LLM is asked; return the ids of his messages."""
    asked = asyncio.create_task(llm.wait_for_requests(1, timeout=8.0))
    bob: list[str] = []
    while not asked.done():
        bob.append(await say(BOB, f"闲聊 {len(bob)}", False))
        await asyncio.wait({asked}, timeout=CHATTER_EVERY_S)
    await asked
    return bob


async def answered_amid_chatter(core: Core, llm: FakeLLMServer, say: Say, chat: ChatKey) -> None:
    """Alice asks, Bob keeps chatting, Alice adds a line 150 ms later: the LLM is asked a
    quiet wait after Alice's last line, not when the room falls silent; the batch holds
    Bob's words as context, and its trace says who re-armed the wait."""
    llm.reply_json(replies_json("在的"))
    before = await say(BOB, "今天好热", False)
    question = await say(ALICE, "周六去哪？", True)
    await asyncio.sleep(0.15)
    follow_up = await say(ALICE, "我想去爬山", False)
    followed_at = datetime.now(UTC)
    bob = await chatter_until_asked(llm, say)
    await core.inbox.drain()
    traces = await core.ops.traces.recent(chat, count=10)
    [shown] = [shown for shown in traces if question in shown.trace.message_ids]
    trace = shown.trace

    waited_s = (trace.at - followed_at).total_seconds()  # the batch is taken: trace.at
    assert QUIET_S - 0.02 <= waited_s < QUIET_S + SLACK_S, waited_s
    assert bob, "Bob chatted meanwhile"
    new = str(llm.requests[0]["messages"][-1]["content"]).split("New messages")[1]
    assert ("周六去哪？" in new, "我想去爬山" in new, "闲聊 0" in new) == (True, True, True)
    context = [i for i in trace.message_ids if i not in trace.rearmed_by]
    assert trace.rearmed_by == (before, question, follow_up)
    assert (context, len(context) >= 1) == ([i for i in bob if i in trace.message_ids], True)
    shown_lines = format_trace(shown, zone=UTC_ZONE, say=Texts("en")).splitlines()
    assert shown_lines[2] == (
        f"re-armed the wait: {before}, {question}, {follow_up}; "
        f"joined as context: {', '.join(context)}"
    )


async def test_telegram_answers_the_asker_amid_chatter(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On Telegram, an @ amid constant chatter is answered a quiet wait after the asker's
    last message; the asker's own follow-up re-armed the wait, the chatter did not."""
    config = telegram_config(tmp_path, llm, api, pacing=BUSY)
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)

    async def say(user: int, words: str, mention: bool) -> str:
        body = f"@{api.bot_username} {words}" if mention else words
        message_id = api.push_message(
            TG_GROUP, body, user_id=user, first_name=str(user), chat_type="supergroup"
        )
        return str(message_id)

    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        await answered_amid_chatter(core, llm, say, ChatKey("telegram", ChatKind.GROUP, "-100500"))


async def test_qq_answers_the_asker_amid_chatter(tmp_path: Path, llm: FakeLLMServer) -> None:
    """On QQ, an @ amid constant chatter is answered a quiet wait after the asker's last
    message; the asker's own follow-up re-armed the wait, the chatter did not."""
    qq: dict[str, Any] = {"enabled": True, "port": free_port()}
    config = make_config(tmp_path, llm.base_url, qq=qq, pacing=BUSY)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):

        async def say(user: int, words: str, mention: bool) -> str:
            segments = [at(SELF_ID), text(f" {words}")] if mention else [text(words)]
            message_id = await onebot.send_group_message(QQ_GROUP, user, segments)
            return str(message_id)

        await answered_amid_chatter(core, llm, say, ChatKey("qq", ChatKind.GROUP, "500"))
