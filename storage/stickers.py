"""Keep each collection's stickers in SQL: seen, captioned, offered, sent, banned, evicted.

A sticker seen again refreshes its row (never a second one); one beyond a collection's
``keep`` live stickers evicts the least recently used, whose row goes (a banned one stays,
so it is never collected again). Ids are the row ids, offered as ``s<id>``.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from bot.models import ChatKey, StickerRecord
from bot.stickers import SeenSticker
from storage.database import Database
from storage.values import aware, clean, unix

_COLUMNS = (
    "id, collection, platform, file_ref, caption, times_sent, last_used_at, banned, thumb_ref"
)


def _record(row: sqlite3.Row) -> StickerRecord:
    return StickerRecord(
        id=row["id"],
        collection=row["collection"],
        platform=row["platform"],
        file_ref=row["file_ref"],
        thumb_ref=row["thumb_ref"],
        caption=row["caption"],
        times_sent=row["times_sent"],
        last_seen_at=aware(row["last_used_at"]),
        banned=bool(row["banned"]),
    )


class SqliteStickers(Database):
    """The :class:`bot.ports.StickerStore` in SQLite."""

    async def see_sticker(
        self,
        collection: str,
        *,
        platform: str,
        key: str,
        file_ref: str,
        caption: str,
        chat: ChatKey,
        message_id: str,
        keep: int,
        now: datetime,
        thumb_ref: str = "",
    ) -> SeenSticker:
        """Add a sticker to ``collection`` or refresh it; evict beyond ``keep`` live ones.

        A banned sticker is left as it is (``record`` is ``None``).
        """
        at = unix(now, "now")
        async with self._transaction() as db:
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO stickers (collection, platform, unique_key, file_ref, thumb_ref,"
                    " caption, seen_chat_key, seen_message_id, first_seen_at, last_used_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (collection, unique_key) DO UPDATE SET"
                    " times_seen = times_seen + 1, last_used_at = excluded.last_used_at,"
                    " file_ref = excluded.file_ref, thumb_ref = excluded.thumb_ref,"
                    " seen_chat_key = excluded.seen_chat_key,"
                    " seen_message_id = excluded.seen_message_id"
                    " WHERE banned = 0"
                    f" RETURNING {_COLUMNS}",
                    (
                        collection,
                        platform,
                        key,
                        file_ref,
                        thumb_ref,
                        clean(caption),
                        str(chat),
                        message_id,
                        at,
                        at,
                    ),
                )
            )
            evicted = list(
                await db.execute_fetchall(
                    "DELETE FROM stickers WHERE id IN (SELECT id FROM stickers"
                    " WHERE collection = ? AND banned = 0"
                    " ORDER BY last_used_at DESC, id DESC LIMIT -1 OFFSET ?)"
                    " RETURNING file_ref",
                    (collection, keep),
                )
            )
        record = _record(rows[0]) if rows else None  # the newest: never the one evicted
        return SeenSticker(record, tuple(row["file_ref"] for row in evicted))

    async def caption_sticker(self, chat: ChatKey, message_id: str, caption: str) -> int:
        """Caption the stickers last seen in ``message_id`` of ``chat`` with the model's
        words about it (once: a caption from a note is kept); return how many."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE stickers SET caption = ?, captioned_by_note = 1"
                " WHERE seen_chat_key = ? AND seen_message_id = ? AND captioned_by_note = 0",
                (clean(caption), str(chat), message_id),
            )
            return cursor.rowcount

    async def stickers(
        self, collection: str, *, limit: int, banned: bool = False
    ) -> list[StickerRecord]:
        """Return up to ``limit`` live stickers of ``collection`` (``banned``: those too),
        the most sent and then the most recently used first."""
        shown = "" if banned else " AND banned = 0"
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT {_COLUMNS} FROM stickers WHERE collection = ?{shown}"
                " ORDER BY banned, times_sent DESC, last_used_at DESC, id DESC LIMIT ?",
                (collection, limit),
            )
        return [_record(row) for row in rows]

    async def sticker(self, collection: str, sticker_id: int) -> StickerRecord | None:
        """Return one sticker of ``collection`` (banned or not), if it has it."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {_COLUMNS} FROM stickers WHERE collection = ? AND id = ?",
                    (collection, sticker_id),
                )
            )
        return _record(rows[0]) if rows else None

    async def sticker_file_used(self, platform: str, file_ref: str) -> bool:
        """Tell whether any collection still holds a sticker kept as ``file_ref``."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    "SELECT 1 FROM stickers WHERE platform = ? AND file_ref = ? LIMIT 1",
                    (platform, file_ref),
                )
            )
        return bool(rows)

    async def sticker_sent(self, sticker_id: int, *, now: datetime) -> None:
        """Count one more send of a sticker; it was used just now."""
        async with self._connection() as db:
            await db.execute(
                "UPDATE stickers SET times_sent = times_sent + 1, last_used_at = ? WHERE id = ?",
                (unix(now, "now"), sticker_id),
            )

    async def ban_sticker(
        self, collection: str, sticker_id: int, *, by: str, now: datetime
    ) -> StickerRecord | None:
        """Ban a live sticker of ``collection`` (never offered, sent or collected again);
        ``None`` if it has no such live sticker."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    "UPDATE stickers SET banned = 1, banned_at = ?, banned_by = ?"
                    f" WHERE collection = ? AND id = ? AND banned = 0 RETURNING {_COLUMNS}",
                    (unix(now, "now"), by, collection, sticker_id),
                )
            )
        return _record(rows[0]) if rows else None
