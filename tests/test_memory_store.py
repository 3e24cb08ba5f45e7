"""The SQLite store's memory on real files: the prompt stack, the knowledge index, recall."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from bot.errors import SummaryExists
from bot.models import (
    BatchOutcome,
    ChatKey,
    ChatKind,
    DaySummary,
    IncomingMessage,
    StoredMessage,
    SummaryRecord,
)
from bot.replies.items import PlannedReply, Text
from storage import search
from storage.migrate import load_migrations, migrate
from storage.sqlite import SqliteStore

T0 = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)
DAY1 = date(2026, 3, 1)
ALICE = ChatKey("telegram", ChatKind.PRIVATE, "123")
GROUP = ChatKey("qq", ChatKind.GROUP, "456")
# The FTS index keeps one docsize row per indexed summary (a count of knowledge_fts itself
# would read its content table, knowledge_index).
MEMORY_TABLES = ("prompt_history", "knowledge_index", "knowledge_fts_docsize")

HIKING = DaySummary(
    summary="2026-03-01 周末去香山爬山，看了红叶，下山后吃了烤鸭。",
    topics=("香山", "爬山"),
    key_points=("红叶正好",),
    keywords=("香山", "红叶", "爬山"),
)
BUDGET = DaySummary(
    summary="On 2026-03-02 we discussed the quarterly budget for the club.",
    topics=("budget",),
    key_points=("Bob will send the spreadsheet",),
    keywords=("budget", "spreadsheet"),
)


def at(seconds: float) -> datetime:
    """Return T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def day(n: int) -> date:
    """Return the ``n``-th chat day, counting DAY1 as 1."""
    return DAY1 + timedelta(days=n - 1)


def plain(text: str) -> DaySummary:
    """Build a summary with no topics, key points or keywords."""
    return DaySummary(summary=text)


def peek(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the file with a second, plain connection."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


def row_counts(path: Path) -> tuple[int, ...]:
    """Count the rows of the stack, the index table and the FTS index."""
    return tuple(peek(path, f"SELECT count(*) FROM {table}")[0][0] for table in MEMORY_TABLES)


def days_of(records: list[SummaryRecord]) -> list[date]:
    """Return the chat days of ``records``, in their order."""
    return [record.day for record in records]


async def push(
    store: SqliteStore,
    chat: ChatKey,
    summary_day: date,
    content: DaySummary | None = None,
    *,
    now: datetime = T0,
) -> SummaryRecord:
    """Push a summary whose prompt texts name its day."""
    text = content or plain(f"summary of {summary_day.isoformat()}")
    return await store.push_summary(
        chat,
        summary_day,
        text,
        added_prompt=f"[{summary_day.isoformat()}] {text.summary}",
        full_prompt_before="persona",
        full_prompt_after=f"persona\n\n[{summary_day.isoformat()}] {text.summary}",
        message_count=7,
        now=now,
    )


def incoming(
    chat: ChatKey, message_id: str, sent_at: datetime, *, text: str = "hi"
) -> IncomingMessage:
    """Build a chatter's message."""
    return IncomingMessage(
        chat=chat,
        message_id=message_id,
        sender_id="42",
        sender_name="Alice",
        text=text,
        sent_at=sent_at,
        addresses_bot=True,
    )


async def add(store: SqliteStore, *messages: IncomingMessage) -> None:
    """Store chatters' messages."""
    for message in messages:
        assert await store.add_message(message, received_at=message.sent_at)


async def bot_says(store: SqliteStore, chat: ChatKey, text: str, sent_at: datetime) -> None:
    """Store one message as sent by the bot at ``sent_at``, through the outbox."""
    batch = await store.open_batch(chat, limit=30, now=sent_at)
    assert batch is not None
    items = await store.close_batch(
        batch.id, BatchOutcome.ANSWERED, now=sent_at, replies=[PlannedReply(Text(text), sent_at)]
    )
    assert await store.claim_for_sending(items[0].id, now=sent_at)
    await store.mark_sent(
        items[0].id, platform_message_id=f"bot-{text}", said=text, sender_name="小满", now=sent_at
    )


# -- migration ---------------------------------------------------------------------------


async def test_upgrade_from_version_one_keeps_messages(db_path: Path) -> None:
    """Opening a version-1 database migrates it to the newest version with its messages."""
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, load_migrations()[:1])
        await old.execute(
            "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
            " sent_at, received_at) VALUES (?, '1', '42', 'Alice', '老消息', ?, ?)",
            (str(ALICE), T0.timestamp(), T0.timestamp()),
        )

    async with await SqliteStore.open(db_path) as store:
        kept = await store.messages_between(ALICE, T0, at(1), limit=10)
        pushed = await push(store, ALICE, DAY1)

    assert peek(db_path, "PRAGMA user_version") == [(len(load_migrations()),)]
    assert [(m.message_id, m.text) for m in kept] == [("1", "老消息")]
    assert pushed.day == DAY1


# -- the stack ---------------------------------------------------------------------------


async def test_push_returns_the_record(store: SqliteStore) -> None:
    """A pushed summary comes back whole, live, with its prompt text and times."""
    record = await push(store, ALICE, DAY1, HIKING, now=at(5))

    assert record == SummaryRecord(
        id=record.id,
        chat=ALICE,
        day=DAY1,
        content=HIKING,
        added_prompt=f"[2026-03-01] {HIKING.summary}",
        message_count=7,
        created_at=at(5),
    )


async def test_live_summaries_keep_push_order(store: SqliteStore) -> None:
    """The stack lists summaries in the order they were pushed, not by date."""
    await push(store, ALICE, day(3))
    await push(store, ALICE, day(1))
    await push(store, ALICE, day(2))

    assert days_of(await store.live_summaries(ALICE)) == [day(3), day(1), day(2)]


async def test_duplicate_live_push_is_refused_whole(store: SqliteStore, db_path: Path) -> None:
    """A second push for a live day raises SummaryExists and adds no row to any table."""
    await push(store, ALICE, DAY1, HIKING)
    before = row_counts(db_path)

    with pytest.raises(SummaryExists, match="2026-03-01"):
        await push(store, ALICE, DAY1, BUDGET)

    assert row_counts(db_path) == before == (1, 1, 1)
    assert [r.content for r in await store.live_summaries(ALICE)] == [HIKING]


async def test_double_run_pushes_once(db_path: Path) -> None:
    """Two connections (as two processes) pushing one chat day at once leave one summary."""
    async with await SqliteStore.open(db_path) as first, await SqliteStore.open(db_path) as second:
        outcomes = await asyncio.gather(
            push(first, ALICE, DAY1, HIKING),
            push(second, ALICE, DAY1, BUDGET),
            return_exceptions=True,
        )
        live = await first.live_summaries(ALICE)

    assert sorted(type(outcome).__name__ for outcome in outcomes) == [
        "SummaryExists",
        "SummaryRecord",
    ]
    assert [record.id for record in live] == [
        o.id for o in outcomes if isinstance(o, SummaryRecord)
    ]
    assert row_counts(db_path) == (1, 1, 1)


async def test_schema_refuses_a_second_live_row(store: SqliteStore, db_path: Path) -> None:
    """The database itself refuses a second live summary of a chat day, whoever writes it."""
    await push(store, ALICE, DAY1)

    with (
        closing(sqlite3.connect(db_path)) as db,
        pytest.raises(sqlite3.IntegrityError, match="UNIQUE"),
    ):
        db.execute(
            "INSERT INTO prompt_history (chat_key, summary_date, added_prompt,"
            " full_prompt_before, full_prompt_after, created_at) VALUES (?, ?, '', '', '', 0)",
            (str(ALICE), DAY1.isoformat()),
        )


async def test_index_stays_in_step_with_its_table(store: SqliteStore, db_path: Path) -> None:
    """After pushes, pops and a restore the FTS index passes SQLite's integrity check."""
    for n in (1, 2, 3):
        await push(store, ALICE, day(n), HIKING)
    await store.pop_summary(ALICE, by="admin", now=at(1))
    await store.pop_summary(ALICE, by="admin", now=at(2))
    await store.restore_summary(ALICE, now=at(3))

    check = peek(db_path, "INSERT INTO knowledge_fts (knowledge_fts) VALUES ('integrity-check')")

    assert check == []
    assert row_counts(db_path) == (3, 3, 3)


async def test_same_day_in_another_chat_is_fine(store: SqliteStore) -> None:
    """The one-live-summary rule is per chat: two chats may summarise the same day."""
    await push(store, ALICE, DAY1)
    await push(store, GROUP, DAY1)

    assert (await store.has_summary(ALICE, DAY1, include_popped=False)) is True
    assert days_of(await store.live_summaries(GROUP)) == [DAY1]


async def test_pop_takes_the_newest_one_at_a_time(store: SqliteStore) -> None:
    """Each pop removes the newest live summary, down to an empty stack, then gives None."""
    for n in (1, 2, 3):
        await push(store, ALICE, day(n))

    popped = [await store.pop_summary(ALICE, by="telegram:1", now=at(n)) for n in (1, 2, 3)]
    after = await store.pop_summary(ALICE, by="telegram:1", now=at(4))

    assert [(r.day, r.is_deleted, r.deleted_at, r.deleted_by) for r in popped if r] == [
        (day(3), True, at(1), "telegram:1"),
        (day(2), True, at(2), "telegram:1"),
        (day(1), True, at(3), "telegram:1"),
    ]
    assert after is None
    assert await store.live_summaries(ALICE) == []


async def test_pop_leaves_the_rest_of_the_stack(store: SqliteStore) -> None:
    """After one pop the older summaries stay live, in push order."""
    for n in (1, 2, 3):
        await push(store, ALICE, day(n))

    await store.pop_summary(ALICE, by="admin", now=at(1))

    assert days_of(await store.live_summaries(ALICE)) == [day(1), day(2)]


async def test_pop_hides_from_search_and_dates(store: SqliteStore) -> None:
    """A popped summary is found neither by keyword nor by its date."""
    await push(store, ALICE, day(1), HIKING)
    await push(store, ALICE, day(2), BUDGET)

    await store.pop_summary(ALICE, by="admin", now=at(1))

    assert await store.search_summaries(ALICE, "budget", limit=5) == []
    assert await store.summaries_on(ALICE, [day(1), day(2)]) == await store.live_summaries(ALICE)
    assert days_of(await store.summaries_on(ALICE, [day(2)])) == []


async def test_popped_day_can_be_summarised_again(store: SqliteStore) -> None:
    """After a pop the same day may be pushed again (an admin's /summary run)."""
    await push(store, ALICE, DAY1, HIKING)
    await store.pop_summary(ALICE, by="admin", now=at(1))

    again = await push(store, ALICE, DAY1, BUDGET)

    assert [r.id for r in await store.live_summaries(ALICE)] == [again.id]


async def test_has_summary_with_and_without_popped(store: SqliteStore) -> None:
    """A popped day counts only when popped summaries are included; an unknown day never."""
    await push(store, ALICE, DAY1)
    await store.pop_summary(ALICE, by="admin", now=at(1))

    answers = [
        await store.has_summary(ALICE, DAY1, include_popped=False),
        await store.has_summary(ALICE, DAY1, include_popped=True),
        await store.has_summary(ALICE, day(2), include_popped=True),
    ]

    assert answers == [False, True, False]


# -- restore -----------------------------------------------------------------------------


async def test_restore_brings_back_the_last_pop(store: SqliteStore) -> None:
    """Restore undoes the most recent pop: the summary is live and searchable again."""
    first = await push(store, ALICE, day(1), HIKING)
    second = await push(store, ALICE, day(2), BUDGET)
    await store.pop_summary(ALICE, by="admin", now=at(1))

    restored = await store.restore_summary(ALICE, now=at(2))

    assert restored == second
    assert [r.id for r in await store.live_summaries(ALICE)] == [first.id, second.id]
    assert [r.id for r in await store.search_summaries(ALICE, "budget", limit=5)] == [second.id]


async def test_restores_undo_pops_in_reverse(store: SqliteStore) -> None:
    """Two pops at the same instant are undone last first, then nothing is left to undo."""
    for n in (1, 2, 3):
        await push(store, ALICE, day(n))
    await store.pop_summary(ALICE, by="admin", now=T0)
    await store.pop_summary(ALICE, by="admin", now=T0)

    restored = [await store.restore_summary(ALICE, now=at(n)) for n in (1, 2, 3)]

    assert [r.day if r else None for r in restored] == [day(2), day(3), None]
    assert days_of(await store.live_summaries(ALICE)) == [day(1), day(2), day(3)]


async def test_restore_refused_after_a_newer_push(store: SqliteStore) -> None:
    """Once something was pushed after a pop, that pop can no longer be undone."""
    await push(store, ALICE, day(1))
    await store.pop_summary(ALICE, by="admin", now=at(1))
    await push(store, ALICE, day(2))

    restored = await store.restore_summary(ALICE, now=at(2))

    assert restored is None
    assert days_of(await store.live_summaries(ALICE)) == [day(2)]


async def test_restore_refused_when_the_day_was_redone(store: SqliteStore) -> None:
    """A popped day summarised again stays as it is; the old summary does not come back."""
    await push(store, ALICE, DAY1, HIKING)
    await store.pop_summary(ALICE, by="admin", now=at(1))
    redone = await push(store, ALICE, DAY1, BUDGET)

    restored = await store.restore_summary(ALICE, now=at(2))

    assert restored is None
    assert [r.id for r in await store.live_summaries(ALICE)] == [redone.id]


async def test_restore_takes_the_last_pop_not_the_newest_push(store: SqliteStore) -> None:
    """Pop, push, pop: restore brings back the second pop, then refuses the first."""
    await push(store, ALICE, day(1))
    await store.pop_summary(ALICE, by="admin", now=T0)
    await push(store, ALICE, day(2))
    await store.pop_summary(ALICE, by="admin", now=T0)

    restored = [await store.restore_summary(ALICE, now=at(n)) for n in (1, 2)]

    assert [r.day if r else None for r in restored] == [day(2), None]


async def test_restore_with_nothing_popped(store: SqliteStore) -> None:
    """Restore on a chat that never popped changes nothing and gives None."""
    await push(store, ALICE, DAY1)

    assert await store.restore_summary(ALICE, now=at(1)) is None
    assert days_of(await store.live_summaries(ALICE)) == [DAY1]


async def test_restorable_is_what_restore_would_bring_back(store: SqliteStore) -> None:
    """Nothing popped: nothing restorable; after a pop, that summary; after a newer push, or
    once restored, nothing again; and asking changes nothing."""
    await push(store, ALICE, day(1))
    never_popped = await store.restorable_summary(ALICE)
    second = await push(store, ALICE, day(2))
    await store.pop_summary(ALICE, by="admin", now=at(1))
    after_pop = await store.restorable_summary(ALICE)
    asked_again = await store.restorable_summary(ALICE)
    restored = await store.restore_summary(ALICE, now=at(2))
    after_restore = await store.restorable_summary(ALICE)
    await store.pop_summary(ALICE, by="admin", now=at(3))
    await push(store, ALICE, day(3))
    after_newer_push = await store.restorable_summary(ALICE)

    assert (never_popped, after_restore, after_newer_push) == (None, None, None)
    assert [r.id if r else None for r in (after_pop, asked_again, restored)] == [second.id] * 3


# -- dates -------------------------------------------------------------------------------


async def test_summaries_on_gives_those_days_oldest_first(store: SqliteStore) -> None:
    """Only the asked days come back, ordered by day whatever the push order."""
    for n in (3, 1, 2, 4):
        await push(store, ALICE, day(n))

    found = await store.summaries_on(ALICE, [day(4), day(1), day(9), day(1)])

    assert days_of(found) == [day(1), day(4)]


# -- isolation ---------------------------------------------------------------------------


async def test_memory_never_crosses_chats(store: SqliteStore) -> None:
    """A canary summary of one chat is invisible to every query of another chat."""
    canary = DaySummary(summary="金丝雀 canaryword 山", keywords=("金丝雀", "canaryword"))
    await push(store, GROUP, DAY1, canary)
    await push(store, ALICE, day(2), BUDGET)

    seen_by_alice = [
        await store.search_summaries(ALICE, "canaryword", limit=10),
        await store.search_summaries(ALICE, "金丝雀", limit=10),
        await store.search_summaries(ALICE, "山", limit=10),
        await store.summaries_on(ALICE, [DAY1]),
        [r for r in await store.live_summaries(ALICE) if r.day == DAY1],
    ]
    popped = await store.pop_summary(ALICE, by="admin", now=at(1))

    assert seen_by_alice == [[], [], [], [], []]
    assert popped is not None
    assert popped.content == BUDGET
    assert await store.pop_summary(ALICE, by="admin", now=at(2)) is None
    assert days_of(await store.live_summaries(GROUP)) == [DAY1]
    assert await store.has_summary(ALICE, DAY1, include_popped=True) is False


# -- search ------------------------------------------------------------------------------


def test_query_terms_keep_what_the_question_is_about() -> None:
    """Stop words, punctuation, emoji and repeats are dropped; case is folded."""
    terms = search.query_terms("我们上次在香山爬山是什么时候？？😀 Budget, budget, and 香山!")

    assert terms == ["在香", "香山", "山爬", "爬山", "山是", "budget"]


def test_query_terms_are_capped() -> None:
    """A long question yields at most QUERY_TERMS_MAX distinct terms, the first ones."""
    words = [f"word{n}" for n in range(100)]

    assert search.query_terms(" ".join(words)) == words[: search.QUERY_TERMS_MAX]


async def test_search_finds_chinese_by_its_words(store: SqliteStore) -> None:
    """A Chinese summary is found by a question that shares a segmented word with it."""
    hiking = await push(store, ALICE, day(1), HIKING)
    await push(store, ALICE, day(2), BUDGET)

    by_question = await store.search_summaries(ALICE, "上次爬山是什么时候", limit=5)
    by_word = await store.search_summaries(ALICE, "红叶", limit=5)

    assert [r.id for r in by_question] == [hiking.id]
    assert [r.id for r in by_word] == [hiking.id]


async def test_search_finds_english_by_its_words(store: SqliteStore) -> None:
    """An English summary is found by one of its words, whatever the case."""
    await push(store, ALICE, day(1), HIKING)
    budget = await push(store, ALICE, day(2), BUDGET)

    found = await store.search_summaries(ALICE, "What about the BUDGET?", limit=5)

    assert [r.id for r in found] == [budget.id]


async def test_search_ranks_the_better_match_first(store: SqliteStore) -> None:
    """The summary sharing more of the question's words comes first, whatever its age."""
    both = await push(store, ALICE, day(1), plain("周末去香山爬山，还去看了红叶"))
    one = await push(store, ALICE, day(2), plain("今天去公园爬山"))
    await push(store, ALICE, day(3), plain("在家打游戏"))

    found = await store.search_summaries(ALICE, "香山爬山看红叶", limit=5)

    assert [r.id for r in found] == [both.id, one.id]


async def test_search_respects_the_limit(store: SqliteStore) -> None:
    """No more than ``limit`` summaries come back."""
    for n in range(1, 6):
        await push(store, ALICE, day(n), plain(f"budget meeting number {n}"))

    found = await store.search_summaries(ALICE, "budget", limit=2)

    assert len(found) == 2


async def test_one_character_question_falls_back_to_substrings(store: SqliteStore) -> None:
    """A one-character Han question finds the summaries containing it, newest first."""
    hiking = await push(store, ALICE, day(1), HIKING)
    await push(store, ALICE, day(2), BUDGET)
    mountain = await push(store, ALICE, day(3), plain("讨论了去泰山的路线"))

    found = await store.search_summaries(ALICE, "山", limit=5)

    assert [r.id for r in found] == [mountain.id, hiking.id]


async def test_no_indexed_word_falls_back_to_substrings(store: SqliteStore) -> None:
    """A term that is only part of an indexed word still finds its summary."""
    budget = await push(store, ALICE, day(1), BUDGET)

    found = await store.search_summaries(ALICE, "spreadsheets? spread", limit=5)

    assert [r.id for r in found] == [budget.id]


async def test_two_character_question_finds_a_word_inside_a_longer_one(store: SqliteStore) -> None:
    """A two-character question finds the summary whose longer word holds it."""
    hotpot = await push(store, ALICE, day(1), plain("周末去吃了海底捞火锅，排队排了一个小时"))
    await push(store, ALICE, day(2), plain("今天去公园爬山"))

    found = await store.search_summaries(ALICE, "海底捞", limit=5)

    assert [r.id for r in found] == [hotpot.id]


async def test_one_character_word_glued_to_the_next_is_found(store: SqliteStore) -> None:
    """A one-character word the question runs into its next word ("猫后来") finds the
    summary that holds it as a word of its own, not the one where it is part of another."""
    cat = await push(
        store, ALICE, day(1), DaySummary("Lily的猫跑丢了，晚上找到了。", keywords=("猫",))
    )
    await push(store, ALICE, day(2), plain("去动物园看了熊猫，熊猫在吃竹子"))

    found = await store.search_summaries(ALICE, "上次聊的猫后来怎么样了", limit=5)

    assert [r.id for r in found] == [cat.id]


async def test_mixed_chinese_and_english_question(store: SqliteStore) -> None:
    """A question mixing English and Chinese finds the summary by both kinds of word."""
    phone = await push(store, ALICE, day(1), plain("大家聊iPhone 17的电池续航，老王还在用安卓"))
    await push(store, ALICE, day(2), HIKING)
    await push(store, ALICE, day(3), BUDGET)

    found = await store.search_summaries(ALICE, "iPhone电池怎么样", limit=5)

    assert [r.id for r in found] == [phone.id]


async def test_question_of_stop_words_finds_nothing(store: SqliteStore) -> None:
    """A question with no searchable word ("what did we ...", "是什么") gives an empty list."""
    await push(store, ALICE, day(1), HIKING)
    await push(store, ALICE, day(2), BUDGET)

    found = [
        await store.search_summaries(ALICE, "what did we", limit=5),
        await store.search_summaries(ALICE, "是什么", limit=5),
        await store.search_summaries(ALICE, "", limit=5),
    ]

    assert found == [[], [], []]


HOSTILE_QUERIES = [
    ('"', []),
    ('"budget', [2]),
    ("*", []),
    ("budget*", [2]),
    ("NEAR(", []),
    ("NEAR(budget spreadsheet, 2)", [2]),
    ("' OR 1=1 --", []),
    ("'; DROP TABLE prompt_history; --", []),
    ("AND OR NOT", []),
    ("topics: budget ^ (", [2]),
    ("😀🎉🔥", []),
    ("a\x00b", []),
    ("\ud800 lone surrogate", []),
    ("红叶" * 5000, [1]),
    ("预算 budget 红叶 " * 1000, [1, 2]),
]


@pytest.mark.parametrize(("query", "expected_days"), HOSTILE_QUERIES)
async def test_hostile_queries_never_raise(
    store: SqliteStore, db_path: Path, query: str, expected_days: list[int]
) -> None:
    """FTS syntax, SQL, emoji, NUL, bad Unicode and 10 kB questions are plain words."""
    await push(store, ALICE, day(1), HIKING)
    await push(store, ALICE, day(2), BUDGET)

    found = await store.search_summaries(ALICE, query, limit=3)

    assert sorted(days_of(found)) == [day(n) for n in expected_days]
    assert row_counts(db_path) == (2, 2, 2)


async def test_hostile_words_still_match_as_words(store: SqliteStore) -> None:
    """FTS operators in a question are searched as plain words, not obeyed."""
    near = await push(store, ALICE, day(1), plain("we sat near the window and did not order"))
    await push(store, ALICE, day(2), BUDGET)

    found = await store.search_summaries(ALICE, "NEAR( window", limit=5)

    assert [r.id for r in found] == [near.id]


async def test_summary_with_bad_unicode_is_stored(store: SqliteStore) -> None:
    """A lone surrogate in LLM output is replaced, not a reason to lose the summary."""
    record = await push(store, ALICE, DAY1, DaySummary("bad \ud800 text", keywords=("k\udfff",)))

    assert record.content == DaySummary("bad \ufffd text", keywords=("k\ufffd",))


# -- the day's messages -----------------------------------------------------------------


async def test_chats_active_between_bounds(store: SqliteStore) -> None:
    """Start is inclusive, end exclusive, and a chat with only bot messages is not active."""
    bot_only = ChatKey("telegram", ChatKind.GROUP, "-100")
    late = ChatKey("qq", ChatKind.PRIVATE, "789")
    await add(store, incoming(ALICE, "1", at(0)), incoming(late, "1", at(60)))
    await add(store, incoming(GROUP, "1", at(-1)), incoming(bot_only, "1", at(-5)))
    await bot_says(store, bot_only, "晚安", at(10))

    active = await store.chats_active_between(at(0), at(60))

    assert active == [ALICE]


async def test_chats_active_between_lists_each_chat_once(store: SqliteStore) -> None:
    """A chat with many messages in the range is listed once; chats come sorted by key."""
    await add(store, *(incoming(GROUP, str(n), at(n)) for n in range(5)))
    await add(store, incoming(ALICE, "1", at(3)))

    assert await store.chats_active_between(at(0), at(10)) == [GROUP, ALICE]


async def test_messages_between_in_order_with_bot_replies(store: SqliteStore) -> None:
    """The range gives chatters' and the bot's messages oldest first, ends excluded."""
    await add(store, incoming(ALICE, "0", at(-1)), incoming(ALICE, "1", at(1), text="早"))
    await bot_says(store, ALICE, "早上好", at(2))
    await add(store, incoming(ALICE, "3", at(3), text="吃了吗"), incoming(ALICE, "9", at(10)))

    found = await store.messages_between(ALICE, at(0), at(10), limit=10)

    assert [(m.text, m.from_bot, m.sent_at) for m in found] == [
        ("早", False, at(1)),
        ("早上好", True, at(2)),
        ("吃了吗", False, at(3)),
    ]


async def test_messages_between_keeps_the_newest_limit(store: SqliteStore) -> None:
    """Over the limit, the newest messages are kept, still oldest first."""
    await add(store, *(incoming(ALICE, str(n), at(n), text=f"m{n}") for n in range(6)))
    await add(store, incoming(GROUP, "99", at(4)))

    found = await store.messages_between(ALICE, at(0), at(100), limit=3)

    assert [m.text for m in found] == ["m3", "m4", "m5"]
    assert all(isinstance(m, StoredMessage) and m.chat == ALICE for m in found)
