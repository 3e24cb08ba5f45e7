"""The schema migration runner on real SQLite files."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path

import aiosqlite
import pytest

from bot.errors import StorageError
from bot.models import ChatKey, ChatKind, DaySummary, IncomingMessage, PersonNote
from bot.replies.items import Text
from storage import search
from storage.migrate import Migration, load_migrations, migrate, split_statements
from storage.sqlite import SqliteStore

STEP_ONE = Migration(1, "0001_one.sql", "CREATE TABLE one (a INTEGER);")
STEP_TWO = Migration(
    2, "0002_two.sql", "CREATE TABLE two (b INTEGER);\nINSERT INTO two VALUES (2);"
)
NOW = datetime(2026, 3, 6, tzinfo=UTC)
BROKEN_TWO = Migration(
    2, "0002_broken.sql", "CREATE TABLE two (b INTEGER);\nINSERT INTO nowhere VALUES (1);"
)


def tables(path: Path) -> list[str]:
    """List the tables in the file, by name."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [name for (name,) in rows]


def user_version(path: Path) -> int:
    """Read the schema version of the file."""
    with closing(sqlite3.connect(path)) as db:
        version: int = db.execute("PRAGMA user_version").fetchone()[0]
        return version


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
    """Open an autocommit connection to a new file."""
    async with aiosqlite.connect(tmp_path / "test.sqlite3", isolation_level=None) as conn:
        yield conn


def test_bundled_migrations_are_numbered_from_one() -> None:
    """The shipped SQL files load as versions 1, 2, ... in order."""
    versions = [migration.version for migration in load_migrations()]

    assert versions == list(range(1, len(versions) + 1))
    assert load_migrations()[0].name == "0001_initial.sql"


def test_split_keeps_triggers_whole() -> None:
    """Statements split at semicolons, except inside a trigger body, strings or comments."""
    trigger = (
        "CREATE TRIGGER t_ai AFTER INSERT ON t BEGIN\n"
        "INSERT INTO log VALUES (new.a);\n"
        "DELETE FROM log WHERE a = 'x;y';\n"
        "END;"
    )
    script = (
        "-- a comment; with a semicolon\n"
        "CREATE TABLE t (a TEXT DEFAULT ';');\n"
        f"{trigger}\n"
        "PRAGMA user_version = 5\n"
    )

    statements = split_statements(script)

    assert statements == [
        "-- a comment; with a semicolon\nCREATE TABLE t (a TEXT DEFAULT ';');",
        trigger,
        "PRAGMA user_version = 5",
    ]


def test_split_ignores_a_trailing_comment() -> None:
    """A script ending in a comment yields no empty or comment-only statement."""
    assert split_statements("SELECT 1;\n-- done\n") == ["SELECT 1;"]


async def test_migrate_applies_steps_in_order(db: aiosqlite.Connection, tmp_path: Path) -> None:
    """Each pending step runs and the version follows."""
    version = await migrate(db, [STEP_ONE, STEP_TWO])

    assert version == 2
    assert tables(tmp_path / "test.sqlite3") == ["one", "two"]
    assert user_version(tmp_path / "test.sqlite3") == 2


async def test_migrate_twice_is_a_no_op(db: aiosqlite.Connection, tmp_path: Path) -> None:
    """Running the migrations again applies nothing a second time."""
    await migrate(db, [STEP_ONE, STEP_TWO])

    version = await migrate(db, [STEP_ONE, STEP_TWO])

    with closing(sqlite3.connect(tmp_path / "test.sqlite3")) as check:
        rows = check.execute("SELECT b FROM two").fetchall()
    assert (version, rows) == (2, [(2,)])


async def test_failed_step_rolls_back_whole(db: aiosqlite.Connection, tmp_path: Path) -> None:
    """A step that fails half-way leaves neither its tables nor a new version behind."""
    with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
        await migrate(db, [STEP_ONE, BROKEN_TWO])

    assert tables(tmp_path / "test.sqlite3") == ["one"]
    assert user_version(tmp_path / "test.sqlite3") == 1
    assert not db.in_transaction


async def test_newer_database_is_refused(db: aiosqlite.Connection) -> None:
    """A version above the newest known step raises StorageError naming both versions."""
    await db.execute("PRAGMA user_version = 7")

    with pytest.raises(StorageError, match=r"version 7, newer than this pacebot knows \(2\)"):
        await migrate(db, [STEP_ONE, STEP_TWO])


async def test_two_connections_migrate_once(tmp_path: Path) -> None:
    """Two connections migrating one fresh file at once apply each step exactly once."""
    path = tmp_path / "shared.sqlite3"
    async with (
        aiosqlite.connect(path, isolation_level=None, timeout=5) as first,
        aiosqlite.connect(path, isolation_level=None, timeout=5) as second,
    ):
        versions = await asyncio.gather(
            migrate(first, [STEP_ONE, STEP_TWO]), migrate(second, [STEP_ONE, STEP_TWO])
        )

    with closing(sqlite3.connect(path)) as check:
        rows = check.execute("SELECT b FROM two").fetchall()
    assert (list(versions), rows) == ([2, 2], [(2,)])


async def test_upgrade_to_pictures_keeps_old_messages(tmp_path: Path) -> None:
    """A version-2 database gains the picture columns; its messages have no pictures."""
    path = tmp_path / "data" / "pacebot.sqlite3"
    path.parent.mkdir(parents=True)
    chat = ChatKey("telegram", ChatKind.PRIVATE, "123")
    async with aiosqlite.connect(path, isolation_level=None) as old:
        await migrate(old, load_migrations()[:2])
        await old.execute(
            "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
            " sent_at, received_at) VALUES (?, '1', '42', 'Alice', '[photo] 老照片', 1, 1)",
            (str(chat),),
        )

    async with await SqliteStore.open(path) as store:
        batch = await store.open_batch(chat, limit=10, now=datetime(2026, 3, 5, tzinfo=UTC))
        noted = await store.add_image_notes(chat, {"1": "a note for a picture it never had"})

    assert user_version(path) == len(load_migrations())
    assert batch is not None
    assert [(m.text, m.pictures, m.image_note) for m in batch.messages] == [
        ("[photo] 老照片", (), None)
    ]
    assert noted == 0


async def test_a_memory_database_gains_people_and_traces(db_path: Path) -> None:
    """A version-2 file with a summary upgrades in place: its rows stay, facts and traces work."""
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, load_migrations()[:2])
        await old.execute(
            "INSERT INTO prompt_history (chat_key, summary_date, added_prompt,"
            " full_prompt_before, full_prompt_after, created_at)"
            " VALUES ('test:private:1', '2026-03-05', 'OLD-SUMMARY', '', '', 0)"
        )

    async with await SqliteStore.open(db_path) as store:
        chat = ChatKey.parse("test:private:1")
        note = PersonNote("7", "小明", ("喜欢猫",))
        added = await store.add_facts(chat, date(2026, 3, 5), [note], keep=5, now=NOW)
        traces = await store.recent_traces(chat, count=1)

    with closing(sqlite3.connect(db_path)) as check:
        kept = check.execute("SELECT added_prompt FROM prompt_history").fetchall()
    assert user_version(db_path) == len(load_migrations())
    assert kept == [("OLD-SUMMARY",)]
    assert [fact.text for fact in added] == ["喜欢猫"]
    assert traces == []


# Summaries as pacebot wrote them while it cut Chinese with jieba 0.42 (schema 15): the
# index parts (summary, topic, key point, keywords) and the search_text jieba made of them.
JIEBA_INDEXED = (
    (
        ("小明和阿花周末坐高铁去杭州旅游，在西湖边吃了东坡肉。", "旅游", "小明订了高铁票", "西湖"),
        "小明 和 阿花 周末 坐 高铁 去 杭州 旅游 在 西湖 边 吃 了 东坡 东坡肉 旅游 小 明订 了"
        " 高铁 票 西湖",
    ),
    (
        ("中华人民共和国成立纪念日放假，大刘在准备考研，12月底考试。", "考研", "大刘复习数学"),
        "中华 华人 人民 共和 共和国 中华人民共和国 成立 纪念 纪念日 放假 大 刘 在 准备 考研 12"
        " 月底 考试 考研 大 刘 复习 数学",
    ),
    (
        ("Lily的猫又把杯子打翻了，她想给猫买一个自动喂食器。", "猫", "喂食器"),
        "lily 的 猫 又 把 杯子 打翻 了 她 想 给 猫 买 一个 自动 喂食 器 猫 喂食 器",
    ),
)
CHAT = "telegram:private:1"
DICTIONARY_FREE = 15  # the migrations before 0016, the step that cuts the index again


async def jieba_indexed_database(db_path: Path) -> None:
    """Write a database of schema 15 whose summaries jieba cut, the third one popped."""
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, load_migrations()[:DICTIONARY_FREE])
        for day, ((summary, topic, point, *keywords), search_text) in enumerate(
            JIEBA_INDEXED, start=1
        ):
            cursor = await old.execute(
                "INSERT INTO prompt_history (chat_key, summary_date, added_prompt,"
                " full_prompt_before, full_prompt_after, created_at)"
                " VALUES (?, ?, ?, '', '', 0)",
                (CHAT, f"2026-03-0{day}", summary),
            )
            await old.execute(
                "INSERT INTO knowledge_index (prompt_history_id, chat_key, summary_date,"
                " summary, topics, key_points, keywords, search_text, is_deleted)"
                " VALUES (?, ?, ?, ?, json_array(?), json_array(?), ?, ?, ?)",
                (
                    cursor.lastrowid,
                    CHAT,
                    f"2026-03-0{day}",
                    summary,
                    topic,
                    point,
                    json.dumps(keywords, ensure_ascii=False),
                    search_text,
                    int(day == 3),
                ),
            )


async def test_the_migration_cuts_a_jieba_index_again(db_path: Path) -> None:
    """Migration 0016 cuts every stored row again, popped ones too, as a new summary is cut,
    and the FTS index follows: jieba's word 东坡肉 is gone, the pair 小明 is found."""
    await jieba_indexed_database(db_path)

    async with await SqliteStore.open(db_path):
        pass

    with closing(sqlite3.connect(db_path)) as check:
        stored = [text for (text,) in check.execute("SELECT search_text FROM knowledge_index")]
        by_word = {
            word: [
                rowid
                for (rowid,) in check.execute(
                    "SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH ?", (f'"{word}"',)
                )
            ]
            for word in ("小明", "东坡肉", "喂食")
        }
    assert user_version(db_path) == len(load_migrations())
    assert stored == [search.index_text(parts) for parts, _ in JIEBA_INDEXED]
    assert by_word == {"小明": [1], "东坡肉": [], "喂食": [3]}


async def test_a_jieba_indexed_database_still_recalls_after_the_migration(db_path: Path) -> None:
    """Summaries an older pacebot indexed with jieba are found by keyword once migrated."""
    await jieba_indexed_database(db_path)
    questions = ("上次坐高铁去杭州玩", "大刘考研怎么样了", "小明订的票", "自动喂食器买了吗")

    async with await SqliteStore.open(db_path) as store:
        found = {
            question: [
                record.day.isoformat()
                for record in await store.search_summaries(ChatKey.parse(CHAT), question, limit=3)
            ]
            for question in questions
        }

    assert found == {
        "上次坐高铁去杭州玩": ["2026-03-01"],
        "大刘考研怎么样了": ["2026-03-02"],
        "小明订的票": ["2026-03-01"],
        "自动喂食器买了吗": [],  # popped: hidden from recall, though cut again
    }


async def test_existing_memory_gets_the_vector_table_and_waits_to_be_embedded(
    tmp_path: Path,
) -> None:
    """A database from before semantic recall upgrades on open; its summaries are pending."""
    path = tmp_path / "old.sqlite3"
    before_vectors = [m for m in load_migrations() if m.name < "0006"]
    async with aiosqlite.connect(path, isolation_level=None) as old:
        await migrate(old, before_vectors)
    chat = ChatKey("telegram", ChatKind.PRIVATE, "1")
    async with await SqliteStore.open(path) as store:
        pushed = await store.push_summary(
            chat,
            date(2026, 3, 5),
            DaySummary(summary="旧的一天"),
            added_prompt="[Memory of 2026-03-05] 旧的一天",
            full_prompt_before="",
            full_prompt_after="",
            message_count=1,
            now=datetime.now(UTC),
        )
        pending, position = await store.unembedded(model="m", after=None)
        facts, end = await store.unembedded(model="m", after=position)

    assert "embeddings" in tables(path)
    assert user_version(path) == load_migrations()[-1].version
    assert [(row.kind, row.row_id, row.text) for row in pending] == [
        ("summary", pushed.id, "[Memory of 2026-03-05] 旧的一天")
    ]
    assert (position, facts, end) == (("fact", 0), [], None)  # summaries, then facts


async def test_a_people_database_gains_the_record_of_who_was_forgotten(db_path: Path) -> None:
    """A version-6 file keeps its facts; a person forgotten after the upgrade stays forgotten."""
    db_path.parent.mkdir(parents=True)
    chat = ChatKey.parse("test:private:1")
    day = date(2026, 3, 5)
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, [m for m in load_migrations() if m.name < "0007"])
        await old.execute(
            "INSERT INTO person_facts (chat_key, user_id, user_name, fact, normalised,"
            " source_day, created_at) VALUES (?, '8', 'Alice', '喜欢猫', '喜欢猫', ?, 0)",
            (str(chat), day.isoformat()),
        )

    async with await SqliteStore.open(db_path) as store:
        kept = await store.live_facts(chat, ["8"])
        forgotten = await store.forget_person(chat, "8", by="test:8", now=NOW, through=day)
        relearned = await store.add_facts(
            chat, day, [PersonNote("8", "Alice", ("喜欢狗",))], keep=5, now=NOW
        )

    assert user_version(db_path) == load_migrations()[-1].version
    assert [f.text for f in kept["8"]] == ["喜欢猫"]
    assert (forgotten, relearned) == (1, [])


async def test_queued_replies_become_text_items(db_path: Path) -> None:
    """A version-7 file's queued reply is, after the upgrade, a text item with its quote;
    the outbox then takes items of other kinds and refuses a kind it does not know."""
    db_path.parent.mkdir(parents=True)
    chat = ChatKey.parse("test:group:1")
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, [m for m in load_migrations() if m.name < "0008"])
        await old.execute(
            "INSERT INTO batches (id, chat_key, state, created_at) VALUES (1, ?, 'answered', 0)",
            (str(chat),),
        )
        await old.execute(
            "INSERT INTO outbox (chat_key, batch_id, seq, content, reply_to, due_at, updated_at)"
            " VALUES (?, 1, 0, '旧的回复', '88', 0, 0)",
            (str(chat),),
        )

    async with await SqliteStore.open(db_path) as store:
        queued = await store.next_scheduled(chat)
    with closing(sqlite3.connect(db_path)) as db:
        db.execute(
            "INSERT INTO outbox (chat_key, batch_id, seq, kind, content, reply_to, due_at,"
            " updated_at) VALUES (?, 1, 1, 'react', '👍', '88', 0, 0)",
            (str(chat),),
        )
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(
                "INSERT INTO outbox (chat_key, batch_id, seq, kind, content, due_at, updated_at)"
                " VALUES (?, 1, 2, 'gif', 'x', 0, 0)",
                (str(chat),),
            )

    assert queued is not None
    assert (queued.item, user_version(db_path)) == (
        Text("旧的回复", "88"),
        load_migrations()[-1].version,
    )


async def test_old_chats_are_named_once_their_messages_give_a_title(db_path: Path) -> None:
    """A version-10 file's private chat is named by its chatter at once; its group, which
    had no stored title, by the first message after the upgrade that gives one."""
    db_path.parent.mkdir(parents=True)
    private, group = ChatKey.parse("test:private:1"), ChatKey.parse("test:group:2")
    async with aiosqlite.connect(db_path, isolation_level=None) as old:
        await migrate(old, [m for m in load_migrations() if m.name < "0011"])
        for chat, message_id in ((private, "1"), (group, "2")):
            await old.execute(
                "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
                " sent_at, received_at) VALUES (?, ?, '8', 'Alice', 'hi', 0, 0)",
                (str(chat), message_id),
            )

    async with await SqliteStore.open(db_path) as store:
        before = await store.chat_names([private, group])
        titled = IncomingMessage(group, "3", "8", "Alice", "hi", NOW, chat_title="读书会")
        await store.add_message(titled, received_at=NOW)
        after = await store.chat_names([private, group])

    assert before == {private: "Alice"}
    assert after == {private: "Alice", group: "读书会"}
    assert user_version(db_path) == load_migrations()[-1].version
