"""pacebot on QQ end to end: real nonebot2 + OneBot adapter ↔ a OneBot client, Telegram beside."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.app import Core, running_bot
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI
from fakes.harness import (
    TEST_KEY,
    free_port,
    make_config,
    replies_json,
    user_prompt,
    wait_until,
    wait_waiting,
)
from fakes.onebot import FakeOneBot, at, reply, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

SELF_ID = 10001
GROUP_ID = 500
ALICE, BOB = 42, 43
TOKEN = "onebot-secret-token-123"


GROUP = ChatKey("qq", ChatKind.GROUP, str(GROUP_ID))


def outbox_states(config: Config) -> list[str]:
    with sqlite3.connect(config.database_path) as db:
        return [str(state) for (state,) in db.execute("SELECT state FROM outbox ORDER BY id")]


def qq_config(tmp_path: Path, llm: FakeLLMServer, **sections: Any) -> Config:
    return make_config(
        tmp_path, llm.base_url, qq={"enabled": True, "port": free_port()}, **sections
    )


@contextlib.asynccontextmanager
async def pacebot_with_onebot(
    config: Config, *, telegram_token: str | None = None
) -> AsyncIterator[tuple[Core, FakeOneBot]]:
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=telegram_token, onebot_access_token=TOKEN)
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        url = f"ws://127.0.0.1:{config.qq.port}/onebot/v11/ws"
        async with FakeOneBot(url, self_id=SELF_ID, access_token=TOKEN) as onebot:
            yield core, onebot


async def test_group_mention_is_answered_with_a_quote(tmp_path: Path, llm: FakeLLMServer) -> None:
    """@bot in a group → one batch → a reply to that group quoting the message."""
    async with pacebot_with_onebot(qq_config(tmp_path, llm)) as (core, onebot):
        asked = await onebot.send_group_message(
            GROUP_ID, ALICE, [at(SELF_ID), text(" 周六去哪？")], card="小明"
        )
        llm.reply_json(
            {"replies": [{"content": "去爬山", "send_delay_seconds": 0, "reply_to": str(asked)}]}
        )
        [call] = await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
    assert call.params["group_id"] == GROUP_ID
    assert call.params["message"] == [
        {"type": "reply", "data": {"id": str(asked)}},
        {"type": "text", "data": {"text": "去爬山"}},
    ]
    last_line = user_prompt(llm.requests[0]).splitlines()[-1]
    assert (last_line.startswith(f"[#{asked} "), last_line.endswith("] 小明: 周六去哪？")) == (
        True,
        True,
    )


async def test_a_quote_of_the_bot_addresses_it_after_a_restart(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Quoting what the bot said before a restart (no @, no name) still gets an answer."""
    config = qq_config(tmp_path, llm)
    async with pacebot_with_onebot(config) as (core, onebot):
        await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 推荐个电影")])
        llm.reply_json({"replies": [{"content": "看《海上钢琴师》", "send_delay_seconds": 0}]})
        await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
        [bot_said] = onebot.posted
    async with pacebot_with_onebot(config) as (core, onebot):
        llm.reply_json({"replies": [{"content": "真的好看", "send_delay_seconds": 0}]})
        await onebot.send_group_message(
            GROUP_ID, BOB, [reply(bot_said), text("好看吗")], card="阿强", message_id=2001
        )
        [call] = await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
    assert call.params["message"] == [{"type": "text", "data": {"text": "真的好看"}}]
    assert "阿强 ↩#" + str(bot_said) in user_prompt(llm.requests[1])


async def test_unaddressed_group_message_is_context_only(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Unaddressed in mention mode: stored, no LLM call, later seen as context."""
    async with pacebot_with_onebot(qq_config(tmp_path, llm)) as (core, onebot):
        await onebot.send_group_message(GROUP_ID, BOB, "今天好热", card="阿强")
        await onebot.send_group_message(GROUP_ID, BOB, "真的热", card="阿强")
        await wait_waiting(core, GROUP, 2)
        await core.inbox.drain()
        assert llm.requests == []
        await onebot.send_group_message(GROUP_ID, ALICE, "小满你说呢", card="小明")
        await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
    history = user_prompt(llm.requests[0]).split("New messages")[0]
    assert ("阿强: 今天好热" in history, "阿强: 真的热" in history) == (True, True)


async def test_private_chat_and_a_two_person_burst(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A private message is answered; a burst from two members is one call naming both."""
    config = qq_config(tmp_path, llm, groups={"reply_mode": "always"})
    async with pacebot_with_onebot(config) as (core, onebot):
        await onebot.send_private_message(ALICE, "在吗", nickname="小明")
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await onebot.send_group_message(GROUP_ID, ALICE, "我想吃火锅", card="小明")
        await onebot.send_group_message(GROUP_ID, BOB, "我想吃烧烤", card="阿强")
        await onebot.wait_for_call("send_group_msg", within_s=5)
        await core.inbox.drain()
    assert len(llm.requests) == 2
    burst = user_prompt(llm.requests[1]).split("New messages")[1]
    assert ("小明: 我想吃火锅" in burst, "阿强: 我想吃烧烤" in burst) == (True, True)
    assert onebot.calls_of("send_private_msg")[0].params["user_id"] == ALICE


async def test_reply_waits_for_a_reconnect(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A reply that fails while OneBot is away waits in the outbox and goes out once after a
    reconnect."""
    llm.reply_json(replies_json("第一句", "第二句", delay=0.3))
    config = qq_config(tmp_path, llm)
    with captured_logs() as logs:
        async with pacebot_with_onebot(config) as (core, onebot):
            await onebot.send_private_message(ALICE, "讲两句")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await onebot.close()
            await wait_until(lambda: any("not sent" in line for line in logs))
            await onebot.connect()
            await onebot.wait_for_call("send_private_msg", 2, within_s=5)
            await core.inbox.drain()
    sent = [
        call.params["message"][-1]["data"]["text"] for call in onebot.calls_of("send_private_msg")
    ]
    assert sent == ["第一句", "第二句"]
    assert outbox_states(config) == ["sent", "sent"]


async def test_telegram_and_qq_in_one_process(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Both platforms answer in one process, and Telegram going away does not harm QQ."""
    async with FakeBotAPI() as api:
        config = qq_config(tmp_path, llm, telegram={"enabled": True, "api_base_url": api.base_url})
        async with pacebot_with_onebot(config, telegram_token=api.token) as (core, onebot):
            await api.wait_for("getUpdates", timeout=5)
            api.push_message(1001, "telegram 你好")
            await onebot.send_private_message(ALICE, "qq 你好")
            await api.wait_for("sendMessage", timeout=5)
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await api.stop_listening()
            llm.reply_json(replies_json("还在"))  # not the same words again: never repeated
            await onebot.send_private_message(ALICE, "telegram 挂了你还在吗")
            await onebot.wait_for_call("send_private_msg", count=2, within_s=5)
            await core.inbox.drain()
    assert len(llm.requests) == 3


async def test_admin_commands_work_on_qq(tmp_path: Path, llm: FakeLLMServer) -> None:
    """An admin's /status in a QQ group is answered directly; another member's is refused."""
    config = qq_config(tmp_path, llm, bot={"admins": [f"qq:{ALICE}"]})
    async with pacebot_with_onebot(config) as (_, onebot):
        status = await onebot.send_group_message(GROUP_ID, ALICE, "/status", card="小明")
        pop = await onebot.send_group_message(GROUP_ID, BOB, "/summary pop", card="阿强")
        calls = await onebot.wait_for_call("send_group_msg", count=2, within_s=5)
    answers = {
        call.params["message"][0]["data"]["id"]: call.params["message"][-1]["data"]["text"]
        for call in calls
    }
    assert answers[str(status)].startswith(f"chat: qq:group:{GROUP_ID}")
    assert answers[str(pop)] == "Sorry, only admins can use that command."
    assert llm.requests == []
