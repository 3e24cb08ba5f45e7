"""What the group gate reads of a room: its hourly budget of unaddressed calls, and the
bot's share of a chat's latest messages."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.models import ChatKey
from storage.database import Database
from storage.values import unix

_KEEP = timedelta(days=1)  # unaddressed calls older than this are read by nothing


class SqliteRooms(Database):
    """The :class:`bot.ports.RoomLog` in SQLite."""

    async def add_unaddressed_call(self, room: ChatKey, *, at: datetime) -> None:
        """Note a call for an unaddressed batch of ``room``; forget the room's old ones."""
        at_s = unix(at, "at")
        async with self._transaction() as db:
            await db.execute(
                "DELETE FROM unaddressed_calls WHERE room_key = ? AND at < ?",
                (str(room), at_s - _KEEP.total_seconds()),
            )
            await db.execute(
                "INSERT INTO unaddressed_calls (room_key, at) VALUES (?, ?)", (str(room), at_s)
            )

    async def room_reading(self, chat: ChatKey, *, since: datetime, last: int) -> tuple[int, float]:
        """Return, in one read, the calls for unaddressed batches of ``chat``'s group since
        ``since`` and the share of ``chat``'s ``last`` newest messages the bot wrote (0.0
        for a chat without messages)."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT (SELECT count(*) FROM unaddressed_calls WHERE room_key = ? AND at >= ?),"
                " (SELECT coalesce(avg(from_bot), 0.0) FROM (SELECT from_bot FROM messages"
                "  WHERE chat_key = ? ORDER BY sent_at DESC, id DESC LIMIT ?))",
                (str(chat.room), unix(since, "since"), str(chat), last),
            )
        calls, share = next(iter(rows))
        return int(calls), float(share)
