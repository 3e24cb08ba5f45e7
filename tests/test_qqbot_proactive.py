"""What the official QQ bot says without being asked: reminders ride a fresh passive
window where they can, else go as messages that answer nothing, only where allowed and
within the monthly quota."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from adapters.qqbot.outbound import PLATFORM_ZONE
from bot.models import ChatKey, ChatKind
from fakes.clock import Clock
from fakes.harness import wait_until
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid
from tests.log_capture import captured_logs

ALICE, GROUP = openid("alice"), openid("group-1")


def remind(note: str, *, after_s: float = 0.2) -> dict[str, Any]:
    """A plan that says "ok" and promises a reminder ``after_s`` from now."""
    later = {"note": note, "kind": "remind", "in_seconds": after_s}
    return {"replies": [{"content": "好"}, {"later": later}]}


@pytest.fixture
async def earlier() -> AsyncIterator[FakeQQOpenPlatform]:
    """A platform whose clock stands two hours back: every message it delivers is past
    its passive window by the time pacebot answers it."""
    clock = Clock(datetime.now(UTC) - timedelta(hours=2), running=False)
    async with FakeQQOpenPlatform(clock=clock) as server:
        yield server


async def test_a_reminder_answers_its_askers_fresh_message(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """While the asker's message is inside its window, the reminder is one more passive
    reply to it (msg_seq 2), counting nothing against the monthly quota."""
    async with (
        FakeQQOpenPlatform(clock=Clock(running=False)) as platform,
        pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _),
    ):
        llm.reply_json(remind("提醒喝水"))
        llm.reply_json({"replies": [{"content": "该喝水了"}]})
        said = await platform.c2c_message(ALICE, "等下提醒我喝水")
        await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 2)
        await core.inbox.drain()
    assert [(s.content, s.msg_id, s.msg_seq) for s in platform.sent_to(ALICE)] == [
        ("好", said.message_id, 1),
        ("该喝水了", said.message_id, 2),
    ]


async def test_reminders_without_a_window_go_as_messages_that_answer_nothing_within_quota(
    tmp_path: Path, llm: FakeLLMServer, earlier: FakeQQOpenPlatform
) -> None:
    """With the asker's message past its window, a reminder in C2C is sent without
    msg_id, as one message; beyond ``proactive_per_month`` the next is dropped."""
    config = official_config(tmp_path, llm, earlier, proactive_per_month=1)
    chat = ChatKey("qqbot", ChatKind.PRIVATE, ALICE)
    with captured_logs() as logs:
        async with pacebot_on(config, earlier) as (core, _):
            llm.reply_json(remind("第一次"))
            llm.reply_json({"replies": [{"content": "第一次到了"}, {"content": "记得哦"}]})
            await earlier.c2c_message(ALICE, "提醒我两次")
            await earlier.wait_until(lambda: earlier.sent_to(ALICE))
            await core.inbox.drain()
            llm.reply_json(remind("第二次"))
            llm.reply_json({"replies": [{"content": "第二次到了"}]})
            await earlier.c2c_message(ALICE, "再提醒一次")
            await llm.wait_for_requests(4, timeout=5)
            await core.inbox.drain()
            traces = await core.ops.traces.recent(chat, count=1)
    assert [(s.content, s.msg_id) for s in earlier.sent_to(ALICE)] == [("第一次到了\n记得哦", None)]
    assert [(f.content, f.state) for f in traces[0].fates] == [("第二次到了", "dropped")]
    month = datetime.now(UTC).astimezone(PLATFORM_ZONE).strftime("%Y-%m")
    assert logs.about("are spent") == [
        f"WARNING reply 2 refused for good ({chat}: the 1 message(s) that answer nothing of "
        f"{month} are spent (qq_official.proactive_per_month)); dropping it"
    ]


async def test_a_group_gets_no_message_that_answers_nothing_unless_its_owner_allowed_it(
    tmp_path: Path, llm: FakeLLMServer, earlier: FakeQQOpenPlatform
) -> None:
    """A group reminder with no window open is dropped while ``proactive`` is off, and
    sent without msg_id once it is on."""
    earlier.grant_proactive(GROUP)
    async with pacebot_on(official_config(tmp_path, llm, earlier), earlier) as (core, _):
        llm.reply_json(remind("开会"))
        llm.reply_json({"replies": [{"content": "开会啦"}]})
        await earlier.group_at(GROUP, ALICE, "五分钟后提醒开会")
        await llm.wait_for_requests(2, timeout=5)
        await core.inbox.drain()
    refused_sends = list(earlier.sends)
    config = official_config(tmp_path, llm, earlier, proactive=True)
    async with pacebot_on(config, earlier) as (core, _):
        llm.reply_json(remind("散会"))
        llm.reply_json({"replies": [{"content": "散会啦"}]})
        await earlier.group_at(GROUP, ALICE, "再提醒散会")
        await wait_until(lambda: earlier.sent_to(GROUP))
        await core.inbox.drain()
    assert refused_sends == []
    assert [(s.content, s.msg_id) for s in earlier.sent_to(GROUP)] == [("散会啦", None)]
