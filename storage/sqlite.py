"""Keep messages, batches, the outbox and each chat's memory in one SQLite file.

The database runs in WAL mode with ``synchronous=NORMAL``: a committed write survives a
killed process. Every public method is one short transaction on one connection, guarded
by a lock so two coroutines never interleave inside a transaction. Times are stored as
unix seconds (UTC) and come back as aware UTC datetimes; naive datetimes are a
programming error and raise ``ValueError``.

The schema is versioned with ``PRAGMA user_version``: ``storage/migrations/NNNN_*.sql``
are applied in order on open, each in its own transaction.

Memory (the prompt stack and its knowledge index) has its SQL in ``storage/memory.py`` and
its word cutting in ``storage/search.py``; the methods here hold the lock around them and
cut words in a worker thread, outside the lock.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiosqlite

from bot.errors import StorageError, SummaryExists
from bot.models import (
    Batch,
    BatchOutcome,
    ChatKey,
    DaySummary,
    IncomingMessage,
    OutboxItem,
    OutboxState,
    PlannedReply,
    StoredMessage,
    SummaryRecord,
)
from storage import memory, search

_BUSY_TIMEOUT_MS = 5000  # another process holding the write lock: wait, then fail
_PARSE_SLICE = 1000  # chat keys parsed per event-loop turn (~2 ms) when a query returns many
_BOT_SENDER_ID = "bot"
_MIGRATION_NAME = re.compile(r"^(\d{4})_\w+\.sql$")

_MESSAGE_COLUMNS = (
    "chat_key, message_id, sender_id, sender_name, text, sent_at, from_bot, "
    "addresses_bot, reply_to_id"
)
_OUTBOX_COLUMNS = "id, chat_key, batch_id, seq, content, reply_to, due_at, state"


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step."""

    version: int
    name: str
    sql: str


def load_migrations() -> tuple[Migration, ...]:
    """Read the bundled ``migrations/NNNN_name.sql`` files in version order."""
    found: list[Migration] = []
    for entry in resources.files("storage.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if versions != list(range(1, len(found) + 1)):
        msg = f"migration files must be numbered 0001, 0002, ... without gaps; found {versions}"
        raise StorageError(msg)
    return tuple(found)


def split_statements(script: str) -> list[str]:
    """Cut an SQL script into single statements (``CREATE TRIGGER ... END;`` stays whole)."""
    statements: list[str] = []
    pending = ""
    *terminated, rest = script.split(";")
    for part in terminated:
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    tail = pending + rest
    if tail.strip() and not _only_comments(tail):
        statements.append(tail.strip())
    return statements


def _only_comments(sql: str) -> bool:
    lines = (line.strip() for line in sql.splitlines())
    return all(not line or line.startswith("--") for line in lines)


async def migrate(db: aiosqlite.Connection, migrations: Sequence[Migration]) -> int:
    """Bring the schema up to the newest migration; return the resulting version.

    ``db`` must be in autocommit mode (``isolation_level=None``). Each migration runs in
    one ``BEGIN IMMEDIATE`` transaction that re-reads the version first, so two processes
    opening a fresh file at once do not apply a step twice.
    """
    newest = migrations[-1].version if migrations else 0
    version = await _user_version(db)
    if version > newest:
        msg = (
            f"the database schema is version {version}, newer than this pacebot knows "
            f"({newest}); upgrade pacebot or restore an older database"
        )
        raise StorageError(msg)
    for migration in migrations:
        if migration.version <= version:
            continue
        await db.execute("BEGIN IMMEDIATE")
        try:
            version = await _user_version(db)
            if migration.version > version:
                for statement in split_statements(migration.sql):
                    await db.execute(statement)
                # Inside the transaction: the version moves only if the whole step did.
                await db.execute(f"PRAGMA user_version = {migration.version:d}")
                version = migration.version
        except BaseException:
            # Queued before this await can be cancelled, so it always runs.
            await db.rollback()
            raise
        await db.commit()
    return version


async def _user_version(db: aiosqlite.Connection) -> int:
    rows = list(await db.execute_fetchall("PRAGMA user_version"))
    return int(rows[0][0])


def _unix(moment: datetime, what: str) -> float:
    if moment.tzinfo is None or moment.utcoffset() is None:
        msg = f"{what} must be timezone-aware, got {moment!r}"
        raise ValueError(msg)
    return moment.timestamp()


def _aware(unix_s: float) -> datetime:
    return datetime.fromtimestamp(unix_s, tz=UTC)


def _clean(text: str) -> str:
    """Make text storable: lone surrogates (from escaped JSON) become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _stored_message(row: sqlite3.Row, chat: ChatKey) -> StoredMessage:
    return StoredMessage(
        chat=chat,
        message_id=row["message_id"],
        sender_id=row["sender_id"],
        sender_name=row["sender_name"],
        text=row["text"],
        sent_at=_aware(row["sent_at"]),
        from_bot=bool(row["from_bot"]),
        addresses_bot=bool(row["addresses_bot"]),
        reply_to_id=row["reply_to_id"],
    )


def _outbox_item(row: sqlite3.Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        chat=ChatKey.parse(row["chat_key"]),
        batch_id=row["batch_id"],
        seq=row["seq"],
        content=row["content"],
        due_at=_aware(row["due_at"]),
        state=OutboxState(row["state"]),
        reply_to=row["reply_to"],
    )


class SqliteStore:
    """The :class:`bot.ports.Store` and :class:`bot.ports.MemoryStore` on one SQLite file."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        """Wrap an open, migrated connection; use :meth:`open` instead."""
        self._db = db
        self._path = path
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, path: Path) -> SqliteStore:
        """Open (creating if needed) and migrate the database at ``path``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            msg = f"cannot create the data directory {path.parent}: {error}"
            raise StorageError(msg) from error
        try:
            # When aiosqlite's own connect fails, its worker thread outlives the call and
            # may report to a closed loop; open the file once in a plain thread first.
            await asyncio.to_thread(_probe, path)
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            msg = f"cannot open the database {path}: {error}"
            raise StorageError(msg) from error
        try:
            await _configure(db, path)
            await migrate(db, load_migrations())
            # Load jieba's dictionary (about 0.5 s, once per process) off the event loop
            # now, so the first summary or recall does not wait for it.
            await asyncio.to_thread(search.warm_up)
        except sqlite3.Error as error:
            await db.close()
            msg = f"cannot open the database {path}: {error}"
            raise StorageError(msg) from error
        except BaseException:
            await db.close()
            raise
        return cls(db, path)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the database; calling it again does nothing."""
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                with suppress(sqlite3.Error):  # only a hint to the query planner
                    await self._db.execute("PRAGMA optimize")
                await self._db.close()
            except sqlite3.Error as error:
                msg = f"cannot close the database {self._path}: {error}"
                raise StorageError(msg) from error

    # -- messages ----------------------------------------------------------------------

    async def add_message(self, message: IncomingMessage, *, received_at: datetime) -> bool:
        """Store a chatter's message once; return ``False`` if it was already stored."""
        row = (
            str(message.chat),
            message.message_id,
            message.sender_id,
            _clean(message.sender_name),
            _clean(message.text),
            _unix(message.sent_at, "sent_at"),
            _unix(received_at, "received_at"),
            message.addresses_bot,
            message.reply_to_id,
        )
        async with self._connection() as db:
            cursor = await db.execute(
                "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
                " sent_at, received_at, from_bot, addresses_bot, reply_to_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)"
                " ON CONFLICT (chat_key, message_id) DO NOTHING",
                row,
            )
            return cursor.rowcount == 1

    async def edit_message(self, chat: ChatKey, message_id: str, text: str) -> bool:
        """Replace a stored message's text; return ``False`` if it is unknown."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE messages SET text = ? WHERE chat_key = ? AND message_id = ?",
                (_clean(text), str(chat), message_id),
            )
            return cursor.rowcount == 1

    async def is_bot_message(self, chat: ChatKey, message_id: str) -> bool:
        """Tell whether ``message_id`` in ``chat`` is a message the bot sent."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT 1 FROM messages WHERE chat_key = ? AND message_id = ? AND from_bot = 1",
                (str(chat), message_id),
            )
        return bool(rows)

    async def waiting_counts(self, chat: ChatKey | None = None) -> dict[ChatKey, int]:
        """Count, per chat (or for ``chat`` only), the messages no batch has taken yet."""
        only = "" if chat is None else " AND chat_key = ?"
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT chat_key, count(*) FROM messages"
                f" WHERE batch_id IS NULL AND from_bot = 0{only} GROUP BY chat_key",
                () if chat is None else (str(chat),),
            )
        counts: dict[ChatKey, int] = {}
        for index, (chat_key, count) in enumerate(rows, start=1):
            counts[ChatKey.parse(chat_key)] = count
            if index % _PARSE_SLICE == 0:
                await asyncio.sleep(0)  # at start-up this may be every chat: let the loop run
        return counts

    async def recent_history(
        self, chat: ChatKey, *, exclude_batch: int, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` newest answered-or-sent messages, oldest first."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages"
                " WHERE chat_key = ?"
                " AND (from_bot = 1 OR (batch_id IS NOT NULL AND batch_id <> ?))"
                " ORDER BY sent_at DESC, id DESC LIMIT ?",
                (str(chat), exclude_batch, limit),
            )
        return [_stored_message(row, chat) for row in reversed(list(rows))]

    async def chats_active_between(self, start: datetime, end: datetime) -> list[ChatKey]:
        """Return the chats with chatter messages sent in ``[start, end)``, by chat key."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT DISTINCT chat_key FROM messages"
                " WHERE from_bot = 0 AND sent_at >= ? AND sent_at < ? ORDER BY chat_key",
                (_unix(start, "start"), _unix(end, "end")),
            )
        return [ChatKey.parse(chat_key) for (chat_key,) in rows]

    async def messages_between(
        self, chat: ChatKey, start: datetime, end: datetime, *, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` messages (chatters' and the bot's) sent in ``[start, end)``.

        They come oldest first; if there are more, the newest ``limit`` are kept, since
        how a day ended matters more to its summary than how it began.
        """
        if limit < 1:
            msg = f"limit must be at least 1, got {limit}"
            raise ValueError(msg)
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages"
                " WHERE chat_key = ? AND sent_at >= ? AND sent_at < ?"
                " ORDER BY sent_at DESC, id DESC LIMIT ?",
                (str(chat), _unix(start, "start"), _unix(end, "end"), limit),
            )
        return [_stored_message(row, chat) for row in reversed(list(rows))]

    # -- batches -----------------------------------------------------------------------

    async def open_batch(self, chat: ChatKey, *, limit: int, now: datetime) -> Batch | None:
        """Take up to ``limit`` oldest waiting messages of a chat into a new open batch."""
        if limit < 1:
            msg = f"limit must be at least 1, got {limit}"
            raise ValueError(msg)
        created_at = _unix(now, "now")
        async with self._transaction() as db:
            inserted = await db.execute_fetchall(
                "INSERT INTO batches (chat_key, state, created_at) VALUES (?, 'open', ?)"
                " RETURNING id",
                (str(chat), created_at),
            )
            batch_id: int = next(iter(inserted))[0]
            taken = list(
                await db.execute_fetchall(
                    "UPDATE messages SET batch_id = ? WHERE id IN ("
                    " SELECT id FROM messages"
                    " WHERE chat_key = ? AND batch_id IS NULL AND from_bot = 0"
                    " ORDER BY id LIMIT ?)"
                    f" RETURNING id, {_MESSAGE_COLUMNS}",
                    (batch_id, str(chat), limit),
                )
            )
            if not taken:
                await db.rollback()
                return None
        taken.sort(key=lambda row: int(row["id"]))
        return Batch(batch_id, chat, tuple(_stored_message(row, chat) for row in taken))

    async def close_batch(
        self,
        batch_id: int,
        outcome: BatchOutcome,
        *,
        now: datetime,
        replies: Sequence[PlannedReply] = (),
        error: str | None = None,
    ) -> list[OutboxItem]:
        """Record how a batch ended and, in the same transaction, queue its replies.

        Raise ``StorageError`` if the batch is not open (closing twice is a bug).
        """
        if outcome is BatchOutcome.OPEN:
            msg = "a batch cannot be closed as 'open'"
            raise ValueError(msg)
        finished_at = _unix(now, "now")
        due = [_unix(reply.due_at, "due_at") for reply in replies]
        async with self._transaction() as db:
            closed = list(
                await db.execute_fetchall(
                    "UPDATE batches SET state = ?, finished_at = ?, error = ?"
                    " WHERE id = ? AND state = 'open' RETURNING chat_key",
                    (outcome.value, finished_at, error, batch_id),
                )
            )
            if not closed:
                await db.rollback()
                msg = f"batch {batch_id} is not open: it was closed already or never existed"
                raise StorageError(msg)
            if not replies:
                return []
            chat_key: str = closed[0]["chat_key"]
            values = ", ".join(["(?, ?, ?, ?, ?, ?, 'scheduled', ?)"] * len(replies))
            params: list[Any] = []
            for seq, (reply, due_at) in enumerate(zip(replies, due, strict=True)):
                params += [
                    chat_key,
                    batch_id,
                    seq,
                    _clean(reply.content),
                    reply.reply_to,
                    due_at,
                    finished_at,
                ]
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO outbox"
                    " (chat_key, batch_id, seq, content, reply_to, due_at, state, updated_at)"
                    f" VALUES {values} RETURNING {_OUTBOX_COLUMNS}",
                    params,
                )
            )
        return sorted((_outbox_item(row) for row in rows), key=lambda item: item.seq)

    async def abandon_open_batches(self, *, now: datetime) -> int:
        """Mark batches left open by a crash abandoned; their messages wait again."""
        finished_at = _unix(now, "now")
        async with self._transaction() as db:
            await db.execute(
                "UPDATE messages SET batch_id = NULL WHERE from_bot = 0"
                " AND batch_id IN (SELECT id FROM batches WHERE state = 'open')"
            )
            cursor = await db.execute(
                "UPDATE batches SET state = 'abandoned', finished_at = ? WHERE state = 'open'",
                (finished_at,),
            )
            return cursor.rowcount

    async def failed_batches_since(self, since: datetime) -> int:
        """Count batches that failed since ``since``."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT count(*) FROM batches WHERE state = 'failed' AND finished_at >= ?",
                (_unix(since, "since"),),
            )
        return int(next(iter(rows))[0])

    # -- outbox ------------------------------------------------------------------------

    async def unsaid_replies(self, chat: ChatKey, *, before_batch: int) -> list[str]:
        """Return the cancelled replies of the chat's last answered batch before this one."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT content FROM outbox WHERE state = 'cancelled' AND batch_id = ("
                " SELECT id FROM batches WHERE chat_key = ? AND state = 'answered' AND id < ?"
                " ORDER BY id DESC LIMIT 1)"
                " ORDER BY seq",
                (str(chat), before_batch),
            )
        return [content for (content,) in rows]

    async def next_scheduled(self, chat: ChatKey) -> OutboxItem | None:
        """Return the chat's earliest scheduled reply, if any."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {_OUTBOX_COLUMNS} FROM outbox"
                    " WHERE chat_key = ? AND state = 'scheduled'"
                    " ORDER BY due_at, batch_id, seq LIMIT 1",
                    (str(chat),),
                )
            )
        return _outbox_item(rows[0]) if rows else None

    async def claim_for_sending(self, item_id: int, *, now: datetime) -> bool:
        """Move a reply from scheduled to sending; ``False`` if it is no longer scheduled."""
        return await self._move(item_id, "scheduled", "sending", now) == 1

    async def mark_sent(
        self, item_id: int, *, platform_message_id: str, sender_name: str, now: datetime
    ) -> None:
        """Record a reply as sent and keep it as a bot message in the chat's history.

        Raise ``StorageError`` if the reply is not being sent (a bug in the caller).
        """
        sent_at = _unix(now, "now")
        async with self._transaction() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'sent', platform_message_id = ?, updated_at = ?"
                " WHERE id = ? AND state = 'sending'",
                (platform_message_id, sent_at, item_id),
            )
            if cursor.rowcount != 1:
                await db.rollback()
                msg = f"outbox item {item_id} is not being sent"
                raise StorageError(msg)
            # The WHERE clause keeps SQLite from reading ON CONFLICT as a join constraint.
            await db.execute(
                "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
                " sent_at, received_at, from_bot, addresses_bot, reply_to_id, batch_id)"
                " SELECT chat_key, ?, ?, ?, content, ?, ?, 1, 0, reply_to, batch_id"
                " FROM outbox WHERE id = ?"
                " ON CONFLICT (chat_key, message_id) DO NOTHING",
                (
                    platform_message_id,
                    _BOT_SENDER_ID,
                    _clean(sender_name),
                    sent_at,
                    sent_at,
                    item_id,
                ),
            )

    async def release(self, item_id: int, *, now: datetime) -> None:
        """Return a reply that was certainly not delivered from sending to scheduled.

        Raise ``StorageError`` if the reply is not being sent (a bug in the caller).
        """
        if await self._move(item_id, "sending", "scheduled", now) != 1:
            msg = f"outbox item {item_id} is not being sent"
            raise StorageError(msg)

    async def mark_dropped(self, item_id: int, *, now: datetime, reason: str) -> None:
        """Give up on one reply; a reply already sent, cancelled or dropped stays so."""
        async with self._connection() as db:
            await db.execute(
                "UPDATE outbox SET state = 'dropped', reason = ?, updated_at = ?"
                " WHERE id = ? AND state IN ('scheduled', 'sending')",
                (reason, _unix(now, "now"), item_id),
            )

    async def cancel_scheduled(self, chat: ChatKey, *, now: datetime) -> int:
        """Cancel every scheduled reply of a chat; return how many."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'cancelled', updated_at = ?"
                " WHERE chat_key = ? AND state = 'scheduled'",
                (_unix(now, "now"), str(chat)),
            )
            return cursor.rowcount

    async def cancel_replies(self, item_ids: Sequence[int], *, now: datetime) -> int:
        """Cancel those of these replies that are still scheduled; return how many."""
        if not item_ids:
            return 0
        marks = ", ".join("?" * len(item_ids))
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'cancelled', updated_at = ?"
                f" WHERE state = 'scheduled' AND id IN ({marks})",
                (_unix(now, "now"), *item_ids),
            )
            return cursor.rowcount

    async def drop_scheduled(self, chat: ChatKey, *, now: datetime, reason: str) -> int:
        """Drop every scheduled reply of a chat; return how many."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'dropped', reason = ?, updated_at = ?"
                " WHERE chat_key = ? AND state = 'scheduled'",
                (reason, _unix(now, "now"), str(chat)),
            )
            return cursor.rowcount

    async def recover_outbox(self, *, now: datetime, stale_after_s: float) -> list[ChatKey]:
        """After a restart: drop ``sending`` and stale ``scheduled`` replies.

        Return the chats that still have fresh scheduled replies, most overdue first.
        """
        now_s = _unix(now, "now")
        async with self._transaction() as db:
            # A reply caught mid-send may have arrived: better to miss a line than repeat it.
            await db.execute(
                "UPDATE outbox SET state = 'dropped', reason = 'interrupted while sending',"
                " updated_at = ? WHERE state = 'sending'",
                (now_s,),
            )
            await db.execute(
                "UPDATE outbox SET state = 'dropped', reason = 'stale', updated_at = ?"
                " WHERE state = 'scheduled' AND due_at < ?",
                (now_s, now_s - stale_after_s),
            )
            rows = await db.execute_fetchall(
                "SELECT chat_key FROM outbox WHERE state = 'scheduled'"
                " GROUP BY chat_key ORDER BY min(due_at), chat_key"
            )
        return [ChatKey.parse(chat_key) for (chat_key,) in rows]

    async def scheduled_count(self, chat: ChatKey | None = None) -> int:
        """Count scheduled replies, of one chat or of all."""
        async with self._connection() as db:
            if chat is None:
                rows = await db.execute_fetchall(
                    "SELECT count(*) FROM outbox WHERE state = 'scheduled'"
                )
            else:
                rows = await db.execute_fetchall(
                    "SELECT count(*) FROM outbox WHERE chat_key = ? AND state = 'scheduled'",
                    (str(chat),),
                )
        return int(next(iter(rows))[0])

    # -- memory ------------------------------------------------------------------------

    async def has_summary(self, chat: ChatKey, day: date, *, include_popped: bool) -> bool:
        """Tell whether ``day`` has a live summary (or any, popped ones included)."""
        async with self._connection() as db:
            return await memory.has_summary(db, chat, day, include_popped=include_popped)

    async def push_summary(
        self,
        chat: ChatKey,
        day: date,
        content: DaySummary,
        *,
        added_prompt: str,
        full_prompt_before: str,
        full_prompt_after: str,
        message_count: int,
        now: datetime,
    ) -> SummaryRecord:
        """Push a day's summary and index it, atomically; ``SummaryExists`` if one is live."""
        created_at = _unix(now, "now")
        content = DaySummary(
            summary=_clean(content.summary),
            topics=tuple(_clean(topic) for topic in content.topics),
            key_points=tuple(_clean(point) for point in content.key_points),
            keywords=tuple(_clean(keyword) for keyword in content.keywords),
        )
        parts = [content.summary, *content.topics, *content.key_points, *content.keywords]
        search_text = await asyncio.to_thread(search.index_text, parts)
        async with self._transaction() as db:
            record = await memory.push(
                db,
                chat,
                day,
                content,
                search_text=search_text,
                added_prompt=_clean(added_prompt),
                full_prompt_before=_clean(full_prompt_before),
                full_prompt_after=_clean(full_prompt_after),
                message_count=message_count,
                created_at=created_at,
            )
        if record is None:
            msg = f"{chat} already has a live summary for {day.isoformat()}"
            raise SummaryExists(msg)
        return record

    async def live_summaries(self, chat: ChatKey) -> list[SummaryRecord]:
        """Return the chat's live summaries in push order (oldest first)."""
        async with self._connection() as db:
            return await memory.live_summaries(db, chat)

    async def pop_summary(self, chat: ChatKey, *, by: str, now: datetime) -> SummaryRecord | None:
        """Soft-delete the newest live summary (and hide its index row); ``None`` if none."""
        deleted_at = _unix(now, "now")
        async with self._transaction() as db:
            return await memory.pop(db, chat, by=by, deleted_at=deleted_at)

    async def restore_summary(self, chat: ChatKey, *, now: datetime) -> SummaryRecord | None:
        """Undo the last pop if nothing was pushed since; return what came back, or ``None``.

        ``None`` also when the popped day has been summarised again meanwhile.
        """
        restored_at = _unix(now, "now")
        async with self._transaction() as db:
            return await memory.restore(db, chat, restored_at=restored_at)

    async def summaries_on(self, chat: ChatKey, days: Sequence[date]) -> list[SummaryRecord]:
        """Return the live summaries of those chat days, oldest first."""
        async with self._connection() as db:
            return await memory.summaries_on(db, chat, days)

    async def search_summaries(
        self, chat: ChatKey, query: str, *, limit: int
    ) -> list[SummaryRecord]:
        """Return the live summaries that best match ``query``'s keywords, best first.

        Any text is a valid query: one with no searchable words finds nothing.
        """
        terms = await asyncio.to_thread(search.query_terms, query)
        if not terms or limit < 1:
            return []
        async with self._connection() as db:
            return await memory.search_summaries(db, chat, terms, limit=limit)

    # -- plumbing ----------------------------------------------------------------------

    async def _move(self, item_id: int, source: str, target: str, now: datetime) -> int:
        """Move one outbox row between states if it is in ``source``; return rows moved."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (target, _unix(now, "now"), item_id, source),
            )
            return cursor.rowcount

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the connection alone; turn SQLite errors into ``StorageError``."""
        async with self._lock:
            if self._closed:
                msg = f"the database {self._path} is closed"
                raise StorageError(msg)
            try:
                yield self._db
            except sqlite3.Error as error:
                msg = f"database {self._path}: {error}"
                raise StorageError(msg) from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """Run the body in one write transaction; roll back if it raises."""
        async with self._connection() as db:
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                # aiosqlite queues the call before the await can be cancelled, so the
                # rollback runs ahead of anything the next holder of the lock sends.
                await db.rollback()
                raise
            await db.commit()  # a no-op if the body rolled back itself


def _probe(path: Path) -> None:
    sqlite3.connect(path).close()


async def _configure(db: aiosqlite.Connection, path: Path) -> None:
    db.row_factory = sqlite3.Row
    await db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
    rows = list(await db.execute_fetchall("PRAGMA journal_mode = WAL"))
    mode = str(rows[0][0]).lower()
    if mode != "wal":
        msg = f"the database {path} cannot use WAL mode (journal_mode is {mode!r})"
        raise StorageError(msg)
    await db.execute("PRAGMA synchronous = NORMAL")
    await db.execute("PRAGMA foreign_keys = ON")
