"""Keep batches in SQL: the waiting messages one LLM call answers, and how it ended.

Opening a batch takes a chat's oldest waiting messages; closing it records the outcome
and, in the same transaction, queues its replies in the outbox. Batches a crash left open
are abandoned at start-up and their messages wait again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.errors import StorageError
from bot.initiative.occasion import OccasionKind
from bot.initiative.promises import Promise
from bot.models import Batch, BatchOutcome, ChatKey
from bot.replies.items import OutboxItem, PlannedReply, to_row
from storage.database import Database
from storage.initiative import keep_promises, later_back_to_pending, later_done
from storage.message_rows import MESSAGE_COLUMNS, stored_message
from storage.outbox import OUTBOX_COLUMNS, outbox_item
from storage.values import clean, unix


class SqliteBatches(Database):
    """The :class:`bot.ports.Batches` in SQLite."""

    async def open_batch(self, chat: ChatKey, *, limit: int, now: datetime) -> Batch | None:
        """Take up to ``limit`` oldest waiting messages of a chat into a new open batch."""
        if limit < 1:
            msg = f"limit must be at least 1, got {limit}"
            raise ValueError(msg)
        created_at = unix(now, "now")
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
                    f" RETURNING id, {MESSAGE_COLUMNS}",
                    (batch_id, str(chat), limit),
                )
            )
            if not taken:
                await db.rollback()
                return None
        taken.sort(key=lambda row: int(row["id"]))
        return Batch(batch_id, chat, tuple(stored_message(row, chat) for row in taken))

    async def open_initiative_batch(
        self, chat: ChatKey, occasion: OccasionKind, *, later_id: int | None, now: datetime
    ) -> Batch | None:
        """Open a batch that no message started, for ``occasion``; it takes no messages.

        A later item's batch is opened only while the item is running (``None`` if it was
        dropped meanwhile); closing the batch marks the item done.
        """
        async with self._transaction() as db:
            inserted = await db.execute_fetchall(
                "INSERT INTO batches (chat_key, state, created_at, occasion)"
                " VALUES (?, 'open', ?, ?) RETURNING id",
                (str(chat), unix(now, "now"), occasion.value),
            )
            batch_id: int = next(iter(inserted))[0]
            if later_id is not None:
                cursor = await db.execute(
                    "UPDATE later_items SET run_batch_id = ? WHERE id = ? AND state = 'running'",
                    (batch_id, later_id),
                )
                if cursor.rowcount != 1:
                    await db.rollback()
                    return None
        return Batch(batch_id, chat, ())

    async def close_batch(
        self,
        batch_id: int,
        outcome: BatchOutcome,
        *,
        now: datetime,
        replies: Sequence[PlannedReply] = (),
        error: str | None = None,
        promises: Sequence[Promise] = (),
    ) -> list[OutboxItem]:
        """Record how a batch ended and, in the same transaction, queue its replies, keep
        the later items it promised and mark done the later item it ran, if any.

        Raise ``StorageError`` if the batch is not open (closing twice is a bug).
        """
        if outcome is BatchOutcome.OPEN:
            msg = "a batch cannot be closed as 'open'"
            raise ValueError(msg)
        finished_at = unix(now, "now")
        due = [unix(reply.due_at, "due_at") for reply in replies]
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
            chat_key: str = closed[0]["chat_key"]
            await later_done(db, batch_id, now_s=finished_at)
            await keep_promises(db, chat_key, batch_id, promises, now_s=finished_at)
            if not replies:
                return []
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, 'scheduled', ?, ?)"] * len(replies))
            params: list[Any] = []
            for seq, (reply, due_at) in enumerate(zip(replies, due, strict=True)):
                kind, content, reply_to = to_row(reply.item)
                params += [
                    chat_key,
                    batch_id,
                    seq,
                    kind.value,
                    clean(content),
                    reply_to,
                    due_at,
                    finished_at,
                    reply.answers,
                ]
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO outbox (chat_key, batch_id, seq, kind, content, reply_to,"
                    " due_at, state, updated_at, answers)"
                    f" VALUES {values} RETURNING {OUTBOX_COLUMNS}",
                    params,
                )
            )
        return sorted((outbox_item(row) for row in rows), key=lambda item: item.seq)

    async def abandon_open_batches(self, *, now: datetime) -> int:
        """Mark batches left open by a crash abandoned; their messages wait again."""
        finished_at = unix(now, "now")
        async with self._transaction() as db:
            await later_back_to_pending(db, open_batches_only=True)
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
                (unix(since, "since"),),
            )
        return int(next(iter(rows))[0])
