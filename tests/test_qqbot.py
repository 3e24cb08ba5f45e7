"""The official QQ bot end to end: pacebot with nonebot-adapter-qq ↔ the QQ Open Platform fake.

pacebot runs in the test's process (its nonebot driver is an HTTP and WebSocket client as
well as OneBot's server), against :class:`~fakes.qq_open_platform.FakeQQOpenPlatform` and
the fake LLM; the platform's clock stands still unless a test moves it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from adapters.audio import sniff
from bot.models import ChatKey, ChatKind
from fakes.clock import Clock
from fakes.harness import user_prompt, wait_waiting
from fakes.image_host import ImageHost
from fakes.images import jpeg
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, image, openid
from tests.log_capture import captured_logs

GROUP = openid("group-1")
ALICE, BOB = openid("alice"), openid("bob")
GROUP_CHAT = ChatKey("qqbot", ChatKind.GROUP, GROUP)


@pytest.fixture
async def platform() -> AsyncIterator[FakeQQOpenPlatform]:
    """The QQ Open Platform, its clock standing still between a test's jumps."""
    async with FakeQQOpenPlatform(clock=Clock(running=False)) as server:
        yield server


def sent(platform: FakeQQOpenPlatform, target: str) -> list[tuple[Any, ...]]:
    """What the platform took for ``target``: (content, msg_id, msg_seq)."""
    return [(s.content, s.msg_id, s.msg_seq) for s in platform.sent_to(target)]


async def test_a_private_message_is_answered_as_a_passive_reply(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A C2C message is a private chat qqbot:private:<openid>; its two replies name its
    msg_id with msg_seq 1 and 2; the contract offers no reactions (the platform has none)."""
    async with (
        FakeQQOpenPlatform(clock=Clock(running=False)) as platform,
        pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _),
    ):
        llm.reply_json({"replies": [{"content": "在呢"}, {"content": "怎么啦"}]})
        said = await platform.c2c_message(ALICE, "在吗", username="小明")
        await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 2)
        await core.inbox.drain()
    assert sent(platform, ALICE) == [
        ("在呢", said.message_id, 1),
        ("怎么啦", said.message_id, 2),
    ]
    assert user_prompt(llm.requests[0]).splitlines()[-1].endswith("] 小明: 在吗")
    contract = str(llm.requests[0]["messages"][0]["content"])
    assert ('"content"' in contract, '"react"' in contract) == (True, False)


async def test_group_at_and_a_mention_address_the_bot_and_other_talk_is_context(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """In a group that grants every message, unaddressed talk is stored as context (no
    call); an @ (GROUP_AT_MESSAGE_CREATE) and a mention that ``is_you`` are answered,
    each as a passive reply to itself; people are named by the event's username or as
    "member" and their openid's head."""
    platform.grant_all_messages(GROUP)
    config = official_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform) as (core, _):
        await platform.group_message(GROUP, BOB, "今天好热", username=None)
        await wait_waiting(core, GROUP_CHAT, 1)
        await core.inbox.drain()
        assert llm.requests == []
        llm.reply_json({"replies": [{"content": "是啊"}]})
        asked = await platform.group_at(GROUP, ALICE, "你觉得呢", username="小明")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 1)
        await core.inbox.drain()
        llm.reply_json({"replies": [{"content": "在"}]})
        mentioned = await platform.group_message(GROUP, BOB, "在吗", mentions_bot=True)
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 2)
        await core.inbox.drain()
    assert sent(platform, GROUP) == [
        ("是啊", asked.message_id, 1),
        ("在", mentioned.message_id, 1),
    ]
    first = user_prompt(llm.requests[0])
    assert f"member {BOB[:4].lower()}: 今天好热" in first.split("New messages")[0]
    assert first.splitlines()[-1].endswith("] 小明: 你觉得呢")
    assert user_prompt(llm.requests[1]).splitlines()[-1].endswith("] 群友: 在吗")


async def test_seven_texts_arrive_as_five_messages_holding_every_text(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """A plan of seven texts to one message goes out as five passive replies (msg_seq 1-5),
    the last three texts joined in the fifth, and its trace says so."""
    texts = [f"第{n}句" for n in range(1, 8)]
    async with pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _):
        llm.reply_json({"replies": [{"content": t, "send_delay_seconds": 0.01} for t in texts]})
        said = await platform.c2c_message(ALICE, "讲个故事")
        await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 5)
        await core.inbox.drain()
        [shown] = await core.ops.traces.recent(ChatKey("qqbot", ChatKind.PRIVATE, ALICE), count=1)
    assert sent(platform, ALICE) == [
        *[(t, said.message_id, n) for n, t in enumerate(texts[:4], start=1)],
        ("第5句\n第6句\n第7句", said.message_id, 5),
    ]
    assert (shown.trace.guards, platform.refused()) == (("3 texts joined into message 5",), [])


async def test_a_message_past_its_window_is_not_answered_and_says_why_in_the_trace(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A group message the platform dated six minutes ago can no longer be answered: the
    plan is dropped and traced, nothing is posted (no error text, nothing proactive)."""
    start = datetime.now(UTC) - timedelta(minutes=6)
    async with FakeQQOpenPlatform(clock=Clock(start, running=False)) as platform:
        async with pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _):
            llm.reply_json({"replies": [{"content": "晚了"}]})
            said = await platform.group_at(GROUP, ALICE, "还在吗")
            await llm.wait_for_requests(1)
            await core.inbox.drain()
            [shown] = await core.ops.traces.recent(GROUP_CHAT, count=1)
        sends = platform.sends
    closes = (said_at(said) + timedelta(minutes=5)).strftime("%H:%M:%S")
    assert sends == []
    assert (shown.trace.why, [d.reason for d in shown.trace.dropped]) == (
        "silent",
        [f"the reply window of message {said.message_id} closed at {closes}"],
    )


async def test_a_refused_passive_reply_is_dropped_not_retried_or_sent_proactively(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """When the platform answers a reply with "window expired" (40034005), the item is
    dropped at once: no retry, no message without msg_id, nothing said about it."""
    async with pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _):
        platform.fail_next("messages", code=40034005, message="回复消息已过期")
        llm.reply_json({"replies": [{"content": "来晚了"}]})
        await platform.c2c_message(ALICE, "在吗")
        await platform.wait_until(lambda: platform.sends)
        await core.inbox.drain()
        [shown] = await core.ops.traces.recent(ChatKey("qqbot", ChatKind.PRIVATE, ALICE), count=1)
    assert [(s.content, s.code) for s in platform.sends] == [("来晚了", 40034005)]
    assert [(f.content, f.state) for f in shown.fates] == [("来晚了", "dropped")]


async def test_whoami_names_the_openid_and_an_admin_is_named_by_it(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """/whoami in a group answers the member's qqbot:<openid>; with that id in bot.admins
    the member's /pop runs, while another member's is refused; each answer is a passive
    reply to its command and the LLM is asked nothing."""
    config = official_config(
        tmp_path, llm, platform, tables={"bot": {"admins": [f"qqbot:{ALICE}"]}}
    )
    async with pacebot_on(config, platform) as (core, _):
        who = await platform.group_at(GROUP, BOB, "/whoami")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 1)
        refused = await platform.group_at(GROUP, BOB, "/pop")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 2)
        allowed = await platform.group_at(GROUP, ALICE, "/pop")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 3)
        await core.inbox.drain()
    answers = sent(platform, GROUP)
    assert answers[0] == (
        f'You are qqbot:{BOB} (to make you an admin: admins = ["qqbot:{BOB}"] under [bot]).',
        who.message_id,
        1,
    )
    assert answers[1:] == [
        ("Sorry, only admins can use that command.", refused.message_id, 1),
        ("Nothing to pop: only the initial persona is left.", allowed.message_id, 1),
    ]
    assert llm.requests == []


def said_at(dispatched: Any) -> datetime:
    return datetime.fromisoformat(dispatched.data["timestamp"]).astimezone(UTC)


async def test_a_picture_on_a_private_address_is_not_fetched_and_the_batch_answered(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """With vision on, a picture whose URL names a loopback address is refused (only the
    platform's public media hosts are fetched): the model sees the placeholder, the host
    is never asked, the message is answered."""
    config = official_config(tmp_path, llm, platform)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"vision": True})})
    with captured_logs() as logs:
        async with ImageHost() as host, pacebot_on(config, platform) as (core, _):
            url = host.serve("/cat.jpg", jpeg(64, 48))
            llm.reply_json({"replies": [{"content": "看不到图呢"}]})
            said = await platform.c2c_message(ALICE, "看这个", attachments=[image(url)])
            await platform.wait_until(lambda: platform.sent_to(ALICE))
            await core.inbox.drain()
    assert host.requests == []
    assert logs.about("left as a placeholder") == [
        f"INFO picture of message {said.message_id} left as a placeholder: QQ picture "
        "host '127.0.0.1' is at 127.0.0.1, a private or local address"
    ]
    assert user_prompt(llm.requests[0]).splitlines()[-1].endswith(": 看这个 [image]")
    assert "image_url" not in str(llm.requests[0]["messages"])


async def test_a_voice_item_goes_up_as_silk_then_as_a_passive_media_reply(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """With voice.speak on, a voice item is spoken as WAV, encoded to SILK, uploaded to
    /v2/users/{id}/files (file_type 3) and sent as msg_type 7 answering the message."""
    config = official_config(tmp_path, llm, platform)
    config = config.model_copy(update={"voice": config.voice.model_copy(update={"speak": True})})
    async with pacebot_on(config, platform) as (core, _):
        llm.reply_json({"replies": [{"voice": "早点睡"}]})
        said = await platform.c2c_message(ALICE, "晚安")
        await platform.wait_until(lambda: platform.sent_to(ALICE))
        await core.inbox.drain()
    [upload] = platform.uploads
    assert [r["response_format"] for r in llm.speech_requests] == ["wav"]
    assert (upload.file_type, sniff(upload.data or b"")) == (3, "silk")
    assert [(s.msg_type, s.file_info, s.msg_id, s.msg_seq) for s in platform.sent_to(ALICE)] == [
        (7, upload.file_info, said.message_id, 1)
    ]
