"""nonebot plugins on the official QQ bot: pacebot with nonebot-adapter-qq ↔ the QQ Open
Platform fake, with the plugins the tests write (``fakes/plugins.py``).

The same plugins as on OneBot QQ (``tests/test_plugins.py``): nonebot is set up once per
process and a plugin, once loaded, stays loaded, so what a plugin records is read as what
changed since a test began.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from fakes.clock import Clock
from fakes.harness import wait_until
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid

GROUP, ALICE = openid("group-1"), openid("alice")


pytestmark = pytest.mark.usefixtures("plugin_folder")


@pytest.fixture
async def platform() -> AsyncIterator[FakeQQOpenPlatform]:
    """The QQ Open Platform, its clock standing still."""
    async with FakeQQOpenPlatform(clock=Clock(running=False)) as server:
        yield server


def plugin_config(tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform) -> Config:
    plugins = {"nonebot": ["pacebot_test_plugin"]}
    return official_config(tmp_path, llm, platform, tables={"plugins": plugins})


def sent(platform: FakeQQOpenPlatform, target: str) -> list[tuple[Any, ...]]:
    """What the platform took for ``target``: (content, msg_id, msg_seq)."""
    return [(s.content, s.msg_id, s.msg_seq) for s in platform.sent_to(target)]


def stored(config: Config) -> list[tuple[str, str, int]]:
    """Each stored message, oldest first: who, what, and whether the bot said it."""
    with sqlite3.connect(config.database_path) as db:
        rows = db.execute("SELECT sender_name, text, from_bot FROM messages ORDER BY id")
        return [(str(name), str(words), int(from_bot)) for name, words, from_bot in rows]


def recorded(name: str) -> list[str]:
    """What the test plugin's matchers recorded; nothing before the plugin is first loaded."""
    module = sys.modules.get("pacebot_test_plugin")
    seen: list[str] = getattr(module, name) if module is not None else []
    return seen


async def test_a_plugins_blocking_command_is_a_passive_reply_and_costs_no_call(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """A C2C /天气 reaches the plugin's matchers as the QQ adapter's event: the plugin
    answers it as passive reply 1 to that message, the LLM is asked nothing, the command
    is kept as context and the plugin's words as the bot's."""
    config = plugin_config(tmp_path, llm, platform)
    seen_before = len(recorded("SEEN"))
    async with pacebot_on(config, platform) as (core, _):
        said = await platform.c2c_message(ALICE, "/天气", username="小明")
        await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 1)
        await core.inbox.drain()
        await wait_until(lambda: len(stored(config)) == 2)
        waiting = await core.ops.status.waiting_messages(ChatKey("qqbot", ChatKind.PRIVATE, ALICE))
    assert (sent(platform, ALICE), len(llm.requests), waiting) == (
        [("晴，25°C", said.message_id, 1)],
        0,
        0,
    )
    assert stored(config) == [("小明", "/天气", 0), ("小满", "晴，25°C", 1)]
    assert recorded("SEEN")[seen_before:] == ["/天气"]


async def test_a_plugin_and_pacebot_answering_one_message_never_share_a_number(
    tmp_path: Path, llm: FakeLLMServer, platform: FakeQQOpenPlatform
) -> None:
    """A group @ of /回声 is echoed by the plugin's non-blocking matcher and answered by
    pacebot too: two passive replies to that message, numbered 1 and 2 from the store,
    none refused, and the plugin's words kept as the bot's."""
    config = plugin_config(tmp_path, llm, platform)
    async with pacebot_on(config, platform) as (core, _):
        llm.reply_json({"replies": [{"content": "回声真好玩", "send_delay_seconds": 0}]})
        asked = await platform.group_at(GROUP, ALICE, "/回声 你好", username="小明")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 2)
        await core.inbox.drain()
        await wait_until(lambda: len(stored(config)) == 3)
    replies = sorted(sent(platform, GROUP), key=lambda reply: reply[2])
    assert [(msg_id, seq) for _, msg_id, seq in replies] == [
        (asked.message_id, 1),
        (asked.message_id, 2),
    ]
    assert sorted(content for content, _, _ in replies) == ["回声: 你好", "回声真好玩"]
    assert (platform.refused(), len(llm.requests)) == ([], 1)
    assert ("小满", "回声: 你好", 1) in stored(config)
