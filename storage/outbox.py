"""Keep the outbox in SQL: replies from scheduled through sending to sent, cancelled or dropped.

A reply is claimed (scheduled → sending) before it is posted, then marked sent (and kept
as a bot message in the chat's log), released back to scheduled when it certainly did not
arrive, or dropped. After a restart, replies caught mid-send are dropped rather than
repeated.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from bot.errors import StorageError
from bot.models import ChatKey, VoiceNote
from bot.replies.items import ItemKind, OutboxItem, OutboxState, from_row
from storage.database import Database
from storage.message_rows import voice_json
from storage.values import BOT_SENDER_ID, aware, clean, unix

SPOKEN = VoiceNote(ref="", placeholder="[voice]")
"""What a voice note the bot sent keeps of itself: only that it was one."""
OUTBOX_COLUMNS = "id, chat_key, batch_id, seq, kind, content, reply_to, due_at, state, answers"
"""The ``outbox`` columns :func:`outbox_item` reads."""


def outbox_item(row: sqlite3.Row) -> OutboxItem:
    """Build a reply from a row of :data:`OUTBOX_COLUMNS`."""
    return OutboxItem(
        id=row["id"],
        chat=ChatKey.parse(row["chat_key"]),
        batch_id=row["batch_id"],
        seq=row["seq"],
        item=from_row(row["kind"], row["content"], row["reply_to"]),
        due_at=aware(row["due_at"]),
        state=OutboxState(row["state"]),
        answers=row["answers"],
    )


class SqliteOutbox(Database):
    """The :class:`bot.ports.Outbox` in SQLite."""

    async def next_scheduled(self, chat: ChatKey) -> OutboxItem | None:
        """Return the chat's earliest scheduled reply, if any."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {OUTBOX_COLUMNS} FROM outbox"
                    " WHERE chat_key = ? AND state = 'scheduled'"
                    " ORDER BY due_at, batch_id, seq LIMIT 1",
                    (str(chat),),
                )
            )
        return outbox_item(rows[0]) if rows else None

    async def claim_for_sending(self, item_id: int, *, now: datetime) -> bool:
        """Move a reply from scheduled to sending; ``False`` if it is no longer scheduled."""
        return await self._move(item_id, "scheduled", "sending", now) == 1

    async def mark_sent(
        self,
        item_id: int,
        *,
        platform_message_id: str | None,
        said: str | None,
        sender_name: str,
        now: datetime,
        sent_as: ItemKind | None = None,
    ) -> None:
        """Record an item as sent (as ``sent_as``, when it went out as another kind); keep
        what it said as a bot message in the chat's history (not for an item that is no
        message of its own, such as a reaction).

        Raise ``StorageError`` if the item is not being sent (a bug in the caller).
        """
        sent_at = unix(now, "now")
        async with self._transaction() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'sent', platform_message_id = ?, updated_at = ?,"
                " sent_as = ? WHERE id = ? AND state = 'sending'",
                (platform_message_id, sent_at, sent_as, item_id),
            )
            if cursor.rowcount != 1:
                await db.rollback()
                msg = f"outbox item {item_id} is not being sent"
                raise StorageError(msg)
            if platform_message_id is None or said is None:
                return
            # A voice note the bot spoke is kept as one, its words heard already: faces show
            # it as voice, and nothing waits to transcribe it.
            spoken = sent_as == ItemKind.VOICE
            # The WHERE clause keeps SQLite from reading ON CONFLICT as a join constraint.
            await db.execute(
                "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
                " sent_at, received_at, from_bot, addresses_bot, reply_to_id, batch_id,"
                " voice, transcript)"
                " SELECT chat_key, ?, ?, ?, ?, ?, ?, 1, 0, reply_to, batch_id, ?, ?"
                " FROM outbox WHERE id = ?"
                " ON CONFLICT (chat_key, message_id) DO NOTHING",
                (
                    platform_message_id,
                    BOT_SENDER_ID,
                    clean(sender_name),
                    clean(said),
                    sent_at,
                    sent_at,
                    voice_json(SPOKEN) if spoken else None,
                    clean(said) if spoken else None,
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
                (reason, unix(now, "now"), item_id),
            )

    async def cancel_scheduled(self, chat: ChatKey, *, now: datetime) -> int:
        """Cancel every scheduled reply of a chat; return how many."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'cancelled', updated_at = ?"
                " WHERE chat_key = ? AND state = 'scheduled'",
                (unix(now, "now"), str(chat)),
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
                (unix(now, "now"), *item_ids),
            )
            return cursor.rowcount

    async def drop_scheduled(self, chat: ChatKey, *, now: datetime, reason: str) -> int:
        """Drop every scheduled reply of a chat; return how many."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = 'dropped', reason = ?, updated_at = ?"
                " WHERE chat_key = ? AND state = 'scheduled'",
                (reason, unix(now, "now"), str(chat)),
            )
            return cursor.rowcount

    async def recover_outbox(self, *, now: datetime, stale_after_s: float) -> list[ChatKey]:
        """After a restart: drop ``sending`` and stale ``scheduled`` replies.

        Return the chats that still have fresh scheduled replies, most overdue first.
        """
        now_s = unix(now, "now")
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

    async def sent_counts(self, chat: ChatKey | None = None, *, since: datetime) -> dict[str, int]:
        """Count the items sent since ``since`` by the kind they went out as, of one chat
        or of all."""
        where = "state = 'sent' AND updated_at >= ?"
        params: tuple[object, ...] = (unix(since, "since"),)
        if chat is not None:
            where += " AND chat_key = ?"
            params += (str(chat),)
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT coalesce(sent_as, kind) AS sent, count(*) FROM outbox WHERE {where}"
                " GROUP BY sent",
                params,
            )
        return {kind: int(count) for kind, count in rows}

    async def _move(self, item_id: int, source: str, target: str, now: datetime) -> int:
        """Move one outbox row between states if it is in ``source``; return rows moved."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE outbox SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (target, unix(now, "now"), item_id, source),
            )
            return cursor.rowcount
