"""QQ backfill: after each OneBot connect, what the bot missed is fetched back.

The real bot (SQLite, pipeline, openai SDK against the fake LLM) with nonebot2 serving the
reverse WebSocket to the fake NapCat, which keeps each chat's history as QQ does and
serves it through ``get_group_msg_history`` / ``get_friend_msg_history``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.app import Core, running_bot
from adapters.qq.history import messages_of
from bot.addressing import BotNames
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from bot.secrets import Secrets
from fakes.harness import TEST_KEY, free_port, make_config, replies_json, user_prompt, wait_until
from fakes.onebot import FakeOneBot, at, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import LogLines, captured_logs

SELF_ID = 10001
GROUP_ID = 500
ALICE, BOB = 42, 43
GROUP = ChatKey("qq", ChatKind.GROUP, str(GROUP_ID))
PRIVATE = ChatKey("qq", ChatKind.PRIVATE, str(ALICE))
HISTORY_ACTIONS = ("get_group_msg_history", "get_friend_msg_history")
FOUND_LINE = "chat(s) asked for missed messages"


def qq_config(tmp_path: Path, llm: FakeLLMServer, **qq: Any) -> Config:
    return make_config(tmp_path, llm.base_url, qq={"enabled": True, "port": free_port(), **qq})


@contextlib.asynccontextmanager
async def bot_and_napcat(
    config: Config, *, unsupported: Collection[str] = ()
) -> AsyncIterator[tuple[Core, FakeOneBot]]:
    secrets = Secrets(TEST_KEY, TEST_KEY)
    async with running_bot(config, secrets) as core:
        url = f"ws://127.0.0.1:{config.qq.port}/onebot/v11/ws"
        async with FakeOneBot(url, self_id=SELF_ID, unsupported=unsupported) as onebot:
            yield core, onebot


async def disconnect(onebot: FakeOneBot, logs: LogLines) -> None:
    """Drop the connection and wait until the bot noticed."""
    gone = sum(f"OneBot {SELF_ID} disconnected" in line for line in logs)
    await onebot.close()
    await wait_until(lambda: sum(f"OneBot {SELF_ID} disconnected" in ln for ln in logs) > gone)


async def reconnect(onebot: FakeOneBot, logs: LogLines) -> None:
    """Drop the connection, wait until the bot noticed, and connect again."""
    await disconnect(onebot, logs)
    await onebot.connect()


async def wait_for_lines(logs: LogLines, words: str, count: int) -> None:
    await wait_until(lambda: sum(words in line for line in logs) >= count)


def stored(config: Config) -> list[tuple[str, str, str | None]]:
    """Return each chatter message as (chat key, text, its batch's state), in storage order."""
    with contextlib.closing(sqlite3.connect(config.database_path)) as db:
        return list(
            db.execute(
                "SELECT m.chat_key, m.text, b.state FROM messages m"
                " LEFT JOIN batches b ON b.id = m.batch_id WHERE m.from_bot = 0 ORDER BY m.id"
            )
        )


def problems(logs: LogLines) -> list[str]:
    """Return the warnings and errors but nonebot's word on each dropped connection."""
    return [
        line
        for line in logs
        if line.startswith(("WARNING", "ERROR")) and not line.endswith("closed by peer")
    ]


def sent_texts(onebot: FakeOneBot) -> list[str]:
    return [
        call.params["message"][-1]["data"]["text"]
        for action in ("send_private_msg", "send_group_msg")
        for call in onebot.calls_of(action)
    ]


async def test_what_was_sent_while_away_is_fetched_back_and_answered_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Messages sent while OneBot was disconnected are fetched back on the reconnect with
    NapCat's parameters, answered once each, commands among them not run; the bot's own
    messages are not taken for a chatter's; another reconnect stores and answers nothing."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with bot_and_napcat(config) as (core, onebot):
            await wait_for_lines(logs, FOUND_LINE, 1)  # the first connect: no chat yet
            llm.reply_json(replies_json("在的"))
            await onebot.send_private_message(ALICE, "在吗", nickname="小明")
            await onebot.send_group_message(GROUP_ID, BOB, "今天好热", card="阿强")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await core.inbox.drain()
            await disconnect(onebot, logs)
            await onebot.send_private_message(ALICE, "你还在吗？", nickname="小明", deliver=False)
            await onebot.send_private_message(ALICE, "/status", nickname="小明", deliver=False)
            await onebot.send_group_message(
                GROUP_ID, BOB, [at(SELF_ID), text(" 小满，吃了吗？")], card="阿强", deliver=False
            )
            llm.reply_json(replies_json("还在"))
            llm.reply_json(replies_json("吃了"))
            await onebot.connect()
            await wait_until(lambda: len(sent_texts(onebot)) == 3, within_s=5)
            await core.inbox.drain()
            await reconnect(onebot, logs)
            await wait_for_lines(logs, FOUND_LINE, 3)
            await core.inbox.drain()
    asked = [(call.action, call.params) for call in onebot.calls if call.action in HISTORY_ACTIONS]
    group = {"group_id": GROUP_ID, "count": 30, "disable_get_url": True, "parse_mult_msg": False}
    friend = {"user_id": ALICE, "count": 30, "disable_get_url": True, "parse_mult_msg": False}
    newest_first = [("get_group_msg_history", group), ("get_friend_msg_history", friend)]
    assert asked == newest_first * 2
    assert (sorted(sent_texts(onebot)), len(llm.requests)) == (sorted(["在的", "还在", "吃了"]), 3)
    assert stored(config) == [
        ("qq:private:42", "在吗", "answered"),
        ("qq:group:500", "今天好热", "skipped"),
        ("qq:group:500", "小满，吃了吗？", "answered"),
        ("qq:private:42", "你还在吗？", "answered"),
    ]
    found = [line for line in logs if FOUND_LINE in line]
    assert found == [
        "INFO bot.backfill: qq: 0 chat(s) asked for missed messages; none missed",
        "INFO bot.backfill: qq: 2 chat(s) asked for missed messages; 2 stored now"
        " (qq:group:500 1, qq:private:42 1)",
        "INFO bot.backfill: qq: 2 chat(s) asked for missed messages; none missed",
    ]


async def test_a_message_too_old_to_answer_is_kept_as_context(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A missed message older than pacing.stale_after_s is stored but never answered; the
    next answer in its chat shows it as history, not as a new message."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with bot_and_napcat(config) as (core, onebot):
            await wait_for_lines(logs, FOUND_LINE, 1)
            llm.reply_json(replies_json("好的"))
            await onebot.send_private_message(ALICE, "记一下", nickname="小明")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await disconnect(onebot, logs)
            long_ago = int(time.time()) - 3600
            await onebot.send_private_message(
                ALICE, "一小时前问的？", nickname="小明", time=long_ago, deliver=False
            )
            await onebot.connect()
            await wait_for_lines(logs, FOUND_LINE, 2)
            await core.inbox.drain()
            requests_after_backfill = len(llm.requests)
            llm.reply_json(replies_json("收到"))
            await onebot.send_private_message(ALICE, "现在呢？", nickname="小明")
            await onebot.wait_for_call("send_private_msg", 2, within_s=5)
            await core.inbox.drain()
    history, new = user_prompt(llm.requests[-1]).split("New messages")
    assert requests_after_backfill == 1
    assert ("一小时前问的？" in history, "一小时前问的？" in new) == (True, False)
    assert [row[1:] for row in stored(config)] == [
        ("记一下", "answered"),
        ("一小时前问的？", "skipped"),
        ("现在呢？", "answered"),
    ]


async def test_an_implementation_without_history_is_noted_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Without the history actions the bot says so once at INFO, never asks again this run,
    logs no warning, and answers as before."""
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with bot_and_napcat(config, unsupported=HISTORY_ACTIONS) as (core, onebot):
            await wait_for_lines(logs, FOUND_LINE, 1)
            llm.reply_json(replies_json("在"))
            await onebot.send_private_message(ALICE, "在吗")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await reconnect(onebot, logs)
            await wait_until(lambda: len(onebot.calls_of("get_friend_msg_history")) == 1)
            await reconnect(onebot, logs)
            llm.reply_json(replies_json("还在"))
            await onebot.send_private_message(ALICE, "还在吗")
            await onebot.wait_for_call("send_private_msg", 2, within_s=5)
            await core.inbox.drain()
    noted = [line for line in logs if "no message history" in line]
    assert noted == [
        "INFO bot.backfill: qq: no message history to fetch missed messages from:"
        " OneBot has no get_friend_msg_history (retcode 1404: 不支持的Api get_friend_msg_history)"
    ]
    assert len(onebot.calls_of("get_friend_msg_history")) == 1
    assert problems(logs) == []
    assert sent_texts(onebot) == ["在", "还在"]


async def test_an_empty_history_is_nothing_missed(tmp_path: Path, llm: FakeLLMServer) -> None:
    """NapCat answers an empty history with an error ("消息undefined不存在"): read as
    nothing missed, without a warning."""
    config = qq_config(tmp_path, llm)
    url = f"ws://127.0.0.1:{config.qq.port}/onebot/v11/ws"
    with captured_logs() as logs:
        async with bot_and_napcat(config) as (core, onebot):
            await wait_for_lines(logs, FOUND_LINE, 1)
            llm.reply_json(replies_json("在"))
            await onebot.send_private_message(ALICE, "在吗")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await core.inbox.drain()
            await disconnect(onebot, logs)
            async with FakeOneBot(url, self_id=SELF_ID) as fresh:  # a history that holds nothing
                await wait_for_lines(logs, FOUND_LINE, 2)
    [call] = fresh.calls_of("get_friend_msg_history")
    assert fresh.history == {}
    assert [line for line in logs if FOUND_LINE in line][-1] == (
        "INFO bot.backfill: qq: 1 chat(s) asked for missed messages; none missed"
    )
    assert problems(logs) == []
    assert call.params["user_id"] == ALICE


def history_item(message_id: int, stamp: float, **fields: Any) -> dict[str, Any]:
    """A group history item as NapCat gives it, from Bob unless ``fields`` say otherwise."""
    return {
        "self_id": SELF_ID,
        "user_id": BOB,
        "time": stamp,
        "message_id": message_id,
        "message_seq": message_id,
        "real_id": message_id,
        "real_seq": str(message_id),
        "message_type": "group",
        "sub_type": "normal",
        "group_id": GROUP_ID,
        "sender": {"user_id": BOB, "nickname": "阿强", "card": "", "role": "member"},
        "raw_message": f"m{message_id}",
        "font": 14,
        "message": [text(f"m{message_id}")],
        "message_format": "array",
        "post_type": "message",
        **fields,
    }


def test_a_history_answer_is_read_oldest_first_without_the_bots_own() -> None:
    """Items come out by (time, QQ sequence), a time in milliseconds read as seconds; the
    bot's own (NapCat's message_sent, or its id as the sender) and other chats' messages,
    and items that are no message event, are left out."""
    now = 1_767_000_000
    items = [
        history_item(5, now + 2),
        history_item(4, (now + 1) * 1000),  # NapCat's fallback when QQ gave no time
        history_item(3, now + 1),
        history_item(9, now, post_type="message_sent", user_id=SELF_ID),
        history_item(8, now, user_id=SELF_ID),  # Lagrange marks the bot only by its id
        history_item(7, now, group_id=GROUP_ID + 1),
        history_item(2, now),
        {"post_type": "message", "message_type": "group"},
        "not an item",
    ]

    messages = messages_of(
        {"messages": items}, chat=GROUP, self_id=str(SELF_ID), names=BotNames.of("小满", ())
    )

    assert [(m.message_id, int(m.sent_at.timestamp())) for m in messages] == [
        ("2", now),
        ("3", now + 1),
        ("4", now + 1),
        ("5", now + 2),
    ]


async def test_missed_messages_are_fetched_back_from_a_bounded_set_of_chats(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Only chats active within qq.backfill_days are asked, at most qq.backfill_chats of
    them, the most recently active first, each for qq.backfill_count messages."""
    config = qq_config(tmp_path, llm, backfill_days=1.0, backfill_chats=2, backfill_count=5)
    now = int(time.time())
    with captured_logs() as logs:
        async with bot_and_napcat(config) as (core, onebot):
            await wait_for_lines(logs, FOUND_LINE, 1)
            await onebot.send_group_message(GROUP_ID + 1, BOB, "昨天的事", time=now - 86_460)
            for n in (2, 3, 4):
                await onebot.send_group_message(GROUP_ID + n, BOB, "今天的事", time=now - 40 + n)
            await wait_until(lambda: len(stored(config)) == 4)
            await reconnect(onebot, logs)
            await wait_for_lines(logs, FOUND_LINE, 2)
            await core.inbox.drain()
    asked = [call.params for call in onebot.calls_of("get_group_msg_history")]
    assert [(params["group_id"], params["count"]) for params in asked] == [
        (GROUP_ID + 4, 5),
        (GROUP_ID + 3, 5),
    ]
