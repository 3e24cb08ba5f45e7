"""What only the SQLite store has: a real file, its schema, WAL and durability.

The behaviour every store shares (messages, batches, the outbox) is proven over SQLite
in ``test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

from bot.errors import StorageError
from bot.models import BatchOutcome
from bot.replies.items import PlannedReply, Text
from fakes.store_rows import ALICE, T0, add, answered_batch, at, incoming, stored
from storage.migrate import load_migrations
from storage.sqlite import SqliteStore

LATEST_VERSION = len(load_migrations())


def peek(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the file with a second, plain connection."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


# -- opening and migrations ------------------------------------------------------------


async def test_open_migrates_an_empty_file(store: SqliteStore, db_path: Path) -> None:
    """A new database gets every migration, its tables and the newest version."""
    tables = peek(
        db_path,
        "SELECT name FROM pragma_table_list WHERE schema = 'main'"
        " AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite%' ORDER BY name",
    )
    version = peek(db_path, "PRAGMA user_version")

    assert tables == [
        ("batches",),
        ("chat_switches",),
        ("chat_titles",),
        ("embeddings",),
        ("fact_audit",),
        ("forgotten_people",),
        ("gateway_sessions",),
        ("knowledge_fts",),
        ("knowledge_index",),
        ("later_items",),
        ("llm_usage",),
        ("messages",),
        ("outbox",),
        ("person_facts",),
        ("proactive_sends",),
        ("prompt_history",),
        ("quiet_periods",),
        ("reply_seqs",),
        ("stickers",),
        ("traces",),
        ("unaddressed_calls",),
    ]
    assert version == [(LATEST_VERSION,)]


async def test_reopen_keeps_data_and_version(db_path: Path) -> None:
    """Closing and reopening keeps the stored messages and does not migrate again."""
    async with await SqliteStore.open(db_path) as first:
        await add(first, incoming(ALICE, "1"), incoming(ALICE, "2"))

    async with await SqliteStore.open(db_path) as second:
        counts = await second.waiting_counts()
        batch = await second.open_batch(ALICE, limit=30, now=T0)

    assert counts == {ALICE: 2}
    assert batch is not None
    assert [m.message_id for m in batch.messages] == ["1", "2"]
    assert peek(db_path, "PRAGMA user_version") == [(LATEST_VERSION,)]


async def test_newer_schema_is_refused(db_path: Path) -> None:
    """A database written by a newer pacebot is not opened, and not touched."""
    async with await SqliteStore.open(db_path):
        pass
    with closing(sqlite3.connect(db_path)) as db:
        db.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")

    with pytest.raises(StorageError, match="newer than this pacebot knows") as raised:
        await SqliteStore.open(db_path)

    assert f"version {LATEST_VERSION + 1}" in str(raised.value)
    assert peek(db_path, "PRAGMA user_version") == [(LATEST_VERSION + 1,)]


async def test_corrupt_file_is_refused(db_path: Path) -> None:
    """A file that is not an SQLite database gives a StorageError naming the file."""
    db_path.parent.mkdir(parents=True)
    await asyncio.to_thread(db_path.write_bytes, b"this is not a database, just text " * 200)

    with pytest.raises(StorageError, match="cannot open the database") as raised:
        await SqliteStore.open(db_path)

    assert str(db_path) in str(raised.value)


async def test_unopenable_path_is_refused(tmp_path: Path) -> None:
    """A path that is a directory gives a StorageError, not a raw sqlite3 error."""
    with pytest.raises(StorageError, match="cannot open the database"):
        await SqliteStore.open(tmp_path)


async def test_wal_mode_is_on(store: SqliteStore, db_path: Path) -> None:
    """The database file is in WAL journal mode."""
    assert peek(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_closed_store_refuses_work(db_path: Path) -> None:
    """After the context manager exits, calls raise StorageError and close is idempotent."""
    async with await SqliteStore.open(db_path) as store:
        pass

    await store.close()
    with pytest.raises(StorageError, match="closed"):
        await store.waiting_counts()


async def test_close_batch_is_atomic(store: SqliteStore, db_path: Path) -> None:
    """If queueing a reply fails, the batch stays open and no reply is queued."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    unstorable = PlannedReply(Text("two", reply_to=cast("str", object())), at(1))

    with pytest.raises(StorageError):
        await store.close_batch(
            batch.id,
            BatchOutcome.ANSWERED,
            now=T0,
            replies=[PlannedReply(Text("one"), T0), unstorable],
        )

    assert peek(db_path, "SELECT state FROM batches") == [("open",)]
    assert await store.scheduled_count() == 0
    assert await store.close_batch(batch.id, BatchOutcome.FAILED, now=T0, error="boom") == []


# -- durability ---------------------------------------------------------------------------


async def test_second_connection_sees_committed_data(db_path: Path) -> None:
    """What one store commits, another connection to the file sees while the first is open."""
    async with await SqliteStore.open(db_path) as writer:
        await add(writer, incoming(ALICE, "1"))
        async with await SqliteStore.open(db_path) as reader:
            seen = await reader.waiting_counts()
        await writer.open_batch(ALICE, limit=30, now=T0)
        raw = peek(db_path, "SELECT message_id, batch_id IS NOT NULL FROM messages")

    assert seen == {ALICE: 1}
    assert raw == [("1", 1)]


async def test_data_survives_reopen(db_path: Path) -> None:
    """Batches, queued replies and history all survive closing and reopening."""
    async with await SqliteStore.open(db_path) as first:
        await add(first, incoming(ALICE, "1"))
        batch, items = await answered_batch(first, ALICE, ["hi", "again"])
        await add(first, incoming(ALICE, "3"))

    async with await SqliteStore.open(db_path) as second:
        queued = await second.next_scheduled(ALICE)
        counts = await second.waiting_counts()
        current = await second.open_batch(ALICE, limit=30, now=at(4))
        assert current is not None
        history = await second.recent_history(ALICE, exclude_batch=current.id, limit=10)

    assert (queued, counts) == (items[0], {ALICE: 1})
    assert current.id > batch.id
    assert history == [stored(incoming(ALICE, "1"))]
