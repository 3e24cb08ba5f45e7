"""Profiles and access through a real ``pacebot run`` on Telegram: two groups and a private
chat answered with their own personas; a denied group and a blocked person cost nothing
and leave nothing stored."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path

from fakes.bot_api import FakeBotAPI
from fakes.harness import replies_json, start_run, user_prompt
from fakes.openai_api import FakeLLMServer
from fakes.process import console_config

KEY = "sk-profiles-process-key-123456"
ALICE, BOB = 1001, 1002  # Bob is blocked
TEACHERS, GAMERS, DENIED = -1001, -1002, -1003
TABLES = f"""
[access]
deny = ["telegram:group:{DENIED}"]
blocked = ["telegram:{BOB}"]

[[profiles]]
name = "teachers"
chats = ["telegram:group:{TEACHERS}"]
persona = "CANARY-TEACHER 你是老师。"

[[profiles]]
name = "gamers"
chats = ["telegram:group:{GAMERS}"]
persona = "CANARY-GAMER 你是游戏搭子。"
"""


def stored_texts(database: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        return [text for (text,) in db.execute("SELECT text FROM messages ORDER BY id")]


async def test_each_chat_answers_with_its_own_persona_and_refused_ones_cost_nothing(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Each group's answer has its profile's persona and no other, the private chat the
    base one; what the denied group and the blocked person say is neither stored nor sent
    to the LLM."""
    for text in ("好的", "来了", "在呢"):
        llm.reply_json(replies_json(text))
    telegram = f'\n[telegram]\nenabled = true\napi_base_url = "{api.base_url}"\n'
    config = console_config(
        tmp_path, llm.base_url, bot='persona = "CANARY-BASE 你是小满。"\n', tables=telegram + TABLES
    )
    env = {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, env)
    await api.wait_for("getUpdates", timeout=20)
    api.push_message(DENIED, "小满 被拒的群", chat_type="group", title="denied")
    api.push_message(BOB, "小满 被拉黑的人", user_id=BOB)
    api.push_message(TEACHERS, "小满 老师群", chat_type="group", title="teachers")
    api.push_message(GAMERS, "小满 游戏群", chat_type="group", title="gamers")
    api.push_message(ALICE, "私聊")
    await llm.wait_for_requests(3, timeout=10)
    await api.wait_for("sendMessage", count=3, timeout=10)
    process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(process.communicate(), 20)

    personas = {
        user_prompt(request).split()[-1]: sorted(
            word for word in str(request["messages"][0]["content"]).split() if "CANARY" in word
        )
        for request in llm.requests
    }
    assert len(llm.requests) == 3
    assert personas == {
        "老师群": ["CANARY-TEACHER"],
        "游戏群": ["CANARY-GAMER"],
        "私聊": ["CANARY-BASE"],
    }
    stored = stored_texts(tmp_path / "data" / "pacebot.sqlite3")
    assert ("小满 被拒的群" in stored, "小满 被拉黑的人" in stored) == (False, False)
