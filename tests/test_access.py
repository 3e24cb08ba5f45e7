"""Which chats and people the bot serves: ``[access]`` and ``/bot off``; a refused chat
stores nothing and costs nothing."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bot.models import ChatKey, ChatKind
from fakes.harness import GROUP, PRIVATE, harness, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

STRANGERS = ChatKey("test", ChatKind.GROUP, "-300")
FRIENDS = ChatKey("test", ChatKind.GROUP, "-400")
ADMIN = {"admins": ["test:7"]}


def stored(database: Path) -> list[tuple[str, str]]:
    """Return the chatters' messages the database holds, as (chat, text)."""
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT chat_key, text FROM messages WHERE from_bot = 0")
        return [(str(chat), str(text)) for chat, text in rows]


@pytest.mark.parametrize(
    ("access", "chat", "sender"),
    [
        ({"deny": ["test:group:-300"]}, STRANGERS, "5"),
        ({"groups": "allow", "allow": ["test:group:-400"]}, STRANGERS, "5"),
        ({"blocked": ["test:5"]}, FRIENDS, "5"),
    ],
    ids=["denied group", "group not allowed", "blocked person"],
)
async def test_a_refused_chat_or_person_stores_nothing_and_costs_nothing(
    tmp_path: Path, llm: FakeLLMServer, access: dict[str, Any], chat: ChatKey, sender: str
) -> None:
    """Two @s from a refused chat or person: no LLM call, no stored message, no command
    run; one log line names why. The friends' group is still answered."""
    llm.reply_json(replies_json("在的"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, access=access, bot=ADMIN) as bot:
            for text in ("小满 在吗", "小满 你好"):
                await bot.say(text, chat=chat, sender_id=sender, addresses_bot=True)
            await bot.say("/status", chat=chat, sender_id=sender)
            await bot.settle()
            await bot.say("小满 在吗", chat=FRIENDS, sender_id="6", addresses_bot=True)
            await bot.settle()
            kept = stored(bot.config.database_path)
    assert (len(llm.requests), kept) == (1, [(str(FRIENDS), "小满 在吗")])
    assert [line.split(": ", 1)[0] for line in logs.about("neither stored nor answered")] == [
        "INFO messages here are neither stored nor answered"
    ]


async def test_an_admin_switches_a_chat_off_and_on(tmp_path: Path, llm: FakeLLMServer) -> None:
    """``/bot off`` in a group: what follows is neither stored nor answered, and a member
    who is no admin cannot switch it on; ``/bot on`` serves it again, after a restart too."""
    llm.reply_json(replies_json("回来了"))
    async with harness(tmp_path, llm, bot=ADMIN) as bot:
        off = await bot.command("/bot off", chat=GROUP)
        await bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
        await bot.settle()
        refused = await bot.command("/bot on", chat=GROUP, sender_id="8")
        state = bot.ops.access.of(GROUP)
    async with harness(tmp_path, llm, bot=ADMIN) as bot:
        still_off = bot.ops.access.of(GROUP).switched_off
        on = await bot.command("/bot on", chat=GROUP)
        await bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
        await bot.settle()
        kept = stored(bot.config.database_path)
    expected_off = (
        f"Switched off in {GROUP}: its messages are neither stored nor answered until an admin"
        " says /bot on."
    )
    assert off == expected_off
    assert (state.switched_off, still_off, refused) == (
        True,
        True,
        "Sorry, only admins can use that command.",
    )
    assert on == f"Switched on in {GROUP}: its messages are stored and answered again."
    assert (kept, len(llm.requests)) == ([(str(GROUP), "小满 在吗")], 1)


async def test_a_private_chat_is_served_in_allow_mode(tmp_path: Path, llm: FakeLLMServer) -> None:
    """``groups = "allow"`` names the groups served; private chats are served all the same."""
    llm.reply_json(replies_json("在的"))
    access = {"groups": "allow", "allow": []}
    async with harness(tmp_path, llm, access=access) as bot:
        await bot.say("在吗", chat=PRIVATE)
        await bot.settle()
    assert len(llm.requests) == 1
