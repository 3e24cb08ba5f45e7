"""What the running bot holds per chat is bounded by the chats that are live.

A chat the bot answered and that then went quiet leaves nothing behind in the parts beside
the pipeline (waiting, conversations, sending, voice notes); the parts with a window of
their own (the company's follow-up window, an opener's silence, the refusals logged today,
the chat titles remembered) let a chat go once it is past it. The official QQ bot keeps
nothing per chat in memory: its reply numbers and monthly counts are in the store, which
lets them go too. The pacer's windows are tested in ``test_pacing.py``, the company's
pause in ``test_company.py``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.access import Access
from bot.company import FOLLOW_UP_WITHIN
from bot.config.settings import Settings
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.clock import Clock
from fakes.harness import PRIVATE, harness, make_config, replies_json
from fakes.official_qq import official_config, pacebot_on
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid
from fakes.store_rows import at, incoming
from storage.messages import TITLES_KEPT
from storage.sqlite import SqliteStore

TEN_AM = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai, the harness's zone


def group(number: int) -> ChatKey:
    return ChatKey("test", ChatKind.GROUP, str(-100 - number))


def private(number: int) -> ChatKey:
    return ChatKey("test", ChatKind.PRIVATE, str(1000 + number))


async def test_chats_answered_and_quiet_leave_nothing_beside_the_pipeline(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Thirty private chats and ten groups answered once: once every reply is out, nothing
    waits, no conversation, sending or voice note is held, and the company holds the ten
    groups (inside its follow-up window). Past the window, one more group answered leaves
    the company holding that group alone."""
    clock = Clock(TEN_AM)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        for number in range(30):
            await bot.say("在吗", chat=private(number), sender_id=str(number))
        for number in range(10):
            await bot.say("小满在吗", chat=group(number), addresses_bot=True)
        await bot.settle()
        answered = bot.pipeline.chats_held()
        clock.jump(seconds=FOLLOW_UP_WITHIN.total_seconds() + 1)
        await bot.say("小满？", chat=group(99), addresses_bot=True)
        await bot.settle()
        later = bot.pipeline.chats_held()
    assert len(llm.requests) == 41
    assert {key: answered[key] for key in answered if key != "paced"} == {
        "waiting": 0,
        "conversations": 0,
        "sending": 0,
        "company": 10,
        "initiative": 0,
        "voice notes": 0,
    }
    assert later["company"] == 1


async def test_a_silence_is_watched_until_its_opener_then_let_go(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With openers on, a chat that talked is watched through its silence. The opener (at
    18:00) starts a silence of its own, watched until its moment (09:00 the next day, the
    hours' start), where the guard refuses a second opener in a row: from then initiative
    holds nothing for the chat until it talks again."""
    clock = Clock(TEN_AM)
    initiative = {
        "openers": True,
        "after_silence_s": 8 * 3600.0,
        "hours": "09:00-22:00",
        "max_openers_per_day": 1,
    }
    config = make_config(tmp_path, llm.base_url, initiative=initiative)
    held = []
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await bot.say("今天好累", chat=PRIVATE, addresses_bot=True)
        await bot.settle()
        for hours in (8.5, 15.0):  # to 18:30, then to 09:30 the next day
            held.append(bot.pipeline.chats_held()["initiative"])
            for _ in range(round(hours * 4)):  # looking each quarter hour
                clock.jump(minutes=15)
                await bot.catch_up()
        held.append(bot.pipeline.chats_held()["initiative"])
    assert (held, len(llm.requests)) == ([1, 1, 0], 2)


class NoneSwitchedOff:
    """The switches of a bot where no chat is switched off."""

    async def chats_switched_off(self) -> frozenset[ChatKey]:
        return frozenset()

    async def switch_chat(self, chat: ChatKey, *, off: bool, by: str, now: datetime) -> None:
        raise AssertionError("nothing is switched here")


def test_refused_chats_are_remembered_for_their_chat_day_only(tmp_path: Path) -> None:
    """Five hundred groups refused today are each remembered (one log line a day); the
    next chat day, one more refusal leaves only that one."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, "http://127.0.0.1:9", access={"groups": "allow"})
    access = Access(Settings(config), NoneSwitchedOff(), now=clock.now)
    for number in range(500):
        assert access.refusal(incoming(group(number), "1")) is not None
    today = len(access)
    clock.jump(hours=24)
    access.refusal(incoming(group(999), "1"))
    assert (today, len(access)) == (500, 1)


def written_at(db_path: Path, chat: ChatKey) -> float:
    with closing(sqlite3.connect(db_path)) as db:
        (updated_at,) = db.execute(
            "SELECT updated_at FROM chat_titles WHERE chat_key = ?", (str(chat),)
        ).fetchone()
    return float(updated_at)


async def test_the_titles_remembered_are_bounded(store: SqliteStore, db_path: Path) -> None:
    """An unchanged title is not written again while remembered; past ``TITLES_KEPT``
    other titled chats the oldest is let go, and its title is written once more."""
    kept, let_go = group(0), group(1)

    def titled(chat: ChatKey, message_id: str, seconds: float) -> list[IncomingMessage]:
        message = incoming(chat, message_id, sent_at=at(seconds))
        return [dataclasses.replace(message, chat_title="爬山群")]

    await store.add_messages(titled(let_go, "1", 1) + titled(kept, "1", 1), received_at=at(2))
    others = [
        dataclasses.replace(incoming(group(10 + n), "1", sent_at=at(3)), chat_title=f"群{n}")
        for n in range(TITLES_KEPT - 1)
    ]
    await store.add_messages(others, received_at=at(4))
    await store.add_messages(titled(kept, "2", 5), received_at=at(6))  # kept: now the newest
    await store.add_messages(
        [dataclasses.replace(incoming(group(9), "1", sent_at=at(7)), chat_title="新群")],
        received_at=at(8),
    )
    await store.add_messages(titled(let_go, "2", 9) + titled(kept, "3", 9), received_at=at(10))
    assert written_at(db_path, kept) == at(1).timestamp()
    assert written_at(db_path, let_go) == at(9).timestamp()


async def test_official_qq_chats_answered_and_quiet_leave_nothing_beside_the_pipeline(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Twenty C2C chats and five groups of the official QQ bot answered with passive
    replies: once every reply is out nothing waits, no conversation or sending is held,
    and the company holds the five groups (inside its follow-up window)."""
    async with (
        FakeQQOpenPlatform(clock=Clock(running=False)) as platform,
        pacebot_on(official_config(tmp_path, llm, platform), platform) as (core, _),
    ):
        for number in range(20):
            llm.reply_json(replies_json("在呢"))
            await platform.c2c_message(openid(f"user-{number}"), "在吗")
        for number in range(5):
            llm.reply_json(replies_json("在呢"))
            await platform.group_at(openid(f"group-{number}"), openid("alice"), "在吗")
        await platform.wait_until(lambda: len(platform.sends) == 25, within_s=15)
        await core.inbox.drain()
        held = core.pipeline.chats_held()
    assert {key: held[key] for key in held if key != "paced"} == {
        "waiting": 0,
        "conversations": 0,
        "sending": 0,
        "company": 5,
        "initiative": 0,
        "voice notes": 0,
    }


def rows(db_path: Path, table: str) -> int:
    with closing(sqlite3.connect(db_path)) as db:
        (count,) = db.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(count)


async def test_the_official_qq_bots_reply_numbers_and_monthly_counts_are_let_go(
    store: SqliteStore, db_path: Path
) -> None:
    """Replies numbered for forty messages are let go once one more is numbered three
    hours later; thirty chats counted in November leave no row once a December message
    is counted."""
    for number in range(40):
        await store.next_reply_seq("qqbot", f"m{number}", now=TEN_AM)
    numbered = rows(db_path, "reply_seqs")
    await store.next_reply_seq("qqbot", "later", now=TEN_AM + timedelta(hours=3))
    for number in range(30):
        await store.take_proactive(private(number), "2026-11", per_month=4)
    counted = rows(db_path, "proactive_sends")
    await store.take_proactive(private(99), "2026-12", per_month=4)
    assert (numbered, rows(db_path, "reply_seqs")) == (40, 1)
    assert (counted, rows(db_path, "proactive_sends")) == (30, 1)
