"""People memory and traces through the real processes: `pacebot run` on QQ, `pacebot console`.

Yesterday's chat is written into the database before the start, as an earlier run would
have left it (its batch closed); the start-up catch-up of the nightly job then summarises
it with the one scripted LLM answer, whose ``people`` field becomes facts. Everything
after that goes over the real wires: nonebot2 fed by the OneBot client, or piped stdin.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.config.model import load_config
from bot.days import chat_day, chat_day_bounds
from bot.models import BatchOutcome, ChatKey, ChatKind, IncomingMessage
from fakes.harness import free_port, start_run, wait_until
from fakes.onebot import FakeOneBot, at, text
from fakes.openai_api import FakeLLMServer
from fakes.process import connected_onebot, console_config, start_console
from storage.sqlite import SqliteStore

KEY = "sk-people-process-key-123456"
SELF_ID = 10001
GROUP_ID = 500
ALICE, BOB = 42, 43
QQ_GROUP = ChatKey("qq", ChatKind.GROUP, str(GROUP_ID))
CONSOLE = ChatKey("console", ChatKind.PRIVATE, "local")


async def seed_yesterday(
    config_path: Path, chat: ChatKey, said: Sequence[tuple[str, str, str]]
) -> date:
    """Store (sender id, name, text) lines as yesterday's chat of ``chat``, already handled."""
    config = load_config(config_path)
    zone, boundary = config.bot.zone, config.memory.day_boundary_time
    yesterday = chat_day(datetime.now(UTC), zone=zone, boundary=boundary) - timedelta(days=1)
    start, _ = chat_day_bounds(yesterday, zone=zone, boundary=boundary)
    async with await SqliteStore.open(config.database_path) as store:
        for n, (sender_id, name, words) in enumerate(said, start=1):
            at_time = start + timedelta(hours=12, minutes=n)
            message = IncomingMessage(chat, f"y{n}", sender_id, name, words, at_time)
            await store.add_message(message, received_at=at_time)
        batch = await store.open_batch(chat, limit=len(said), now=start + timedelta(hours=13))
        assert batch is not None
        await store.close_batch(batch.id, BatchOutcome.SKIPPED, now=start + timedelta(hours=13))
    return yesterday


def summary_with_people(people: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "summary": "大家聊了各自的近况。",
        "topics": [],
        "key_points": [],
        "keywords": [],
        "people": people,
    }


def live_facts(config_path: Path) -> list[tuple[int, str, str]]:
    """Return (id, user id, text) of every live fact, read as another process would."""
    with closing(sqlite3.connect(load_config(config_path).database_path)) as db:
        return db.execute(
            "SELECT id, user_id, fact FROM person_facts WHERE is_deleted = 0 ORDER BY id"
        ).fetchall()


async def wait_for_facts(config_path: Path, count: int) -> list[tuple[int, str, str]]:
    """Wait until the start-up summary has stored ``count`` facts; return them."""
    await wait_until(lambda: len(live_facts(config_path)) == count, within_s=20)
    return live_facts(config_path)


def system_prompt(llm: FakeLLMServer, index: int) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


# -- QQ: `pacebot run`, nonebot2 fed by the OneBot client -------------------------------------


async def ask(onebot: FakeOneBot, sender: int, words: str | list[dict[str, Any]]) -> str:
    """Say ``words`` in the group as ``sender``; return the text of the bot's next message."""
    before = len(onebot.calls_of("send_group_msg"))
    await onebot.send_group_message(GROUP_ID, sender, words, card=f"u{sender}")
    calls = await onebot.wait_for_call("send_group_msg", count=before + 1, within_s=10)
    return str(calls[before].params["message"][-1]["data"]["text"])


async def test_people_and_traces_through_pacebot_run_on_qq(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The night's people become facts; the commands answer in Chinese; /trace shows the batch."""
    port = free_port()
    config = console_config(
        tmp_path,
        llm.base_url,
        bot=f'language = "zh"\nadmins = ["qq:{ALICE}"]\n',
        tables=f"\n[qq]\nenabled = true\nport = {port}\n",
    )
    await seed_yesterday(
        config,
        QQ_GROUP,
        [
            (str(ALICE), "Alice", "我下周三考驾照"),
            (str(BOB), "Bob", "我对花生过敏，还养了一只猫"),
        ],
    )
    llm.reply_json(
        summary_with_people(
            [
                {"user_id": ALICE, "name": "Alice", "facts": ["CANARY-EXAM 下周三考驾照"]},
                {"user_id": str(BOB), "facts": ["CANARY-PEANUT 对花生过敏", "CANARY-CAT 养猫"]},
                {"user_id": "999", "name": "Mallory", "facts": ["CANARY-GHOST 从没说过话"]},
            ]
        )
    )
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": KEY})
    try:
        facts = await wait_for_facts(config, 3)
        onebot = await connected_onebot(port)
        try:
            people = await ask(onebot, ALICE, "/people")
            bob_facts = await ask(onebot, ALICE, f"/facts {BOB}")
            ghost = await ask(onebot, ALICE, "/facts 999")
            refused = await ask(onebot, BOB, f"/forget {facts[0][0]}")
            [cat] = [fact_id for fact_id, _, words in facts if "CANARY-CAT" in words]
            forgot = await ask(onebot, ALICE, f"/forget {cat}")
            forgot_me = await ask(onebot, BOB, "/forgetme")
            llm.reply_json({"replies": [{"content": "吃面吧", "send_delay_seconds": 0}]})
            question = [at(SELF_ID), text(" 午饭吃什么")]
            answer = await ask(onebot, ALICE, question)
            trace = await ask(onebot, ALICE, "/trace")
        finally:
            await onebot.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 20)

    assert process.returncode == 0, err.decode()
    assert [words for _, _, words in facts] == [
        "CANARY-EXAM 下周三考驾照",
        "CANARY-PEANUT 对花生过敏",
        "CANARY-CAT 养猫",
    ]
    assert people.splitlines()[:3] == [
        f"{QQ_GROUP} 里记住了 2 个人的事，按条数从多到少：",
        f"- Bob（ID {BOB}）：2 条",
        f"- Alice（ID {ALICE}）：1 条",
    ]
    assert "CANARY-PEANUT 对花生过敏" in bob_facts
    assert ghost == f"{QQ_GROUP} 里没有记住关于 ID 999 的事。"
    assert refused == "抱歉，只有管理员可以使用这个命令。"
    assert forgot == f"已忘掉关于 Bob（ID {BOB}）的事实 #{cat}：CANARY-CAT 养猫"
    assert forgot_me.startswith("已忘掉这个聊天里关于你的 1 条事实")
    assert answer == "吃面吧"
    reply_prompt = system_prompt(llm, 1)
    assert f"(id {ALICE}): CANARY-EXAM 下周三考驾照" in reply_prompt
    assert "CANARY-PEANUT" not in reply_prompt
    assert "CANARY-GHOST" not in reply_prompt
    lines = trace.splitlines()
    assert lines[0].startswith(f"{QQ_GROUP} 的第 2 批，")
    assert lines[0].endswith("：answered")
    assert re.fullmatch(r"消息：\d+（u42）", lines[1])
    assert re.fullmatch(r"重新计时的消息：\d+；只作为上下文的：无", lines[2])
    assert lines[3] == "等待结束于：quiet after the asker"
    assert lines[4] == "闸门：addressed"
    people_tokens = re.search(r"people (\d+)", lines[5])
    assert people_tokens is not None
    assert int(people_tokens[1]) > 0
    assert "第 1 条回复：sent · 吃面吧" in lines
    assert len(llm.requests) == 2
    assert KEY not in err.decode()


# -- the console: `pacebot console` with piped input ------------------------------------------


async def type_and_read(process: asyncio.subprocess.Process, line: str, until: str) -> str:
    """Type ``line``; return what the console prints up to the line holding ``until``."""
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(f"{line}\n".encode())
    await process.stdin.drain()
    printed: list[str] = []
    async with asyncio.timeout(10):
        while until not in (printed[-1] if printed else ""):
            printed.append((await process.stdout.readline()).decode().rstrip("\n"))
    return "\n".join(printed)


async def test_people_and_traces_in_the_console(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The console user's facts come from the night, reach the prompt, and can be forgotten."""
    config = console_config(tmp_path, llm.base_url)
    yesterday = await seed_yesterday(
        config, CONSOLE, [("local", "you", "我下周三考驾照"), ("local", "you", "我对花生过敏")]
    )
    llm.reply_json(
        summary_with_people(
            [
                {
                    "user_id": "local",
                    "facts": ["CANARY-EXAM 下周三考驾照", "CANARY-PEANUT 对花生过敏"],
                },
                {"user_id": "999", "facts": ["CANARY-GHOST 从没说过话"]},
            ]
        )
    )
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY}
    process = await start_console(config, env)
    assert process.stdout is not None
    assert process.stdin is not None
    await asyncio.wait_for(process.stdout.readline(), 20)  # the banner: it is up
    [(exam, _, _), (peanut, _, _)] = await wait_for_facts(config, 2)

    people = await type_and_read(process, "/people", "/facts <user id>")
    facts = await type_and_read(process, "/facts local", "/forget <fact id>")
    ghost = await type_and_read(process, "/facts 999", "Nothing is remembered")
    forgot = await type_and_read(process, f"/forget {exam}", "Forgot fact")
    llm.reply_json({"replies": [{"content": "吃面吧", "send_delay_seconds": 0}]})
    answer = await type_and_read(process, "午饭吃什么", "吃面吧")
    trace = await type_and_read(process, "/trace", '"replies"')  # the raw output
    forgot_me = await type_and_read(process, "/forgetme", "fact(s) about you")
    process.stdin.close()
    _, err = await asyncio.wait_for(process.communicate(), 20)

    assert process.returncode == 0, err.decode()
    assert people.splitlines()[-2:] == [
        "- you (id local): 2 fact(s)",
        "/facts <user id> shows one person's facts.",
    ]
    assert facts.splitlines()[-3:-1] == [
        f"#{peanut} · learned from {yesterday} · CANARY-PEANUT 对花生过敏",
        f"#{exam} · learned from {yesterday} · CANARY-EXAM 下周三考驾照",
    ]
    assert ghost.splitlines() == [
        "you: /facts 999",
        f"小满: Nothing is remembered about id 999 in {CONSOLE}.",
    ]
    assert forgot.splitlines() == [
        f"you: /forget {exam}",
        f"小满: Forgot fact #{exam} about you (id local): CANARY-EXAM 下周三考驾照",
    ]
    assert answer.endswith("小满: 吃面吧")
    reply_prompt = system_prompt(llm, 1)
    assert "- you (id local): CANARY-PEANUT 对花生过敏" in reply_prompt
    assert "CANARY-EXAM" not in reply_prompt
    assert "CANARY-GHOST" not in reply_prompt
    assert f"batch 2 of {CONSOLE}" in trace
    assert "reply 1: sent · 吃面吧" in trace
    assert re.search(r"people [1-9]", trace)
    assert forgot_me.splitlines()[-1].startswith("小满: Forgot 1 fact(s) about you in this chat;")
    assert live_facts(config) == []
    assert len(llm.requests) == 2
    assert KEY not in str(llm.requests)
