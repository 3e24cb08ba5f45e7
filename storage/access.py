"""The chats an admin switched off (``/bot off``, the dashboard), kept across restarts."""

from __future__ import annotations

from datetime import datetime

from bot.models import ChatKey
from storage.database import Database
from storage.values import unix


class SqliteAccess(Database):
    """The :class:`bot.access.Switches` in SQLite."""

    async def chats_switched_off(self) -> frozenset[ChatKey]:
        """Return every chat switched off now."""
        async with self._connection() as db:
            rows = await db.execute_fetchall("SELECT chat_key FROM chat_switches WHERE off = 1")
        return frozenset(ChatKey.parse(str(row[0])) for row in rows)

    async def switch_chat(self, chat: ChatKey, *, off: bool, by: str, now: datetime) -> None:
        """Switch ``chat`` off or on, as ``by``."""
        async with self._transaction() as db:
            await db.execute(
                "INSERT INTO chat_switches (chat_key, off, by, at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (chat_key) DO UPDATE SET off = excluded.off, by = excluded.by,"
                " at = excluded.at",
                (str(chat), int(off), by, unix(now, "now")),
            )
