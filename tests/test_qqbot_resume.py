"""Nothing lost on the official QQ bot: the gateway session is resumed after a reconnect
and after a restart, and what the platform redelivers is stored and answered once."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from bot.config.model import Config
from bot.models import GatewaySession
from fakes.clock import Clock
from fakes.harness import wait_until
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid
from tests.log_capture import captured_logs

ALICE = openid("alice")


@pytest.fixture
async def platform() -> AsyncIterator[FakeQQOpenPlatform]:
    async with FakeQQOpenPlatform(clock=Clock(running=False), heartbeat_interval_ms=50) as server:
        yield server


def stored_messages(config: Config) -> list[str]:
    with sqlite3.connect(config.database_path) as db:
        rows = db.execute("SELECT text FROM messages WHERE from_bot = 0 ORDER BY id")
        return [text for (text,) in rows]


def kept_session(config: Config) -> tuple[str, int] | None:
    with sqlite3.connect(config.database_path) as db:
        rows = db.execute("SELECT session_id, seq FROM gateway_sessions").fetchall()
    return rows[0] if rows else None


async def test_a_dropped_connection_is_resumed_and_what_was_said_meanwhile_answered(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """The gateway drops; a message sent meanwhile waits in the session; pacebot resumes
    (op 6) with its session and last sequence and answers that message passively."""
    config = official_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform) as (core, _):
        session = platform.session_id
        await platform.drop_connection()
        llm.reply_json({"replies": [{"content": "回来了"}]})
        meanwhile = await platform.c2c_message(ALICE, "还在吗？")
        await platform.wait_until(lambda: platform.sent_to(ALICE))
        await core.inbox.drain()
    assert meanwhile.delivery == "queued"
    assert [(r.session_id, r.accepted) for r in platform.resumes] == [(session, True)]
    assert len(platform.identifies) == 1
    assert [(s.content, s.msg_id) for s in platform.sent_to(ALICE)] == [
        ("回来了", meanwhile.message_id)
    ]


async def test_after_a_restart_the_stored_session_is_resumed(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """pacebot stops; what a chatter says while it is down is redelivered when the next
    start resumes the stored session, and answered; no second Identify."""
    config = official_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform) as (core, _):
        llm.reply_json({"replies": [{"content": "在"}]})
        first = await platform.c2c_message(ALICE, "在吗？")
        await platform.wait_until(lambda: platform.sent_to(ALICE))
        await core.inbox.drain()
    session = platform.session_id
    while_down = await platform.c2c_message(ALICE, "刚才那个呢？")
    with captured_logs() as logs:
        async with pacebot_on(config, platform) as (core, _):
            llm.reply_json({"replies": [{"content": "说完了"}]})
            await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 2)
            await core.inbox.drain()
    assert while_down.delivery == "queued"
    assert [(r.session_id, r.seq, r.accepted) for r in platform.resumes] == [
        (session, first.seq, True)
    ]
    assert (len(platform.identifies), stored_messages(config)) == (1, ["在吗？", "刚才那个呢？"])
    assert kept_session(config) == (session, (while_down.seq or 0) + 1)  # RESUMED counts
    assert logs.tracebacks() == []
    assert logs.about("gateway resumed") == [
        "INFO QQ bot running as 小满: gateway resumed (group messages: all)"
    ]


async def test_redelivered_events_are_stored_and_answered_once(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """Resumed from a sequence older than what was stored (a kill between storing and
    keeping the sequence), the platform sends the message again: it is not stored or
    answered a second time."""
    config = official_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform) as (core, _):
        llm.reply_json({"replies": [{"content": "好"}]})
        await platform.c2c_message(ALICE, "一次")
        await platform.wait_until(lambda: platform.sent_to(ALICE))
        await core.inbox.drain()
        ready = GatewaySession(str(platform.session_id), 1, platform.bot_user_id, "小满")
    async with pacebot_on(config, platform, stored=ready) as (core, _):
        await platform.wait_until(lambda: platform.resumes)
        await core.inbox.drain()
    assert [r.seq for r in platform.resumes] == [1]
    assert (stored_messages(config), len(llm.requests), len(platform.sent_to(ALICE))) == (
        ["一次"],
        1,
        1,
    )


async def test_a_session_the_platform_forgot_is_said_lost_and_identified_afresh(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """When the platform no longer knows the stored session, its Resume gets Invalid
    Session: the log says what cannot be recovered, pacebot identifies afresh and keeps
    the new session."""
    config = official_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform):
        old = str(platform.session_id)
    platform.forget_sessions()
    lost = await platform.c2c_message(ALICE, "没人听见")
    with captured_logs() as logs:
        async with pacebot_on(config, platform):
            await platform.wait_until(lambda: len(platform.identifies) == 2)
            await wait_until(lambda: (kept_session(config) or (old,))[0] != old)
    assert (lost.delivery, [r.accepted for r in platform.resumes]) == ("withheld", [False])
    assert logs.tracebacks() == []
    assert logs.about("will not resume") == [
        f"WARNING QQ bot: the platform will not resume session {old} (last event stored: 1);"
        " what it sent after that cannot be recovered"
    ]
    assert kept_session(config) == (platform.session_id, 1)
