"""The people commands from the chat: who may use them, what they answer, bad arguments."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path

from bot.models import ChatKey, PersonNote
from fakes.harness import GROUP, PRIVATE, Harness, harness
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

ADMIN = {"bot": {"admins": ["test:7"]}}
DAY = date(2026, 11, 21)


async def learn(bot: Harness, chat: ChatKey, *notes: PersonNote) -> list[int]:
    async with await SqliteStore.open(bot.config.database_path) as store:
        facts = await store.add_facts(chat, DAY, notes, keep=20, now=datetime.now(UTC))
    return [fact.id for fact in facts]


async def command(bot: Harness, text: str, *, chat: ChatKey = GROUP, sender_id: str = "7") -> str:
    return await bot.command(text, chat=chat, sender_id=sender_id)


async def test_admin_lists_people_and_facts_and_forgets_one(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/people counts, /facts shows ids newest first, /forget removes exactly that one."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        ids = await learn(
            bot,
            GROUP,
            PersonNote("8", "Alice", ("对花生过敏", "在准备考研，12月底考试")),
            PersonNote("9", "Bob", ("养了一只猫",)),
        )
        people = await command(bot, "/people")
        facts = await command(bot, "/facts 8")
        forgot = await command(bot, f"/forget {ids[0]}")
        again = await command(bot, f"/forget {ids[0]}")
        after = await command(bot, "/facts 8")

    assert people.splitlines()[1:3] == ["- Alice (id 8): 2 fact(s)", "- Bob (id 9): 1 fact(s)"]
    assert facts.splitlines()[1:3] == [
        f"#{ids[1]} · learned from {DAY} · 在准备考研，12月底考试",
        f"#{ids[0]} · learned from {DAY} · 对花生过敏",
    ]
    assert forgot == f"Forgot fact #{ids[0]} about Alice (id 8): 对花生过敏"
    assert again.startswith(f"There is no fact #{ids[0]} in {GROUP}")
    assert "对花生过敏" not in after


async def test_bad_arguments_get_clear_answers(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Unknown ids, a person who never wrote, 10 kB and non-numeric ids: usage, no traceback."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await learn(bot, GROUP, PersonNote("8", "Alice", ("喜欢猫",)))
        answers = [
            await command(bot, "/forget 424242"),
            await command(bot, "/forget " + "9" * 10_000),
            await command(bot, "/forget abc"),
            await command(bot, "/forget"),
            await command(bot, "/facts"),
            await command(bot, "/facts no-such-person"),
            await command(bot, "/people", chat=PRIVATE),
        ]
        still = await command(bot, "/facts 8")

    assert (
        answers[0]
        == f"There is no fact #424242 in {GROUP}: it was forgotten already, or never was here."
    )
    assert answers[1].startswith("usage: /forget <fact id>")
    assert answers[2].startswith("usage: /forget <fact id>")
    assert answers[3].startswith("usage: /forget <fact id>")
    assert answers[4].startswith("usage: /facts <user id>")
    assert answers[5] == f"Nothing is remembered about id no-such-person in {GROUP}."
    assert answers[6] == f"Nothing is remembered about anyone in {PRIVATE} yet."
    assert "喜欢猫" in still


async def test_forgetme_works_for_anyone_and_only_for_them_here(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A non-admin forgets their own facts in this chat; others' and other chats' stay."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await learn(bot, GROUP, PersonNote("8", "Alice", ("喜欢猫", "住在杭州")))
        await learn(bot, GROUP, PersonNote("9", "Bob", ("喜欢狗",)))
        await learn(bot, PRIVATE, PersonNote("8", "Alice", ("私聊里说的事",)))
        refused = await command(bot, "/facts 8", sender_id="8")
        forgot = await command(bot, "/forgetme", sender_id="8")
        again = await command(bot, "/forgetme", sender_id="8")
        people = await command(bot, "/people")
        private = await command(bot, f"/facts 8 {PRIVATE}", chat=PRIVATE)

    assert refused == "Sorry, only admins can use that command."
    assert forgot.startswith("Forgot 2 fact(s) about you in this chat;")
    assert again == (
        "Nothing is remembered about you in this chat, and nothing you wrote up to today will be."
    )
    assert "Alice" not in people
    assert "- Bob (id 9): 1 fact(s)" in people
    assert "私聊里说的事" in private
    with closing(sqlite3.connect(bot.config.database_path)) as db:
        audit = db.execute(
            "SELECT count(*) FROM fact_audit WHERE action = 'forgotten' AND done_by = 'test:8'"
        ).fetchone()
    assert audit == (2,)


async def test_people_commands_answer_in_chinese(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With bot.language = "zh" every people command answers, and refuses, in Chinese."""
    async with harness(tmp_path, llm, bot={"admins": ["test:7"], "language": "zh"}) as bot:
        [peanuts, cats] = await learn(
            bot, GROUP, PersonNote("8", "Alice", ("对花生过敏", "喜欢猫"))
        )
        answers = [
            await command(bot, "/people"),
            await command(bot, "/facts 8"),
            await command(bot, f"/forget {peanuts}"),
            await command(bot, f"/forget {peanuts}"),
            await command(bot, "/forget abc"),
            await command(bot, "/facts"),
            await command(bot, "/facts 404"),
            await command(bot, "/people", chat=PRIVATE),
            await command(bot, "/people extra"),
            await command(bot, "/forgetme", sender_id="8"),
            await command(bot, "/forgetme", sender_id="8"),
        ]

    assert answers == [
        f"{GROUP} 里记住了 1 个人的事，按条数从多到少：\n"
        "- Alice（ID 8）：2 条\n"
        "/facts <用户 ID> 查看某个人的全部事实。",
        f"{GROUP} 里关于 Alice（ID 8）的事实，从新到旧：\n"
        f"#{cats} · 记于 {DAY} · 喜欢猫\n"
        f"#{peanuts} · 记于 {DAY} · 对花生过敏\n"
        "/forget <事实编号> 可以删掉其中一条。",
        f"已忘掉关于 Alice（ID 8）的事实 #{peanuts}：对花生过敏",
        f"{GROUP} 里没有编号为 #{peanuts} 的事实：可能已经删掉了，或者不属于这个聊天。",
        "用法：/forget <事实编号>，例如 /forget 12（用 /facts <用户 ID> 查看编号）",
        "用法：/facts <用户 ID>（即 /people 显示的平台 ID）",
        f"{GROUP} 里没有记住关于 ID 404 的事。",
        f"{PRIVATE} 里还没有记住关于任何人的事。",
        "用法：/people（在聊天里直接用，或在私聊里带上聊天的键）",
        "已忘掉这个聊天里关于你的 1 条事实，今天及以前你说过的话不会再被记成事实；"
        "每日摘要仍会保留（管理员可以用 /pop 撤下）。",
        "这个聊天里没有记住关于你的事，今天及以前你说过的话也不会被记下。",
    ]
