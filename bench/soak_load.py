"""The far side of the soak benchmark, in a process of its own: chatters, Telegram, the LLM.

It serves the fake Bot API and the fake OpenAI-compatible server, plays each chat day's
lines on the Bot API when told, and reads the bot's database for :mod:`bench.soak`, so
that the process it measures opens no connection of its own. The fake LLM answers a
summary request with a day summary (and a fact about the first person of the day) and
any other with a fresh reply plan, one line, or two every fourth call.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fakes.bot_api import FakeBotAPI
from fakes.openai_api import FakeLLMServer

_SUMMARY_MARK = "You keep the diary of a chat"


def main(conn: Connection) -> None:
    """Serve the fake Bot API and LLM; play each day's lines when told, until told to stop.

    Orders over ``conn``: ``{"do": "day", "lines": [(due s, chat, sender, text)],
    "offset_s": ...}`` → ``"played"`` (each message dated the bot's clock:
    ``time.time() + offset_s``); ``{"do": "tidy"}`` → what was sent and asked since the
    last tidy, the records then forgotten; ``{"do": "stop"}``.
    """
    asyncio.run(_serve(conn))


async def _serve(conn: Connection) -> None:
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        asked: Counter[str] = Counter()
        llm.before_answer = _answering(llm, asked, itertools.count(1))
        mention = f"@{api.bot_username}"
        conn.send(
            {"bot_api": api.base_url, "token": api.token, "llm": llm.base_url, "mention": mention}
        )
        while True:
            order: dict[str, Any] = await asyncio.to_thread(conn.recv)
            if order["do"] == "day":
                await _play(api, order["lines"], order["offset_s"])
                conn.send("played")
            elif order["do"] == "tidy":
                conn.send(_tidy(api, llm, asked))
            elif order["do"] == "count":
                conn.send(await asyncio.to_thread(_chatter_messages, order["database"]))
            elif order["do"] == "database":
                conn.send(await asyncio.to_thread(_database, order["database"]))
            else:
                return


def _answering(
    llm: FakeLLMServer, asked: Counter[str], numbers: itertools.count[int]
) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """Answer a summary request with a day summary, any other with a fresh reply plan,
    each numbered: a model's words differ from one answer to the next."""

    async def answer(body: dict[str, Any]) -> None:
        number = next(numbers)
        texts = [str(m.get("content", "")) for m in body["messages"]]
        if any(_SUMMARY_MARK in text for text in texts):
            asked["summary_calls"] += 1
            llm.reply(json.dumps(_summary(texts[-1], number), ensure_ascii=False))
            return
        asked["replies"] += 1
        replies = [{"content": f"好呀，我懂{number}", "send_delay_seconds": 0}]
        if number % 4 == 0:
            replies.append({"content": f"然后呢{number}", "send_delay_seconds": 1})
        llm.reply(json.dumps({"replies": replies}, ensure_ascii=False))

    return answer


def _summary(transcript: str, number: int) -> dict[str, Any]:
    found = re.search(r"\(id (\d+)\)", transcript)
    people = [{"user_id": found[1], "name": "", "facts": [f"喜欢吃火锅，第{number}次说"]}]
    return {
        "summary": f"大家聊了下班、周末爬山和火锅（第{number}篇）。",
        "topics": ["下班", "爬山"],
        "key_points": [f"周末去爬山，第{number}次提起"],
        "keywords": ["爬山", "火锅", "下班"],
        "people": people if found else [],
    }


async def _play(api: FakeBotAPI, lines: list[tuple[float, int, int, str]], offset_s: float) -> None:
    loop = asyncio.get_running_loop()
    begin = loop.time() + 0.1
    for due, chat, sender, text in lines:
        if begin + due > loop.time():
            await asyncio.sleep(begin + due - loop.time())
        group = chat < 0
        api.push_message(
            chat,
            text,
            user_id=sender,
            first_name=f"成员{sender}" if group else f"朋友{sender}",
            chat_type="supergroup" if group else "private",
            title=f"群{-chat % 1000}" if group else None,
            date=time.time() + offset_s,
        )


def _tidy(api: FakeBotAPI, llm: FakeLLMServer, asked: Counter[str]) -> dict[str, int]:
    """Return what happened since the last tidy; forget the records, which would only grow."""
    done = {
        "sends": sum(call.method.casefold() == "sendmessage" for call in api.calls),
        "failed": len(api.failed_calls),
        **asked,
    }
    asked.clear()
    for records in (api.calls, api.failed_calls, llm.requests, llm.request_times):
        records.clear()
    llm.request_headers.clear()
    llm.completions.clear()
    api.messages.clear()
    return done


def _chatter_messages(database: str) -> int:
    """Count the chatters' messages stored in ``database``."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        (count,) = db.execute("SELECT count(*) FROM messages WHERE from_bot = 0").fetchone()
    return int(count)


def _database(database: str) -> tuple[int, int, int, dict[str, int]]:
    """Return the bytes of the database file and of its WAL, the messages it holds, and
    the bytes of each table and index (none where SQLite lacks ``dbstat``)."""
    wal = Path(f"{database}-wal")
    sizes = (Path(database).stat().st_size, wal.stat().st_size if wal.exists() else 0)
    with contextlib.closing(sqlite3.connect(database)) as db:
        (count,) = db.execute("SELECT count(*) FROM messages").fetchone()
        try:
            rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
            rows = []
    return (*sizes, int(count), {name: int(size) for name, size in rows})
