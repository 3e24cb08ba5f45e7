"""Platform faults end to end: real adapters, the real core, the fakes misbehaving.

Already covered elsewhere and not repeated here: a 429 waited out, a vanished quote and
a blocked private chat in one run (test_e2e_telegram.py::test_telegram_faults); a reply
waiting for OneBot to reconnect (test_e2e_qq.py::test_reply_waits_for_a_reconnect); the
adapters' error translation (test_telegram.py, test_qq.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from adapters.app import Core, running_bot, running_core
from adapters.qq.platform import QQPlatform
from adapters.telegram.platform import TelegramPlatform
from bot.config.model import Config
from bot.errors import SendFailed
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import Platform
from bot.replies.items import Text
from bot.retries import DEFAULT_RETRIES, Retries
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI, make_message
from fakes.harness import (
    TEST_KEY,
    free_port,
    make_config,
    replies_json,
    telegram_config,
    wait_until,
)
from fakes.onebot import FakeOneBot, at, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE, BOB = 1001, 1002
GROUP_ID = -100555
QQ_SELF, QQ_GROUP, QQ_ALICE = 10001, 500, 42


def outbox(config: Config) -> list[tuple[str, str, str]]:
    with sqlite3.connect(config.database_path) as db:
        rows = db.execute("SELECT content, state, coalesce(reason, '') FROM outbox ORDER BY id")
        return [(str(c), str(s), str(r)) for c, s, r in rows]


@contextlib.asynccontextmanager
async def telegram_bot(config: Config, api: FakeBotAPI) -> AsyncIterator[Core]:
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        yield core


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [m["text"] for m in api.sent_messages(chat_id)]


# --- Telegram ----------------------------------------------------------------------------


async def test_telegram_unreachable_at_start_then_back(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With the Bot API down at start the bot runs (QQ answers); Telegram joins once it is back."""
    await api.stop_listening()
    qq_port = free_port()
    config = telegram_config(tmp_path, llm, api, qq={"enabled": True, "port": qq_port})
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    with captured_logs() as logs:
        async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
            url = f"ws://127.0.0.1:{qq_port}/onebot/v11/ws"
            async with FakeOneBot(url, self_id=QQ_SELF) as onebot:
                await onebot.send_private_message(QQ_ALICE, "telegram 挂了，你在吗？")
                await onebot.wait_for_call("send_private_msg", within_s=5)
                api.push_message(ALICE, "停机时发的消息")
                await api.start_listening()
                await api.wait_for(lambda: texts(api, ALICE), timeout=10)
                await core.inbox.drain()
    warnings = [line for line in logs if "Telegram Bot API unreachable" in line]
    assert (texts(api, ALICE), len(llm.requests), len(warnings) >= 1) == (["好的"], 2, True)
    assert logs.tracebacks() == []


async def test_telegram_429_waits_retry_after_and_sends_once(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A 429 with retry_after 1 holds that reply at least 1 s; then it goes out exactly once."""
    llm.reply_json(replies_json("稍等"))
    config = telegram_config(tmp_path, llm, api)
    loop = asyncio.get_running_loop()
    async with telegram_bot(config, api) as core:
        await api.wait_for("getUpdates")
        api.fail_next("sendMessage", status=429, description="Too Many Requests", retry_after=1)
        api.push_message(ALICE, "在吗？")
        await api.wait_for("sendMessage", timeout=5)
        refused_at = loop.time()
        await api.wait_for("sendMessage", count=2, timeout=5)
        waited_s = loop.time() - refused_at
        await core.inbox.drain()
    assert (texts(api, ALICE), len(api.calls_to("sendMessage"))) == (["稍等"], 2)
    assert (outbox(config), waited_s >= 0.95) == ([("稍等", "sent", "")], True)


async def test_telegram_refusing_one_reply_drops_it_and_sends_the_next(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A 400 about one message is not retried until it goes stale: that reply is dropped
    at once and the one after it still goes out."""
    llm.reply_json(replies_json("一", "二", delay=0.1))
    config = telegram_config(tmp_path, llm, api)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            await api.wait_for("getUpdates")
            api.fail_next("sendMessage", status=400, description="Bad Request: message is too long")
            api.push_message(ALICE, "说两句？")
            await api.wait_for("sendMessage", count=2, timeout=5)
            await core.inbox.drain()
    assert (texts(api, ALICE), len(api.calls_to("sendMessage"))) == (["二"], 2)
    assert outbox(config) == [("一", "dropped", "refused"), ("二", "sent", "")]
    assert logs.about("refused for good") == [
        f"WARNING reply 1 refused for good (Telegram refused a message to telegram:private:{ALICE}"
        ": BadRequest: Message is too long); dropping it"
    ]


async def test_telegram_kicked_from_a_group_drops_its_replies_only(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """After a 403 in a group its queued replies are dropped; other chats go on normally."""
    llm.reply_json(replies_json("一", "二", "三", delay=0.3))
    llm.reply_json(replies_json("你好"))
    config = telegram_config(tmp_path, llm, api)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            await api.wait_for("getUpdates")
            api.push_message(GROUP_ID, "小满 讲个故事？", chat_type="supergroup", title="g")
            await api.wait_for(lambda: texts(api, GROUP_ID) == ["一"], timeout=5)
            api.block_chat(
                GROUP_ID, description="Forbidden: bot was kicked from the supergroup chat"
            )
            api.push_message(ALICE, "你好？")
            await api.wait_for(lambda: texts(api, ALICE) == ["你好"], timeout=5)
            await core.inbox.drain()
    assert outbox(config) == [
        ("一", "sent", ""),
        ("二", "dropped", "chat unavailable"),
        ("三", "dropped", "chat unavailable"),
        ("你好", "sent", ""),
    ]
    assert (texts(api, GROUP_ID), logs.tracebacks()) == (["一"], [])


async def test_telegram_quote_of_a_deleted_message_is_sent_without_it(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """The quoted message was deleted meanwhile: a 400, then the words go out unquoted, once."""
    config = telegram_config(tmp_path, llm, api)
    async with telegram_bot(config, api) as core:
        await api.wait_for("getUpdates")
        asked = api.push_message(GROUP_ID, "小满 在吗？", chat_type="supergroup", title="g")
        llm.reply_json({"replies": [{"content": "在", "reply_to": str(asked)}]})
        await llm.wait_for_requests(1)
        del api.messages[asked]  # the chatter deleted it while the LLM was thinking
        await api.wait_for(lambda: texts(api, GROUP_ID), timeout=5)
        await core.inbox.drain()
    calls = api.calls_to("sendMessage")
    assert [("reply_parameters" in c, c["text"]) for c in calls] == [(True, "在"), (False, "在")]
    assert (texts(api, GROUP_ID), outbox(config)) == (["在"], [("在", "sent", "")])


class SlowSink:
    """A MessageSink that stores nothing until it is let go, like a slow database."""

    def __init__(self) -> None:
        self.received: list[IncomingMessage] = []
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        self.entered.set()
        await self.go.wait()
        self.received += messages

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        await self.go.wait()

    def platform_ready(self, platform: str) -> None:
        pass


def telegram_platform(api: FakeBotAPI) -> TelegramPlatform:
    return TelegramPlatform(
        token=api.token,
        api_base_url=api.base_url,
        bot_name="小满",
        poll_timeout_s=0.1,
        retry_initial_s=0.02,
        retry_max_s=0.1,
    )


async def test_telegram_confirms_an_update_only_once_it_is_stored(api: FakeBotAPI) -> None:
    """While the sink has not stored an update, Telegram is never told it was received."""
    sink = SlowSink()
    async with telegram_platform(api) as platform:
        await platform.start(sink)
        await platform.wait_ready()
        update_id = api.push_update({"message": make_message(1, ALICE, "第一条")})
        async with asyncio.timeout(5):
            await sink.entered.wait()  # PTB fetched it and the sink is storing it
        polls = len(api.calls_to("getUpdates"))
        await asyncio.sleep(0.3)  # three poll timeouts: PTB alone would have confirmed it
        held = (api.confirmed_offset, len(api.calls_to("getUpdates")) - polls)
        sink.go.set()
        await api.wait_for(lambda: api.confirmed_offset > update_id, timeout=5)
    assert (held, [m.text for m in sink.received]) == ((0, 0), ["第一条"])


async def test_telegram_send_cut_off_after_it_left_is_maybe_delivered(api: FakeBotAPI) -> None:
    """A connection that breaks after the request went out may have posted it: never resent."""
    async with telegram_platform(api) as platform:
        await platform.start(SlowSink())
        await platform.wait_ready()
        api.delay_next("sendMessage", 5.0)
        chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
        sending = asyncio.create_task(platform.send(chat, Text("在")))
        await api.wait_for("sendMessage")
        await api.stop_listening()  # the server goes away before it answers
        with pytest.raises(SendFailed) as caught:
            await sending
    assert (caught.value.maybe_delivered, len(api.calls_to("sendMessage"))) == (True, 1)


# --- QQ ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def qq_bot(
    tmp_path: Path,
    llm: FakeLLMServer,
    *,
    api_timeout_s: float = 0.3,
    retries: Retries = DEFAULT_RETRIES,
    **sections: Any,
) -> AsyncIterator[tuple[Config, Core, FakeOneBot]]:
    """The real core and the real QQ adapter with a short API timeout, NapCat connected."""
    port = free_port()
    config = make_config(tmp_path, llm.base_url, qq={"enabled": True, "port": port}, **sections)
    qq = QQPlatform(
        host="127.0.0.1", port=port, access_token=None, bot_name="小满", api_timeout_s=api_timeout_s
    )
    platforms: dict[str, Platform] = {"qq": qq}
    secrets = Secrets(TEST_KEY, TEST_KEY)
    async with running_core(config, secrets, platforms, nightly=False, retries=retries) as core:
        await qq.start(core.inbox)
        try:
            async with FakeOneBot(qq.ws_url, self_id=QQ_SELF) as onebot:
                await qq.wait_connected(5)
                yield config, core, onebot
        finally:
            await qq.stop()


def qq_texts(onebot: FakeOneBot, action: str) -> list[str]:
    return [
        seg["data"]["text"]
        for call in onebot.calls_of(action)
        for seg in call.params["message"]
        if seg["type"] == "text"
    ]


async def test_qq_action_failed_is_retried_and_sent_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A send NapCat refuses (retcode 1200) is certainly not posted: retried, then sent once."""
    with captured_logs() as logs:
        async with qq_bot(tmp_path, llm) as (config, core, onebot):
            onebot.fail_next("send_private_msg", retcode=1200, wording="发送消息失败")
            await onebot.send_private_message(QQ_ALICE, "在吗？")
            await onebot.wait_for_call("send_private_msg", 2, within_s=5)
            await core.inbox.drain()
    assert (qq_texts(onebot, "send_private_msg"), outbox(config)) == (
        ["好的", "好的"],
        [("好的", "sent", "")],
    )
    assert logs.tracebacks() == []


async def test_qq_chat_gone_drops_its_replies_and_others_go_on(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Removed from a group ("不在群"): its replies are dropped, never retried; private goes on."""
    llm.reply_json(replies_json("一", "二", delay=0.1))
    async with qq_bot(tmp_path, llm) as (config, core, onebot):
        onebot.fail_next("send_group_msg", retcode=1200, wording="机器人不在群内")
        await onebot.send_group_message(QQ_GROUP, QQ_ALICE, [at(QQ_SELF), text(" 讲讲？")])
        await onebot.wait_for_call("send_group_msg", within_s=5)
        await onebot.send_private_message(QQ_ALICE, "还在吗？")
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    assert outbox(config) == [
        ("一", "dropped", "chat unavailable"),
        ("二", "dropped", "chat unavailable"),
        ("好的", "sent", ""),
    ]
    assert len(onebot.calls_of("send_group_msg")) == 1


async def test_qq_unanswered_send_is_never_repeated(tmp_path: Path, llm: FakeLLMServer) -> None:
    """NapCat never answers a send: after the API timeout it counts as maybe posted, not resent."""
    async with qq_bot(tmp_path, llm) as (config, core, onebot):
        onebot.ignore_next("send_private_msg")
        await onebot.send_private_message(QQ_ALICE, "在吗？")
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
        llm.reply_json(replies_json("又在了"))
        await onebot.send_private_message(QQ_ALICE, "喂？")
        await onebot.wait_for_call("send_private_msg", 2, within_s=5)
        await core.inbox.drain()
    assert qq_texts(onebot, "send_private_msg") == ["好的", "又在了"]
    assert outbox(config) == [("好的", "dropped", "maybe delivered"), ("又在了", "sent", "")]


async def test_qq_disconnect_mid_conversation(tmp_path: Path, llm: FakeLLMServer) -> None:
    """NapCat drops between two paced replies: the second fails to go out while it is away,
    then goes out once as soon as it is back, not after the retry back-off (here 10 s)."""
    llm.reply_json(replies_json("第一句", "第二句", delay=0.3))
    llm.reply_json(replies_json("重连后"))
    with captured_logs() as logs:
        long_back_off = Retries(send_wait_initial_s=10.0)
        async with qq_bot(tmp_path, llm, retries=long_back_off) as (config, core, onebot):
            await onebot.send_private_message(QQ_ALICE, "说两句？")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await onebot.close()
            await wait_until(lambda: any("not sent" in line for line in logs))
            await onebot.connect()
            await onebot.wait_for_call("send_private_msg", 2, within_s=5)  # the back-off is 10 s
            await onebot.send_private_message(QQ_ALICE, "回来了？")
            await onebot.wait_for_call("send_private_msg", 3, within_s=5)
            await core.inbox.drain()
    assert qq_texts(onebot, "send_private_msg") == ["第一句", "第二句", "重连后"]
    assert [state for _, state, _ in outbox(config)] == ["sent", "sent", "sent"]


async def test_qq_reply_gone_stale_while_disconnected_is_dropped(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A reply still unsent ``stale_after_s`` past its time is dropped, never sent late."""
    llm.reply_json(replies_json("第一句", "第二句", delay=0.3))
    with captured_logs() as logs:
        async with qq_bot(tmp_path, llm, pacing={"stale_after_s": 0.1}) as (
            config,
            core,
            onebot,
        ):
            await onebot.send_private_message(QQ_ALICE, "说两句？")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await onebot.close()
            await wait_until(lambda: any("not sent" in line for line in logs))
            await asyncio.sleep(0.2)  # away for longer than stale_after_s
            await onebot.connect()
            await wait_until(lambda: outbox(config)[-1][1] == "dropped")
            await core.inbox.drain()
    assert qq_texts(onebot, "send_private_msg") == ["第一句"]
    assert outbox(config) == [("第一句", "sent", ""), ("第二句", "dropped", "stale")]
