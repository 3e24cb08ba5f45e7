"""Reactions over the real wires: PTB's setMessageReaction, OneBot's set_msg_emoji_like and
Lagrange's set_group_reaction, the emoji each platform has, and where none can be set."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from bot.replies.contract import REACT_CONTRACT
from fakes.bot_api import FakeBotAPI
from fakes.harness import (
    free_port,
    make_config,
    qq_bot,
    telegram_bot,
    telegram_config,
    wait_until,
)
from fakes.onebot import at, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE, GROUP_ID, SELF_ID = 1001, 500, 10001
QQ_GROUP = ChatKey("qq", ChatKind.GROUP, str(GROUP_ID))


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def system_prompt(llm: FakeLLMServer, index: int = -1) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


def batch_states(config: Config) -> list[str]:
    with contextlib.closing(sqlite3.connect(config.database_path)) as db:
        return [state for (state,) in db.execute("SELECT state FROM batches ORDER BY id")]


async def test_telegram_answers_thanks_with_a_reaction_alone(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A "thanks" answered by a ❤️ reaction alone: the prompt offered reactions, Telegram
    gets its own heart (❤, no U+FE0F) on that message, no text is sent, and the batch
    counts as answered with one call."""
    config = telegram_config(tmp_path, llm, api)
    async with telegram_bot(config, api) as core:
        thanks = api.push_message(ALICE, "谢谢你！")
        llm.reply_json(plan({"react": "❤️", "to": str(thanks)}))
        await api.wait_for("setMessageReaction", timeout=5)
        await core.inbox.drain()
        sent_today = await core.ops.status.sent_today()
    assert (api.reactions, sent_today) == ([(ALICE, thanks, ["❤"])], {"react": 1})
    assert (api.sent_messages(), batch_states(config), len(llm.requests)) == ([], ["answered"], 1)
    assert REACT_CONTRACT.strip() in system_prompt(llm)


async def test_telegram_takes_the_nearest_reaction_or_none(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """😂 (not among Telegram's reactions) is set as 🤣; 🍕 has nothing near, so it costs
    only the reaction: the text beside it goes out and nothing fails."""
    config = telegram_config(tmp_path, llm, api)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            joke = api.push_message(ALICE, "哈哈哈哈")
            llm.reply_json(plan({"react": "😂", "to": str(joke)}))
            await api.wait_for("setMessageReaction", timeout=5)
            await core.inbox.drain()
            pizza = api.push_message(ALICE, "晚上吃披萨吗")
            llm.reply_json(plan({"react": "🍕", "to": str(pizza)}, {"content": "好呀"}))
            await api.wait_for("sendMessage", timeout=5)
            await core.inbox.drain()
    assert api.reactions == [(ALICE, joke, ["🤣"])]
    assert [m["text"] for m in api.sent_messages()] == ["好呀"]
    assert logs.about("refused for good") == [
        "WARNING reply 2 refused for good (Telegram has no reaction like '🍕'); dropping it"
    ]
    assert logs.tracebacks() == []


def qq_config(tmp_path: Path, llm: FakeLLMServer) -> Config:
    return make_config(tmp_path, llm.base_url, qq={"enabled": True, "port": free_port()})


async def test_qq_group_reaction_sets_the_qq_face(tmp_path: Path, llm: FakeLLMServer) -> None:
    """In a QQ group, 👍 on a message is NapCat's set_msg_emoji_like with face "76" (as a
    string) on that message id; no text is sent."""
    config = qq_config(tmp_path, llm)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
        thanks = await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 谢谢")])
        llm.reply_json(plan({"react": "👍", "to": str(thanks)}))
        [call] = await onebot.wait_for_call("set_msg_emoji_like")
        await core.inbox.drain()
    assert call.params == {"message_id": thanks, "emoji_id": "76", "set": True}
    assert (onebot.calls_of("send_group_msg"), batch_states(config)) == ([], ["answered"])


async def test_qq_reacts_through_lagrange_and_says_once_when_it_cannot(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Without NapCat's action the reaction goes through Lagrange's set_group_reaction;
    with neither, that is logged once, the reaction costs nothing else, and the next
    batches' prompts no longer offer reactions."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
            onebot.unsupported.add("set_msg_emoji_like")
            first = await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 好")])
            llm.reply_json(plan({"react": "🎉", "to": str(first)}))
            [lagrange] = await onebot.wait_for_call("set_group_reaction")
            await core.inbox.drain()
            onebot.unsupported.add("set_group_reaction")
            second = await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 嗯")])
            llm.reply_json(plan({"react": "👍", "to": str(second)}, {"content": "在"}))
            await onebot.wait_for_call("send_group_msg", within_s=5)
            await core.inbox.drain()
            await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 还在吗")])
            await wait_until(lambda: len(llm.requests) == 3)
            await core.inbox.drain()
    assert lagrange.params == {
        "group_id": GROUP_ID,
        "message_id": first,
        "code": "320",
        "is_add": True,
    }
    told = [line for line in logs if "has no reaction actions" in line]
    prompts = [REACT_CONTRACT.strip() in system_prompt(llm, n) for n in range(3)]
    assert (len(told), prompts) == (1, [True, True, False])


async def test_qq_private_chats_have_no_reactions(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A QQ private chat's prompt offers no reaction; one the model writes anyway is
    dropped (and traced), no reaction action is called, and the text beside it is sent."""
    config = qq_config(tmp_path, llm)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
        asked = await onebot.send_private_message(ALICE, "谢谢")
        llm.reply_json(plan({"react": "👍", "to": str(asked)}, {"content": "不客气"}))
        await onebot.wait_for_call("send_private_msg")
        await core.inbox.drain()
        [shown] = await core.ops.traces.recent(ChatKey("qq", ChatKind.PRIVATE, str(ALICE)), count=1)
    assert REACT_CONTRACT.strip() not in system_prompt(llm)
    assert onebot.calls_of("set_msg_emoji_like") == []
    assert [(d.kind, d.reason) for d in shown.trace.dropped] == [
        ("react", "react items are not offered here")
    ]
    assert json.loads(json.dumps([f.content for f in shown.fates])) == ["不客气"]
