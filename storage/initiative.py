"""Keep initiative in SQL: later items from pending to done, quiet periods, opener facts.

Later items are inserted by ``close_batch`` with the answer that promised them and marked
done by the ``close_batch`` of the batch that ran them (``storage/batches.py``); here they
are claimed when due (pending → running, one conditional update, so two turns never
claim one item), dropped, cancelled and recovered after a crash.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from bot.initiative.openers import OpenerFacts, OpenerSent, QuietPeriod
from bot.initiative.promises import LaterItem, Promise
from bot.models import ChatKey
from storage.database import Database
from storage.values import aware, clean, unix

LATER_COLUMNS = (
    "id, chat_key, kind, note, due_at, state, created_at, asker_id, asker_name, reason,"
    " cancelled_by"
)
_QUIET_COLUMNS = "id, chat_key, starts_at, ends_at, set_by, ended_at, ended_by"


def later_item(row: sqlite3.Row) -> LaterItem:
    """Build a later item from a row of :data:`LATER_COLUMNS`."""
    return LaterItem(
        id=row["id"],
        chat=ChatKey.parse(row["chat_key"]),
        kind=row["kind"],
        note=row["note"],
        due_at=aware(row["due_at"]),
        state=row["state"],
        created_at=aware(row["created_at"]),
        asker_id=row["asker_id"],
        asker_name=row["asker_name"],
        reason=row["reason"],
        cancelled_by=row["cancelled_by"],
    )


def _quiet_period(row: sqlite3.Row) -> QuietPeriod:
    ended_at = row["ended_at"]
    return QuietPeriod(
        id=row["id"],
        chat=ChatKey.parse(row["chat_key"]),
        starts_at=aware(row["starts_at"]),
        ends_at=aware(row["ends_at"]),
        set_by=row["set_by"],
        ended_at=None if ended_at is None else aware(ended_at),
        ended_by=row["ended_by"],
    )


def _maybe_time(value: float | None) -> datetime | None:
    return None if value is None else aware(value)


async def keep_promises(
    db: aiosqlite.Connection,
    chat_key: str,
    batch_id: int,
    promises: Sequence[Promise],
    *,
    now_s: float,
) -> None:
    """Insert the later items a batch promised, inside the transaction that closes it."""
    if not promises:
        return
    platform = ChatKey.parse(chat_key).platform
    await db.executemany(
        "INSERT INTO later_items (chat_key, platform, batch_id, asker_id, asker_name, kind,"
        " note, due_at, state, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
        [
            (
                chat_key,
                platform,
                batch_id,
                p.asker_id,
                None if p.asker_name is None else clean(p.asker_name),
                p.kind,
                clean(p.note),
                unix(p.due_at, "due_at"),
                now_s,
                now_s,
            )
            for p in promises
        ],
    )


async def later_done(db: aiosqlite.Connection, batch_id: int, *, now_s: float) -> None:
    """Mark done the later item a closing initiative batch ran, in its transaction."""
    await db.execute(
        "UPDATE later_items SET state = 'done', updated_at = ?"
        " WHERE run_batch_id = ? AND state = 'running'",
        (now_s, batch_id),
    )


async def later_back_to_pending(db: aiosqlite.Connection, *, open_batches_only: bool) -> None:
    """Make running items pending again: their batch was abandoned, nothing was queued."""
    where = "state = 'running'"
    if open_batches_only:
        where += " AND run_batch_id IN (SELECT id FROM batches WHERE state = 'open')"
    await db.execute(f"UPDATE later_items SET state = 'pending', run_batch_id = NULL WHERE {where}")


class SqliteInitiative(Database):
    """The :class:`bot.initiative.store.InitiativeStore` in SQLite."""

    async def pending_later_count(self, chat: ChatKey) -> int:
        """Count the chat's later items not yet run (pending or being run)."""
        rows = await self._fetch(
            "SELECT count(*) FROM later_items WHERE chat_key = ?"
            " AND state IN ('pending', 'running')",
            (str(chat),),
        )
        return int(rows[0][0])

    async def next_later_due(self, *, platforms: Collection[str]) -> datetime | None:
        """Return when the earliest pending item on one of ``platforms`` falls due."""
        rows = await self._fetch(
            "SELECT due_at FROM later_items WHERE state = 'pending'"
            " AND platform IN (SELECT value FROM json_each(?)) ORDER BY due_at LIMIT 1",
            (json.dumps(list(platforms)),),
        )
        return aware(rows[0][0]) if rows else None

    async def claim_due_later(
        self, *, now: datetime, platforms: Collection[str], limit: int
    ) -> list[LaterItem]:
        """Move up to ``limit`` pending items due by ``now`` to running; return them,
        the most overdue first."""
        now_s = unix(now, "now")
        async with self._transaction() as db:
            rows = await db.execute_fetchall(
                "UPDATE later_items SET state = 'running', updated_at = ? WHERE id IN ("
                " SELECT id FROM later_items WHERE state = 'pending' AND due_at <= ?"
                " AND platform IN (SELECT value FROM json_each(?)) ORDER BY due_at LIMIT ?)"
                f" RETURNING {LATER_COLUMNS}",
                (now_s, now_s, json.dumps(list(platforms)), limit),
            )
        return sorted((later_item(row) for row in rows), key=lambda item: (item.due_at, item.id))

    async def drop_later(self, item_id: int, *, reason: str, now: datetime) -> bool:
        """Give up a pending or running item; ``False`` if it is neither any more."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE later_items SET state = 'dropped', reason = ?, updated_at = ?"
                " WHERE id = ? AND state IN ('pending', 'running')",
                (reason, unix(now, "now"), item_id),
            )
            return cursor.rowcount == 1

    async def recover_later(self, *, now: datetime, stale_after_s: float) -> list[LaterItem]:
        """After a restart: items a crash left running are pending again; pending ones more
        than ``stale_after_s`` past due are dropped. Return those dropped."""
        now_s = unix(now, "now")
        async with self._transaction() as db:
            await later_back_to_pending(db, open_batches_only=False)
            rows = await db.execute_fetchall(
                "UPDATE later_items SET state = 'dropped', reason = 'stale', updated_at = ?"
                f" WHERE state = 'pending' AND due_at < ? RETURNING {LATER_COLUMNS}",
                (now_s, now_s - stale_after_s),
            )
        return sorted((later_item(row) for row in rows), key=lambda item: item.id)

    async def later_items(
        self, chat: ChatKey, *, pending_only: bool, limit: int
    ) -> list[LaterItem]:
        """Return the chat's later items, the soonest due first (pending ones only, or all)."""
        only = " AND state IN ('pending', 'running')" if pending_only else ""
        rows = await self._fetch(
            f"SELECT {LATER_COLUMNS} FROM later_items WHERE chat_key = ?{only}"
            " ORDER BY due_at, id LIMIT ?",
            (str(chat), limit),
        )
        return [later_item(row) for row in rows]

    async def later_item(self, chat: ChatKey, item_id: int) -> LaterItem | None:
        """Return one later item of ``chat``; ``None`` if it has none with that id."""
        rows = await self._fetch(
            f"SELECT {LATER_COLUMNS} FROM later_items WHERE chat_key = ? AND id = ?",
            (str(chat), item_id),
        )
        return later_item(rows[0]) if rows else None

    async def cancel_later(
        self, chat: ChatKey, item_id: int, *, by: str, now: datetime
    ) -> LaterItem | None:
        """Cancel a pending item of ``chat`` as ``by``; ``None`` if it has no such item."""
        async with self._transaction() as db:
            rows = list(
                await db.execute_fetchall(
                    "UPDATE later_items SET state = 'cancelled', cancelled_by = ?,"
                    " updated_at = ? WHERE chat_key = ? AND id = ? AND state = 'pending'"
                    f" RETURNING {LATER_COLUMNS}",
                    (by, unix(now, "now"), str(chat), item_id),
                )
            )
        return later_item(rows[0]) if rows else None

    async def opener_candidates(self, *, since: datetime) -> dict[ChatKey, datetime]:
        """Return the chats where the bot answered a person's message since ``since``, each
        with the time of its last message (anyone's)."""
        rows = await self._fetch(
            "SELECT talked.chat_key, (SELECT max(sent_at) FROM messages AS last"
            "  WHERE last.chat_key = talked.chat_key)"
            " FROM messages AS talked JOIN batches ON batches.id = talked.batch_id"
            " WHERE talked.from_bot = 0 AND talked.sent_at >= ? AND batches.state = 'answered'"
            " GROUP BY talked.chat_key",
            (unix(since, "since"),),
        )
        return {ChatKey.parse(key): aware(last_s) for key, last_s in rows}

    async def opener_facts(self, chat: ChatKey, *, day_start: datetime) -> OpenerFacts:
        """Return what the opener guards read about ``chat`` (openers counted since
        ``day_start``)."""
        key = str(chat)
        rows = await self._fetch(
            "SELECT (SELECT max(sent_at) FROM messages WHERE chat_key = :chat),"
            " (SELECT max(sent_at) FROM messages WHERE chat_key = :chat AND from_bot = 0),"
            " (SELECT max(m.sent_at) FROM messages AS m JOIN batches AS b ON b.id = m.batch_id"
            "  WHERE m.chat_key = :chat AND m.from_bot = 0 AND b.state = 'answered'),"
            " (SELECT max(created_at) FROM batches WHERE chat_key = :chat"
            "  AND occasion = 'opener' AND state != 'abandoned'),"
            " (SELECT count(*) FROM batches WHERE chat_key = :chat AND occasion = 'opener'"
            "  AND state != 'abandoned' AND created_at >= :day_start),"
            " (SELECT count(*) FROM messages WHERE chat_key = :chat AND batch_id IS NULL"
            "  AND from_bot = 0)",
            {"chat": key, "day_start": unix(day_start, "day_start")},
        )
        last, chatter, talked, opener, today, waiting = rows[0]
        return OpenerFacts(
            last_message_at=_maybe_time(last),
            last_chatter_at=_maybe_time(chatter),
            last_talked_at=_maybe_time(talked),
            last_opener_at=_maybe_time(opener),
            openers_today=int(today),
            waiting=int(waiting),
        )

    async def openers_sent(self, chat: ChatKey, *, limit: int) -> list[OpenerSent]:
        """Return the chat's newest opener batches, newest first."""
        rows = await self._fetch(
            "SELECT id, created_at, state FROM batches WHERE chat_key = ?"
            " AND occasion = 'opener' ORDER BY created_at DESC, id DESC LIMIT ?",
            (str(chat), limit),
        )
        return [OpenerSent(batch_id, aware(at), state) for batch_id, at, state in rows]

    async def start_quiet(
        self, chat: ChatKey, *, until: datetime, by: str, now: datetime
    ) -> QuietPeriod:
        """Quiet ``chat`` from now until ``until`` (ending a quiet already running)."""
        now_s = unix(now, "now")
        async with self._transaction() as db:
            await _end_running_quiet(db, str(chat), by=by, now_s=now_s)
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO quiet_periods (chat_key, starts_at, ends_at, set_by)"
                    f" VALUES (?, ?, ?, ?) RETURNING {_QUIET_COLUMNS}",
                    (str(chat), now_s, unix(until, "until"), by),
                )
            )
        return _quiet_period(rows[0])

    async def end_quiet(self, chat: ChatKey, *, by: str, now: datetime) -> QuietPeriod | None:
        """End the chat's running quiet; ``None`` if it is not quiet."""
        async with self._transaction() as db:
            rows = await _end_running_quiet(db, str(chat), by=by, now_s=unix(now, "now"))
        return _quiet_period(rows[0]) if rows else None

    async def quiet_periods(self, chat: ChatKey, *, limit: int) -> list[QuietPeriod]:
        """Return the chat's newest quiet periods, newest first."""
        rows = await self._fetch(
            f"SELECT {_QUIET_COLUMNS} FROM quiet_periods WHERE chat_key = ?"
            " ORDER BY starts_at DESC, id DESC LIMIT ?",
            (str(chat), limit),
        )
        return [_quiet_period(row) for row in rows]

    async def _fetch(self, sql: str, params: Any) -> list[sqlite3.Row]:
        async with self._connection() as db:
            return list(await db.execute_fetchall(sql, params))


async def _end_running_quiet(
    db: aiosqlite.Connection, chat_key: str, *, by: str, now_s: float
) -> list[sqlite3.Row]:
    return list(
        await db.execute_fetchall(
            "UPDATE quiet_periods SET ended_at = ?, ended_by = ?"
            " WHERE chat_key = ? AND ended_at IS NULL AND starts_at <= ? AND ends_at > ?"
            f" RETURNING {_QUIET_COLUMNS}",
            (now_s, by, chat_key, now_s, now_s),
        )
    )
