"""The QQ adapter: real nonebot2 + OneBot v11 adapter served by uvicorn, driven by a fake NapCat."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from adapters.qq.platform import QQPlatform
from bot.errors import ChatUnavailable, ConfigError, SendFailed
from bot.log import Redactor
from bot.models import ChatKey, ChatKind, IncomingMessage, Picture, VoiceNote
from bot.ports import PacingLimits, Platform
from bot.replies.items import Text
from fakes.harness import RecordingSink, wait_until
from fakes.onebot import (
    FakeOneBot,
    Segment,
    at,
    face,
    file,
    forward,
    image,
    json_card,
    record,
    reply,
    segment,
    text,
    video,
    xml_card,
)
from tests.log_capture import LogLines, captured_logs

REPO = Path(__file__).resolve().parent.parent
BOT_ID = 10001
GROUP_ID = 500
USER_ID = 42
GROUP = ChatKey("qq", ChatKind.GROUP, str(GROUP_ID))
PRIVATE = ChatKey("qq", ChatKind.PRIVATE, str(USER_ID))
TOKEN = "onebot-secret-token-7f3a9c"
SENT_AT = 1_700_000_000
SENT_AT_UTC = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


def make_platform(**overrides: Any) -> QQPlatform:
    """Build a platform on a free loopback port with test-speed timeouts."""
    options: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "access_token": None,
        "bot_name": "小满",
        "aliases": ("XiaoMan",),
        "api_timeout_s": 0.3,
        **overrides,
    }
    return QQPlatform(**options)


async def until(condition: Callable[[], bool], *, within_s: float = 2.0) -> None:
    """Wait until ``condition()`` holds."""
    async with asyncio.timeout(within_s):
        while not condition():  # noqa: ASYNC110 - polling state kept by nonebot
            await asyncio.sleep(0.005)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
async def platform(sink: RecordingSink) -> AsyncIterator[QQPlatform]:
    """A started platform without an access token."""
    async with make_platform() as qq:
        await qq.start(sink)
        yield qq


@pytest.fixture
async def onebot(platform: QQPlatform) -> AsyncIterator[FakeOneBot]:
    """A fake NapCat connected to ``platform``."""
    async with FakeOneBot(platform.ws_url, self_id=BOT_ID) as fake:
        await platform.wait_connected(2.0)
        yield fake


async def receive_one(onebot: FakeOneBot, sink: RecordingSink, message: list[Segment]) -> str:
    """Send one private message and return the text the sink got."""
    before = len(sink.received)
    await onebot.send_private_message(USER_ID, message)
    return (await sink.wait_for(before + 1))[-1].text


# --- inbound ---------------------------------------------------------------------------------


async def test_group_at_bot_message_becomes_one_addressed_incoming_message(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """A group message opening with @bot is keyed by the group and addresses the bot."""
    await onebot.send_group_message(
        GROUP_ID,
        USER_ID,
        [at(BOT_ID), text(" 今天吃什么")],
        card="小明",
        nickname="ming",
        message_id=777,
        time=SENT_AT,
        group_name="饭搭子",
    )
    received = await sink.wait_for(1)
    assert received == [
        IncomingMessage(
            chat=ChatKey("qq", ChatKind.GROUP, "500"),
            message_id="777",
            sender_id="42",
            sender_name="小明",
            text="今天吃什么",
            sent_at=SENT_AT_UTC,
            addresses_bot=True,
            reply_to_id=None,
            chat_title="饭搭子",
        )
    ]
    assert str(received[0].chat) == "qq:group:500"


async def test_group_message_without_address_does_not_address_the_bot(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """A plain group message is delivered with addresses_bot False and the nickname as name."""
    await onebot.send_group_message(GROUP_ID, USER_ID, "有人在吗", nickname="ming")
    [message] = await sink.wait_for(1)
    assert (message.text, message.addresses_bot, message.sender_name) == ("有人在吗", False, "ming")


async def test_private_message_is_keyed_by_the_user(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """A private message gets the chat key qq:private:<uid> and always addresses the bot."""
    await onebot.send_private_message(USER_ID, "在吗", nickname="ming", message_id=9, time=SENT_AT)
    received = await sink.wait_for(1)
    assert received == [
        IncomingMessage(
            chat=PRIVATE,
            message_id="9",
            sender_id="42",
            sender_name="ming",
            text="在吗",
            sent_at=SENT_AT_UTC,
            addresses_bot=True,
        )
    ]
    assert str(received[0].chat) == "qq:private:42"


@pytest.mark.parametrize("words", ["小满你觉得呢", "what do you think, xiaoman?"])
async def test_bot_name_or_alias_in_the_text_addresses_the_bot(
    onebot: FakeOneBot, sink: RecordingSink, words: str
) -> None:
    """The bot's name or an alias anywhere in the words (any case) addresses it."""
    await onebot.send_group_message(GROUP_ID, USER_ID, words)
    [message] = await sink.wait_for(1)
    assert (message.text, message.addresses_bot) == (words, True)


async def test_quoting_someone_else_keeps_the_quote_but_does_not_address(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """A reply to another chatter's message sets reply_to_id without addressing the bot."""
    await onebot.send_group_message(GROUP_ID, 43, [reply(1234), at(43), text(" 同意")])
    [message] = await sink.wait_for(1)
    assert (message.text, message.addresses_bot, message.reply_to_id) == ("@43 同意", False, "1234")


async def test_at_someone_else_is_shown_by_name(onebot: FakeOneBot, sink: RecordingSink) -> None:
    """An @ of another member reads as @name (or @id) and does not address the bot."""
    await onebot.send_group_message(
        GROUP_ID, USER_ID, [at(43, name="小红"), text(" 你来"), at("all"), text("开会")]
    )
    [message] = await sink.wait_for(1)
    assert (message.text, message.addresses_bot) == ("@小红 你来 @all 开会", False)


async def test_at_bot_in_the_middle_stays_in_the_text(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """An @bot inside a sentence stays readable as @name and addresses the bot."""
    await onebot.send_group_message(GROUP_ID, USER_ID, [text("问问"), at(BOT_ID), text("吧")])
    [message] = await sink.wait_for(1)
    assert (message.text, message.addresses_bot) == ("问问 @小满 吧", True)


async def test_command_after_at_bot_passes_through_unchanged(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """``@bot /status`` reaches the core as the command text ``/status``."""
    await onebot.send_group_message(GROUP_ID, USER_ID, [at(BOT_ID), text(" /status")])
    await onebot.send_private_message(USER_ID, "/forget 2")
    received = await sink.wait_for(2)
    assert [(m.text, m.addresses_bot) for m in received] == [("/status", True), ("/forget 2", True)]


async def test_a_record_is_kept_by_its_file_with_its_url(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """A record keeps the file get_record takes and its http(s) URL; its length is not
    known yet, so the text shows ``[voice]``; a record without a URL keeps none."""
    url = "https://multimedia.nt.qq.com.cn/download?appid=1402&fileid=r1"
    await onebot.send_private_message(USER_ID, [record("r1.amr", url=url, file_size=2048)])
    await onebot.send_private_message(USER_ID, [record("r2.amr")])
    first, second = await sink.wait_for(2)
    assert (first.text, first.voice) == ("[voice]", VoiceNote("r1.amr", "[voice]", None, url, 2048))
    assert second.voice == VoiceNote("r2.amr", "[voice]", None, "", 5120)


async def test_non_text_segments_become_placeholders(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """Each kind of non-text content becomes a short placeholder, never an error."""
    cases: list[tuple[list[Segment], str]] = [
        ([image()], "[image]"),
        ([image(sticker=True)], "[sticker]"),
        ([face(14)], "[face]"),
        ([record()], "[voice]"),
        ([video()], "[video]"),
        ([file("期末 复习.pdf")], "[file 期末 复习.pdf]"),
        ([forward()], "[forwarded messages]"),
        (
            [json_card({"app": "com.tencent.miniapp", "prompt": "[QQ小程序]哔哩哔哩"})],
            "[card: [QQ小程序]哔哩哔哩]",
        ),
        ([json_card("{not json")], "[card]"),
        ([json_card("[" * 100_000)], "[card]"),
        (
            [xml_card('<?xml version="1.0"?><msg brief="[聊天记录]" serviceID="35"></msg>')],
            "[card: [聊天记录]]",
        ),
        ([segment("dice", result="4")], "[dice 4]"),
        ([segment("markdown_v9", content="x")], "[unsupported message]"),
        ([text("看"), image(), text("好看吗")], "看 [image] 好看吗"),
        ([text(""), image(), text(" ")], "[image]"),
    ]
    texts = [await receive_one(onebot, sink, segments) for segments, _ in cases]
    assert texts == [expected for _, expected in cases]


async def test_image_segments_keep_their_urls(onebot: FakeOneBot, sink: RecordingSink) -> None:
    """Each image segment with an http(s) URL becomes a picture; other segments do not."""
    segments = [
        text("看"),
        image(url="http://img.example/a.jpg"),
        image(sticker=True, url="https://img.example/b.gif"),
        image(url="file:///etc/passwd"),
        face(14),
    ]
    await onebot.send_private_message(USER_ID, segments)
    [message] = await sink.wait_for(1)
    assert message.pictures == (
        Picture("http://img.example/a.jpg", "[image]"),
        Picture("https://img.example/b.gif", "[sticker]"),
    )


async def test_the_bots_own_messages_and_bot_senders_are_ignored(
    onebot: FakeOneBot, sink: RecordingSink
) -> None:
    """Messages from the bot's account, marked bots and group system notices never arrive."""
    await onebot.send_group_message(GROUP_ID, BOT_ID, "我自己发的")
    await onebot.send_private_message(BOT_ID, "我自己发的私聊")
    await onebot.send_group_message(GROUP_ID, 666, "I am a bot", is_robot=True)
    await onebot.send_group_message(GROUP_ID, 10000, "管理员已开启全员禁言", sub_type="notice")
    await onebot.send_group_message(GROUP_ID, USER_ID, "真人")
    received = await sink.wait_for(1)  # delivery keeps order: the ignored ones came first
    assert [m.text for m in received] == ["真人"]


@pytest.mark.parametrize(
    "message",
    [
        [text("你好 "), at(BOT_ID), image(sticker=True), face(14)],
        [reply(7), text("quoted")],
        [{"type": "text"}, {"type": "unknown-kind", "data": {"x": [1, {"y": 2}]}}],
        "[CQ:at,qq=10001] a message in CQ codes",
        [{"type": 5, "data": {}}],  # not a segment: nonebot refuses it
        [{"type": "text", "data": {1: "a key that is no name"}}],
    ],
)
def test_onebot_events_read_as_nonebot_reads_them(message: Any) -> None:
    """The adapter reads plain segments itself (nonebot's reading builds a validator per
    segment); every event comes out as nonebot's own models read it, as the base Event
    where no message model fits."""
    from nonebot.adapters.onebot.v11 import Adapter, Event

    from adapters.qq.wire import OneBotAdapter

    data = {
        "self_id": BOT_ID,
        "user_id": USER_ID,
        "time": SENT_AT,
        "message_id": 9,
        "message_type": "private",
        "sender": {"user_id": USER_ID, "nickname": "阿明"},
        "raw_message": "…",
        "font": 14,
        "sub_type": "friend",
        "message": message,
        "post_type": "message",
    }
    models = [*Adapter.get_event_model(data), Event]  # the base Event if nothing else fits
    expected = next(read for read in map(functools.partial(_read_as, data), models) if read)
    read = OneBotAdapter._parse_event(data)
    assert type(read) is type(expected)
    assert read == expected
    assert read.model_dump() == expected.model_dump()


def _read_as(data: dict[str, Any], model: type[Any]) -> Any:
    """Read ``data`` as nonebot itself does with ``model``; ``None`` if it does not fit."""
    from nonebot.compat import type_validate_python

    try:
        return type_validate_python(model, data)
    except ValueError:
        return None


async def test_a_burst_arrives_in_order(onebot: FakeOneBot, sink: RecordingSink) -> None:
    """Messages reach the sink in the order OneBot sent them, quotes and all."""
    for n in range(30):
        parts = [reply(5), text(str(n))] if n % 3 == 0 else [text(str(n))]
        await onebot.send_group_message(GROUP_ID, USER_ID, parts)
    received = await sink.wait_for(30)
    assert [m.text for m in received] == [str(n) for n in range(30)]


async def test_a_failing_sink_does_not_stop_delivery() -> None:
    """When storing one message fails, the next one is still delivered."""
    flaky = RecordingSink(failures=1)
    async with make_platform() as qq:
        await qq.start(flaky)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID) as fake:
            await qq.wait_connected(2.0)
            await fake.send_private_message(USER_ID, "lost")
            await wait_until(lambda: flaky.handovers)  # handed over alone, and failed
            await fake.send_private_message(USER_ID, "kept")
            received = await flaky.wait_for(1)
    assert ([m.text for m in received], flaky.handovers) == (["kept"], [1, 1])


async def test_events_that_arrive_together_are_handed_over_together() -> None:
    """Frames queued while a hand-over is being stored go to the sink in one call, in order."""
    slow = RecordingSink(delay_s=0.2)
    async with make_platform() as qq:
        await qq.start(slow)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID) as fake:
            await qq.wait_connected(2.0)
            await fake.send_private_message(USER_ID, "0")
            await wait_until(lambda: slow.handovers)  # "0" is being stored
            for n in range(1, 30):
                await fake.send_private_message(USER_ID, str(n))
            received = await slow.wait_for(30)
    assert ([m.text for m in received], slow.handovers) == ([str(n) for n in range(30)], [1, 29])


async def test_stop_delivers_messages_already_received() -> None:
    """Messages received before stop() reach the sink before stop() returns."""
    slow = RecordingSink(delay_s=0.1)
    async with make_platform() as qq:
        await qq.start(slow)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID) as fake:
            await qq.wait_connected(2.0)
            for n in range(5):
                await fake.send_private_message(USER_ID, f"m{n}")
            await slow.wait_for(1)
            await qq.stop()
    assert [m.text for m in slow.received] == ["m0", "m1", "m2", "m3", "m4"]


# --- outbound --------------------------------------------------------------------------------


async def test_send_text_to_a_group_posts_a_segment_array(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """Sending a text calls send_group_msg with a text segment, or a reply segment then text."""
    first = await platform.send(GROUP, Text("大家好"))
    second = await platform.send(GROUP, Text("说的就是你", "1001"))
    calls = onebot.calls_of("send_group_msg")
    assert [(c.action, c.params) for c in calls] == [
        ("send_group_msg", {"group_id": 500, "message": [text("大家好")]}),
        ("send_group_msg", {"group_id": 500, "message": [reply(1001), text("说的就是你")]}),
    ]
    assert [first, second] == [str(id_) for id_ in onebot.posted]


async def test_send_text_to_a_private_chat_uses_send_private_msg(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """A private reply goes out through send_private_msg to the user id."""
    message_id = await platform.send(PRIVATE, Text("晚安"))
    [call] = onebot.calls_of("send_private_msg")
    assert (call.params, message_id) == (
        {"user_id": 42, "message": [text("晚安")]},
        str(next(iter(onebot.posted))),
    )


async def test_a_failed_action_is_send_failed_not_delivered(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """An ActionFailed answer becomes SendFailed with maybe_delivered False."""
    onebot.fail_next("send_group_msg", retcode=1200, wording="消息发送失败")
    with pytest.raises(SendFailed) as caught:
        await platform.send(GROUP, Text("hi"))
    assert (type(caught.value), caught.value.maybe_delivered) == (SendFailed, False)


@pytest.mark.parametrize("wording", ["群不存在", "bot is not in group", "发送失败，你已被禁言"])
async def test_a_chat_the_bot_cannot_post_to_is_chat_unavailable(
    platform: QQPlatform, onebot: FakeOneBot, wording: str
) -> None:
    """A refusal saying the bot left, was removed or muted becomes ChatUnavailable."""
    onebot.fail_next("send_group_msg", retcode=1200, wording=wording)
    with pytest.raises(ChatUnavailable) as caught:
        await platform.send(GROUP, Text("hi"))
    assert str(GROUP) in str(caught.value)


async def test_no_answer_is_send_failed_maybe_delivered_after_the_api_timeout(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """When OneBot never answers, the send fails as maybe delivered after about api_timeout_s."""
    onebot.ignore_next("send_group_msg")
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(SendFailed) as caught:
        await platform.send(GROUP, Text("hi"))
    elapsed = loop.time() - started
    assert (caught.value.maybe_delivered, str(caught.value), elapsed >= 0.25) == (
        True,
        f"OneBot did not answer send_group_msg for {GROUP} within 0.3 s",
        True,
    )
    assert await platform.send(GROUP, Text("again")) == str(list(onebot.posted)[-1])


async def test_sending_while_disconnected_fails_and_works_after_reconnect(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """With OneBot gone a send fails as not delivered; after it reconnects, sends work."""
    await onebot.close()
    await until(lambda: not platform.connected.is_set())
    with pytest.raises(SendFailed) as caught:
        await platform.send(GROUP, Text("hello?"))
    assert (caught.value.maybe_delivered, "OneBot not connected" in str(caught.value)) == (
        False,
        True,
    )
    await onebot.connect()
    await platform.wait_connected(2.0)
    message_id = await platform.send(GROUP, Text("back"))
    assert (message_id, platform.self_id) == (str(list(onebot.posted)[-1]), str(BOT_ID))


async def test_sending_before_any_connection_fails_not_delivered(platform: QQPlatform) -> None:
    """Before OneBot ever connected, a send fails as certainly not delivered."""
    with pytest.raises(SendFailed) as caught:
        await platform.send(PRIVATE, Text("hi"))
    assert caught.value.maybe_delivered is False


async def test_show_typing_uses_napcat_input_status_in_private_chats_only(
    platform: QQPlatform, onebot: FakeOneBot
) -> None:
    """Typing sets NapCat's input status for a private chat and does nothing for a group."""
    await platform.show_typing(GROUP)
    await platform.show_typing(PRIVATE)
    calls = await onebot.wait_for_call("set_input_status")
    assert [c.params for c in calls] == [{"user_id": 42, "event_type": 1}]
    assert platform.typing_refresh_s == 5.0


async def test_show_typing_stops_after_an_unsupported_action(sink: RecordingSink) -> None:
    """An implementation without set_input_status gets one attempt, then no typing at all."""
    async with make_platform() as qq:
        await qq.start(sink)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID, unsupported={"set_input_status"}) as fake:
            await qq.wait_connected(2.0)
            await qq.show_typing(PRIVATE)
            await qq.show_typing(PRIVATE)
            assert (len(fake.calls_of("set_input_status")), qq.typing_refresh_s) == (1, None)


# --- security and configuration ------------------------------------------------------------


@pytest.mark.parametrize("offered", [None, "wrong-token-123"])
async def test_a_missing_or_wrong_token_is_refused(
    sink: RecordingSink, offered: str | None
) -> None:
    """With a token configured, a client without it or with another one is turned away."""
    async with make_platform(access_token=TOKEN) as qq:
        await qq.start(sink)
        with pytest.raises(InvalidStatus) as caught:
            await FakeOneBot(qq.ws_url, self_id=BOT_ID, access_token=offered).connect()
        refused_connected = (qq.connected.is_set(), list(sink.ready))
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID, access_token=TOKEN) as good:
            await qq.wait_connected(2.0)
            await good.send_private_message(USER_ID, "ok")
            await sink.wait_for(1)
    assert (caught.value.response.status_code, refused_connected) == (403, (False, []))
    assert sink.ready == ["qq"]  # the good client, once


async def http_post(port: int, path: str, body: dict[str, Any]) -> int:
    """POST JSON to the platform's port like OneBot's HTTP reporting; return the status."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Self-ID: {BOT_ID}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


async def test_http_posts_are_not_served(platform: QQPlatform, sink: RecordingSink) -> None:
    """Only the reverse WebSocket is served: HTTP-posted events get 404 and go nowhere."""
    event = {
        "post_type": "message",
        "message_type": "private",
        "sub_type": "friend",
        "time": SENT_AT,
        "self_id": BOT_ID,
        "user_id": USER_ID,
        "message_id": 1,
        "message": "forged",
        "raw_message": "forged",
        "font": 14,
        "sender": {"user_id": USER_ID, "nickname": "x"},
    }
    statuses = [
        await http_post(platform.port, path, event) for path in ("/onebot/v11/", "/onebot/v11/http")
    ]
    async with FakeOneBot(platform.ws_url, self_id=BOT_ID) as fake:
        await platform.wait_connected(2.0)
        await fake.send_private_message(USER_ID, "real")
        received = await sink.wait_for(1)
    assert (statuses, [m.text for m in received]) == ([404, 404], ["real"])


def test_an_open_host_without_a_token_is_a_config_error() -> None:
    """Listening on 0.0.0.0 without an access token is refused at construction."""
    with pytest.raises(ConfigError) as caught:
        make_platform(host="0.0.0.0", access_token=None)
    assert "qq.access_token_env" in str(caught.value)
    assert make_platform(host="0.0.0.0", access_token=TOKEN).name == "qq"


async def test_a_port_in_use_is_a_config_error(sink: RecordingSink) -> None:
    """Starting on a port that is taken raises ConfigError naming the address."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        qq = make_platform(port=port)
        with pytest.raises(ConfigError) as caught:
            await qq.start(sink)
    assert f"127.0.0.1:{port}" in str(caught.value)
    await qq.stop()


async def test_only_one_platform_runs_at_a_time(platform: QQPlatform, sink: RecordingSink) -> None:
    """A second platform cannot start while one runs: nonebot is one per process."""
    with pytest.raises(RuntimeError) as caught:
        await make_platform().start(sink)
    assert "another QQPlatform" in str(caught.value)


async def test_start_and_stop_twice_in_one_process() -> None:
    """A platform can be started, used and stopped, then another one likewise."""
    texts: list[str] = []
    for round_ in range(2):
        sink = RecordingSink()
        qq = make_platform()
        await qq.start(sink)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID) as fake:
            await qq.wait_connected(2.0)
            await fake.send_private_message(USER_ID, f"round {round_}")
            texts.extend(m.text for m in await sink.wait_for(1))
            await qq.send(PRIVATE, Text("pong"))
        await qq.stop()
        await qq.stop()  # idempotent
    assert texts == ["round 0", "round 1"]


async def test_serving_leaves_signal_handling_to_the_process(sink: RecordingSink) -> None:
    """uvicorn runs inside the platform without taking over SIGINT or SIGTERM."""
    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    async with make_platform() as qq:
        await qq.start(sink)
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID):
            await qq.wait_connected(2.0)
            during = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    assert during == before


def test_the_platform_describes_qq() -> None:
    """QQ's name, text limit and pacing are what the core paces by."""
    qq: Platform = make_platform()
    assert (qq.name, qq.text_limit, qq.limits) == (
        "qq",
        4500,
        PacingLimits(chat_interval_s=1.0, group_per_minute=20, overall_per_s=1.0),
    )


_STRAY_ENV_SCRIPT = """
import asyncio, json
import nonebot
from adapters.qq.platform import QQPlatform
from fakes.onebot import FakeOneBot

class Sink:
    def __init__(self):
        self.texts = []
    async def receive_many(self, messages):
        self.texts += [message.text for message in messages]
    async def receive_edit(self, chat, message_id, text):
        pass
    def platform_ready(self, platform):
        pass

async def main():
    sink = Sink()
    qq = QQPlatform(host="127.0.0.1", port=0, access_token=None, bot_name="小满")
    await qq.start(sink)
    async with FakeOneBot(qq.ws_url, self_id=10001) as fake:  # no token offered
        await qq.wait_connected(3.0)
        await fake.send_private_message(42, "hi")
        while not sink.texts:
            await asyncio.sleep(0.01)
    await qq.stop()
    driver = nonebot.get_driver()
    config = driver.config
    print(json.dumps({
        "driver": driver.type,
        "host": str(config.host),
        "port": config.port,
        "superusers": sorted(config.superusers),
        "nickname": sorted(config.nickname),
        "command_start": sorted(config.command_start),
        "api_timeout": config.api_timeout,
        "extra": sorted(config.model_extra or {}),
        "texts": sink.texts,
    }))

asyncio.run(main())
"""


def test_stray_environment_variables_and_dotenv_files_change_nothing(tmp_path: Path) -> None:
    """nonebot settings in the environment or a .env file in the cwd are ignored."""
    (tmp_path / ".env").write_text(
        'ENVIRONMENT=dev\nDRIVER=~none\nPORT=2\nSUPERUSERS=["999"]\n'
        "ONEBOT_ACCESS_TOKEN=dotenv-token-1\nFASTAPI_DOCS_URL=/docs\n",
        encoding="utf-8",
    )
    (tmp_path / ".env.dev").write_text("HOST=0.0.0.0\nCUSTOM_SETTING=1\n", encoding="utf-8")
    stray = {
        "HOST": "0.0.0.0",
        "PORT": "1",
        "DRIVER": "~httpx",
        "SUPERUSERS": '["123"]',
        "NICKNAME": '["小满"]',
        "COMMAND_START": '["!"]',
        "API_TIMEOUT": "0.001",
        "ENVIRONMENT": "dev",
        "ONEBOT_ACCESS_TOKEN": "stray-token-1",
        "ONEBOT_V11_ACCESS_TOKEN": "stray-token-2",
    }
    env = {**os.environ, **stray, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _STRAY_ENV_SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "driver": "fastapi+httpx+websockets",
        "host": "127.0.0.1",
        "port": 8080,
        "superusers": [],
        "nickname": [],
        "command_start": ["/"],
        "api_timeout": 60.0,
        "extra": [],
        "texts": ["hi"],
    }


_IMPORT_SCRIPT = """
import importlib, json, sys
import nonebot, nonebot.log
from loguru import logger

added = logger.add(sys.stderr)
importlib.import_module(sys.argv[1])
try:
    nonebot.get_driver()
    driver = "initialised"
except ValueError as error:
    driver = str(error)
kept = []
for handler_id in (nonebot.log.logger_id, added):
    try:
        logger.remove(handler_id)
        kept.append(True)
    except ValueError:
        kept.append(False)
print(json.dumps({"driver": driver, "handlers_kept": kept}))
"""


@pytest.mark.parametrize(
    "module",
    [
        "adapters.qq",
        "adapters.qq.normalise",
        "adapters.qq.errors",
        "adapters.qq.wire",
        "adapters.qq.platform",
    ],
)
def test_importing_a_qq_module_starts_nothing(module: str) -> None:
    """Importing a QQ module leaves nonebot uninitialised and every loguru sink in place."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_SCRIPT, module],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "driver": "NoneBot has not been initialized.",
        "handlers_kept": [True, True],
    }


_LATE_INIT_SCRIPT = """
from loguru import logger
from adapters.qq.platform import QQPlatform
from bot.log import setup_logging

setup_logging(level="DEBUG", log_dir=None, secrets=["sekrit-value-4821"])
QQPlatform(host="127.0.0.1", port=0, access_token=None, bot_name="小满")
logger.bind(chat="qq:group:500").info("the key is sekrit-value-4821")
"""


def test_a_platform_built_after_logging_is_set_up_keeps_pacebots_log_lines() -> None:
    """nonebot's set-up neither replaces the redacting log format nor adds lines of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _LATE_INIT_SCRIPT],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (len(lines), lines[-1].split(" | ")[2:]) == (
        1,
        ["qq:group:500            ", "the key is ***"],
    )


@pytest.fixture
def debug_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[LogLines]:
    """Capture every loguru line and stdlib record at DEBUG, unredacted."""

    # A fresh redactor: the platform registers its token there, not with the one the
    # app's sinks use, so these lines show what would be logged without scrubbing.
    monkeypatch.setattr("adapters.qq.platform.redactor", Redactor())
    with captured_logs(stdlib_level=logging.DEBUG) as lines:
        yield lines


async def test_the_access_token_never_appears_in_debug_logs(
    debug_logs: LogLines, sink: RecordingSink
) -> None:
    """Connecting, refusing, receiving and sending log nothing that contains the token."""
    async with make_platform(access_token=TOKEN) as qq:
        await qq.start(sink)
        with pytest.raises(InvalidStatus):
            await FakeOneBot(qq.ws_url, self_id=BOT_ID, access_token="wrong-token-123").connect()
        async with FakeOneBot(qq.ws_url, self_id=BOT_ID, access_token=TOKEN) as fake:
            await qq.wait_connected(2.0)
            await fake.send_private_message(USER_ID, "hi")
            await sink.wait_for(1)
            await qq.send(PRIVATE, Text("hello"))
            fake.fail_next("send_private_msg")
            with pytest.raises(SendFailed):
                await qq.send(PRIVATE, Text("again"))
    text = "\n".join(debug_logs)
    assert (TOKEN in text, "DEBUG" in text, f"OneBot connected as {BOT_ID}" in text) == (
        False,
        True,
        True,
    )
