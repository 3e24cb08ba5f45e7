"""The group gate over the real wires: nonebot2 fed by a OneBot client over the reverse
WebSocket, and PTB polling the fake Bot API in a forum whose override covers its topics."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.app import Core, running_bot
from bot.models import ChatKey, ChatKind
from bot.secrets import Secrets
from bot.trace import Trace
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, free_port, make_config, qq_bot, replies_json, telegram_config
from fakes.openai_api import FakeLLMServer

SELF_ID, QQ_GROUP, ALICE, BOB = 10001, 500, 42, 43
FORUM = -100900


async def trace_of(core: Core, chat: ChatKey, message_id: str) -> Trace:
    """Wait for the trace of the batch that holds ``message_id``."""
    async with asyncio.timeout(10):
        while True:
            for shown in await core.ops.traces.recent(chat, count=20):
                if message_id in shown.trace.message_ids:
                    return shown.trace
            await asyncio.sleep(0.02)


async def test_on_qq_only_a_batch_with_a_reason_costs_a_call(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Over nonebot's WebSocket: chatter stays out at no cost; a message naming an interest
    is answered in the group with one call."""
    groups: dict[str, Any] = {"reply_mode": "smart", "interests": ["原神"], "talk_value": 1.0}
    qq = {"enabled": True, "port": free_port()}
    config = make_config(tmp_path, llm.base_url, qq=qq, groups=groups)
    chat = ChatKey("qq", ChatKind.GROUP, str(QQ_GROUP))
    llm.reply_json(replies_json("我也在玩"))
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
        chatter = await onebot.send_group_message(QQ_GROUP, BOB, "今天好热", card="阿强")
        stayed_out = await trace_of(core, chat, str(chatter))
        calls_after_chatter = len(llm.requests)
        interest = await onebot.send_group_message(QQ_GROUP, ALICE, "原神又更新了", card="小明")
        [sent] = await onebot.wait_for_call("send_group_msg", within_s=5)
        answered = await trace_of(core, chat, str(interest))
    assert (stayed_out.why, stayed_out.gate, calls_after_chatter) == (
        "stayed out",
        ("no reason",),
        0,
    )
    assert (answered.why, answered.gate[0], len(llm.requests)) == ("answered", "interest: 原神", 1)
    assert sent.params["group_id"] == QQ_GROUP


def topic_key(thread: int) -> ChatKey:
    return ChatKey("telegram", ChatKind.GROUP, str(FORUM), str(thread))


def say(api: FakeBotAPI, text: str, *, user: int, topic: int) -> str:
    """Post ``text`` into a topic of the forum; return its message id."""
    return str(api.push_message(FORUM, text, user_id=user, chat_type="supergroup", topic=topic))


async def test_a_forums_override_covers_its_topics_and_shares_one_budget(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Over PTB polling: a forum's override (smart, an interest, one unaddressed call an
    hour) answers in one topic, in its thread; the same interest in another topic finds the
    group's unaddressed calls of the hour spent."""
    override = {
        "chat": f"telegram:group:{FORUM}",
        "reply_mode": "smart",
        "interests": ["猫"],
        "talk_value": 1.0,
        "unaddressed_calls_per_hour": 1,
    }
    config = telegram_config(tmp_path, llm, api, groups={"override": [override]})
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    cats, chatter = api.open_topic(FORUM, "猫"), api.open_topic(FORUM, "闲聊")
    llm.reply_json(replies_json("好可爱"))
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        in_cats = say(api, "我的猫会开门", user=1001, topic=cats)
        await api.wait_for(lambda: api.sent_messages(FORUM), timeout=5)
        first = await trace_of(core, topic_key(cats), in_cats)
        in_chatter = say(api, "我的猫也会", user=1002, topic=chatter)
        second = await trace_of(core, topic_key(chatter), in_chatter)
        await core.inbox.drain()
    [sent] = api.sent_messages(FORUM)
    assert (first.why, first.gate[0]) == ("answered", "interest: 猫")
    assert sent.get("message_thread_id") == cats
    assert second.gate == ("interest: 猫", "the hour's unaddressed calls are spent")
    assert len(llm.requests) == 1
