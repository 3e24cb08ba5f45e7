"""Profiles and tools in the official QQ bot's chats: pacebot with nonebot-adapter-qq ↔ the
QQ Open Platform fake, a fake SearXNG for the one tool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from bot.models import ChatKey, ChatKind
from fakes.clock import Clock
from fakes.harness import replies_json
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid
from fakes.search_engine import FakeSearch

GROUP, ALICE = openid("group-1"), openid("alice")
GROUP_CHAT = ChatKey("qqbot", ChatKind.GROUP, GROUP)
PROFILES = [
    {
        "name": "qq groups",
        "chats": ["qqbot:group:*"],
        "persona": "CANARY-GROUPS 你是群里的小满。",
        "tools": [],
    }
]


@pytest.fixture
async def search() -> AsyncIterator[FakeSearch]:
    async with FakeSearch() as engine:
        yield engine


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def canaries(request: dict[str, Any]) -> list[str]:
    """The persona canaries of a request's system prompt."""
    return [word for word in str(request["messages"][0]["content"]).split() if "CANARY" in word]


async def test_a_qqbot_group_profile_gives_its_persona_and_tools_and_c2c_keeps_the_base(
    tmp_path: Path, llm: FakeLLMServer, search: FakeSearch
) -> None:
    """A profile for qqbot:group:* answers a group @ with its persona and no tools (its
    allow-list is empty); a C2C chat, which no profile names, gets the base persona and
    web_search; the group's trace names the profile."""
    tables = {
        "bot": {"persona": "CANARY-BASE 你是小满。"},
        "profiles": PROFILES,
        "tools": {
            "enabled": True,
            "web_search": {"provider": "searxng", "base_url": search.base_url},
        },
    }
    async with (
        FakeQQOpenPlatform(clock=Clock(running=False)) as platform,
        pacebot_on(official_config(tmp_path, llm, platform, tables=tables), platform) as (core, _),
    ):
        llm.reply_json(replies_json("在呢"))
        await platform.group_at(GROUP, ALICE, "在吗")
        await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 1)
        llm.reply_json(replies_json("怎么啦"))
        await platform.c2c_message(ALICE, "在吗")
        await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 1)
        await core.inbox.drain()
        [shown] = await core.ops.traces.recent(GROUP_CHAT, count=1)
    assert [(canaries(r), offered(r)) for r in llm.requests] == [
        (["CANARY-GROUPS"], []),
        (["CANARY-BASE"], ["web_search"]),
    ]
    assert shown.trace.profile == "qq groups"
