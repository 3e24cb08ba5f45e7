"""Profiles through the real core: each chat answered with its own persona and settings."""

from __future__ import annotations

from pathlib import Path

from bot.models import ChatKey, ChatKind
from fakes.harness import GROUP, PRIVATE, harness, replies_json
from fakes.openai_api import FakeLLMServer

OTHER_GROUP = ChatKey("test", ChatKind.GROUP, "-200")
PROFILES = [
    {"name": "teachers", "chats": ["test:group:-100"], "persona": "CANARY-TEACHER 你是老师。"},
    {
        "name": "gamers",
        "chats": ["test:group:-200"],
        "persona": "CANARY-GAMER 你是游戏搭子。",
        "language": "zh",
    },
]


async def test_two_groups_and_a_private_chat_answer_with_their_own_personas(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Each group's prompt holds its profile's persona and no other; the private chat,
    which no profile names, holds the base persona; traces and /status name the profile."""
    for text in ("好的", "来了", "在呢"):
        llm.reply_json(replies_json(text))
    base = {"persona": "CANARY-BASE 你是小满。", "admins": ["test:7"]}
    async with harness(tmp_path, llm, profiles=PROFILES, bot=base) as bot:
        for chat in (GROUP, OTHER_GROUP, PRIVATE):
            await bot.say("小满 在吗", chat=chat, addresses_bot=True)
            await bot.settle()
        traces = [(await bot.ops.traces.recent(chat, count=1))[0] for chat in (GROUP, PRIVATE)]
        status = await bot.command("/status", chat=OTHER_GROUP)
    canaries = [
        sorted(word for word in str(request["messages"][0]["content"]).split() if "CANARY" in word)
        for request in llm.requests[:3]
    ]
    assert canaries == [["CANARY-TEACHER"], ["CANARY-GAMER"], ["CANARY-BASE"]]
    assert [shown.trace.profile for shown in traces] == ["teachers", ""]
    assert "配置方案：gamers" in status.splitlines()
