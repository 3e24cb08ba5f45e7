"""Keep each chat's message log in SQL: chatters' messages and the bot's sent replies.

A chatter's message is stored once per platform message id and waits (``batch_id`` is
NULL) until a batch takes it; the bot's own messages come in from the outbox when a reply
is sent (``storage/outbox.py``), or as a nonebot plugin posts them (``add_bot_message``).
The nightly job reads the log through :meth:`SqliteMessageLog.chats_active_between` and
:meth:`SqliteMessageLog.messages_between`.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

import aiosqlite

from bot.models import ChatActivity, ChatKey, IncomingMessage, StoredMessage
from storage.database import Database
from storage.message_rows import (
    INSERT_ROWS,
    INSERTED_COLUMNS,
    MESSAGE_COLUMNS,
    ROW_PLACEHOLDERS,
    inserted_row,
    stored_message,
)
from storage.values import BOT_SENDER_ID, ascii_lower, aware, clean, unix

TITLES_KEPT = 2048
"""Chat titles remembered to skip writing an unchanged one; beyond, the oldest are let go."""
_PARSE_SLICE = 1000  # chat keys parsed per event-loop turn (~2 ms) when a query returns many


async def _keep_titles(db: aiosqlite.Connection, titles: Mapping[str, tuple[str, float]]) -> None:
    """Keep each chat's newest title; an older message never overwrites a newer one."""
    if titles:
        await db.executemany(
            "INSERT INTO chat_titles (chat_key, title, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (chat_key) DO UPDATE SET title = excluded.title,"
            " updated_at = excluded.updated_at WHERE excluded.updated_at >= updated_at",
            [(key, title, sent_at) for key, (title, sent_at) in titles.items()],
        )


async def _insert(db: aiosqlite.Connection, rows: list[tuple[object, ...]]) -> set[tuple[str, str]]:
    """Insert ``rows`` in one statement; return the (chat key, message id) of the new ones."""
    values = ", ".join([ROW_PLACEHOLDERS] * len(rows))
    inserted = await db.execute_fetchall(
        f"INSERT INTO messages ({INSERTED_COLUMNS}) VALUES {values}"
        " ON CONFLICT (chat_key, message_id) DO NOTHING RETURNING chat_key, message_id",
        [value for row in rows for value in row],
    )
    return {(chat_key, message_id) for chat_key, message_id in inserted}


def _newest_titles(messages: Sequence[IncomingMessage]) -> dict[str, tuple[str, float]]:
    """Return the newest title each chat's messages give, with when it was given."""
    newest: dict[str, tuple[str, float]] = {}
    for message in messages:
        title = clean(message.chat_title or "").strip()
        sent_at = unix(message.sent_at, "sent_at")
        key = str(message.chat)
        if title and (key not in newest or newest[key][1] <= sent_at):
            newest[key] = (title, sent_at)
    return newest


async def _insert_all(db: aiosqlite.Connection, rows: list[tuple[object, ...]]) -> list[bool]:
    """Insert ``rows`` in statements of :data:`INSERT_ROWS`; say for each whether it is new.

    A row stored before, or repeated in ``rows``, is ``False``.
    """
    new: set[tuple[str, str]] = set()
    for start in range(0, len(rows), INSERT_ROWS):
        new |= await _insert(db, rows[start : start + INSERT_ROWS])
    stored = []
    for chat_key, message_id, *_ in rows:
        stored.append((chat_key, message_id) in new)
        new.discard((chat_key, message_id))  # a repeat in the same page is not new
    return stored


async def _close_as_context(
    db: aiosqlite.Connection, chat_key: str, message_ids: list[str], *, at_s: float
) -> None:
    """Put a chat's waiting ``message_ids`` in a new batch that is ``skipped`` already."""
    inserted = await db.execute_fetchall(
        "INSERT INTO batches (chat_key, state, created_at, finished_at)"
        " VALUES (?, 'skipped', ?, ?) RETURNING id",
        (chat_key, at_s, at_s),
    )
    batch_id = next(iter(inserted))[0]
    for start in range(0, len(message_ids), INSERT_ROWS):
        chunk = message_ids[start : start + INSERT_ROWS]
        await db.execute(
            "UPDATE messages SET batch_id = ? WHERE chat_key = ? AND batch_id IS NULL"
            f" AND message_id IN ({', '.join('?' * len(chunk))})",
            (batch_id, chat_key, *chunk),
        )


class SqliteMessageLog(Database):
    """The :class:`bot.ports.MessageLog` (and the log reads of the memory) in SQLite."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        super().__init__(db, path)
        # The newest title seen by this process of the chats that gave one lately, and when
        # it was given: a title is written only when it changes. The oldest are let go past
        # TITLES_KEPT; a chat let go writes its title once more (the SQL keeps the newest).
        self._newest_titles: OrderedDict[str, tuple[str, float]] = OrderedDict()

    async def add_message(self, message: IncomingMessage, *, received_at: datetime) -> bool:
        """Store a chatter's message once; return ``False`` if it was already stored."""
        (stored,) = await self.add_messages((message,), received_at=received_at)
        return stored

    async def add_messages(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store chatters' messages in one transaction; say for each whether it is new.

        A message stored before, or repeated in ``messages``, is ``False``. Rows go in as
        multi-row ``INSERT``s of :data:`INSERT_ROWS` each: one round trip to the database
        thread per page of messages, not one per message.
        """
        received_at_s = unix(received_at, "received_at")
        rows = [inserted_row(message, received_at_s) for message in messages]
        titles = _newest_titles(messages)
        changed = {key: given for key, given in titles.items() if self._changes_title(key, given)}
        # One INSERT is atomic on its own; more need a transaction around them.
        # Urgent: every timer of the page waits for this commit (see storage.turns).
        writing = (
            self._connection(urgent=True)
            if len(rows) <= INSERT_ROWS
            else self._transaction(urgent=True)
        )
        async with writing as db:
            # Before the messages: were it to fail after them, a retry would find them
            # stored and take them for repeats.
            await _keep_titles(db, changed)
            stored = await _insert_all(db, rows)
        self._note_titles(titles)
        return stored

    async def add_context(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages as context only, all or none; say for each whether it is new.

        The new ones of each chat are closed at once in a ``skipped`` batch of their own,
        in the same transaction: they show in the chat's history and summaries, and never
        wait for an answer.
        """
        received_at_s = unix(received_at, "received_at")
        rows = [inserted_row(message, received_at_s) for message in messages]
        if not rows:
            return []
        async with self._transaction() as db:
            stored = await _insert_all(db, rows)
            new_by_chat: dict[str, list[str]] = {}
            for message, is_new in zip(messages, stored, strict=True):
                if is_new:
                    new_by_chat.setdefault(str(message.chat), []).append(message.message_id)
            for chat_key, message_ids in new_by_chat.items():
                await _close_as_context(db, chat_key, message_ids, at_s=received_at_s)
        return stored

    async def add_bot_message(
        self,
        chat: ChatKey,
        message_id: str,
        text: str,
        *,
        sender_name: str,
        sent_at: datetime,
        reply_to_id: str | None = None,
    ) -> bool:
        """Keep a message posted in the bot's name outside the outbox (a nonebot plugin's)
        in the chat's history, as a sent reply is kept; ``False`` if it was kept before."""
        at_s = unix(sent_at, "sent_at")
        async with self._connection() as db:
            cursor = await db.execute(
                "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
                " sent_at, received_at, from_bot, addresses_bot, reply_to_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0, ?)"
                " ON CONFLICT (chat_key, message_id) DO NOTHING",
                (
                    str(chat),
                    message_id,
                    BOT_SENDER_ID,
                    clean(sender_name),
                    clean(text),
                    at_s,
                    at_s,
                    reply_to_id,
                ),
            )
            return cursor.rowcount == 1

    def _changes_title(self, key: str, given: tuple[str, float]) -> bool:
        """Tell whether a chat's title, given at a moment, is news to this process."""
        known = self._newest_titles.get(key)
        return known is None or (given[1] >= known[1] and given[0] != known[0])

    def _note_titles(self, titles: Mapping[str, tuple[str, float]]) -> None:
        """Remember each chat's newest title once it is stored, the chats that gave one
        most lately at most :data:`TITLES_KEPT`."""
        for key, given in titles.items():
            known = self._newest_titles.get(key)
            if known is None or given[1] >= known[1]:
                self._newest_titles[key] = given
            self._newest_titles.move_to_end(key)
        while len(self._newest_titles) > TITLES_KEPT:
            self._newest_titles.popitem(last=False)

    async def edit_message(self, chat: ChatKey, message_id: str, text: str) -> bool:
        """Replace a stored message's text; return ``False`` if it is unknown."""
        async with self._connection() as db:
            cursor = await db.execute(
                "UPDATE messages SET text = ? WHERE chat_key = ? AND message_id = ?",
                (clean(text), str(chat), message_id),
            )
            return cursor.rowcount == 1

    async def add_image_notes(self, chat: ChatKey, notes: Mapping[str, str]) -> int:
        """Keep what the model saw in these messages' pictures; return how many were kept.

        Only chatters' messages that carry pictures take a note; other ids are ignored.
        """
        rows = [(clean(note), str(chat), message_id) for message_id, note in notes.items()]
        if not rows:
            return 0
        async with self._transaction() as db:
            cursor = await db.executemany(
                "UPDATE messages SET image_note = ?"
                " WHERE chat_key = ? AND message_id = ? AND from_bot = 0 AND pictures IS NOT NULL",
                rows,
            )
            return cursor.rowcount

    async def keep_transcript(
        self, chat: ChatKey, message_id: str, *, transcript: str, text: str | None
    ) -> None:
        """Keep what was heard in a chatter's voice note ("": nothing will be) and, if
        given, the message's text with it in place of the placeholder."""
        async with self._connection() as db:
            await db.execute(
                "UPDATE messages SET transcript = ?, text = coalesce(?, text)"
                " WHERE chat_key = ? AND message_id = ? AND from_bot = 0",
                (clean(transcript), None if text is None else clean(text), str(chat), message_id),
            )

    async def unheard_voice_notes(self) -> list[StoredMessage]:
        """Return the waiting messages whose voice note was never heard nor given up on."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                " WHERE voice IS NOT NULL AND transcript IS NULL AND batch_id IS NULL"
                " ORDER BY id"
            )
        return [stored_message(row, ChatKey.parse(row["chat_key"])) for row in rows]

    async def is_bot_message(self, chat: ChatKey, message_id: str) -> bool:
        """Tell whether ``message_id`` in ``chat`` is a message the bot sent."""
        async with self._connection(urgent=True) as db:  # asked while storing a page
            rows = await db.execute_fetchall(
                "SELECT 1 FROM messages WHERE chat_key = ? AND message_id = ? AND from_bot = 1",
                (str(chat), message_id),
            )
        return bool(rows)

    async def newest_message_from(self, chat: ChatKey, sender_id: str) -> StoredMessage | None:
        """Return the newest message ``sender_id`` wrote in ``chat``, if any."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages"
                    " WHERE chat_key = ? AND sender_id = ? AND from_bot = 0"
                    " ORDER BY sent_at DESC, id DESC LIMIT 1",
                    (str(chat), sender_id),
                )
            )
        return stored_message(rows[0], chat) if rows else None

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
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                " WHERE chat_key = ?"
                " AND (from_bot = 1 OR (batch_id IS NOT NULL AND batch_id <> ?))"
                " ORDER BY sent_at DESC, id DESC LIMIT ?",
                (str(chat), exclude_batch, limit),
            )
        return [stored_message(row, chat) for row in reversed(list(rows))]

    async def unsaid_replies(self, chat: ChatKey, *, before_batch: int) -> list[str]:
        """Return the cancelled words (texts, voice notes) of the chat's last answered batch
        before this one."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT content FROM outbox WHERE state = 'cancelled'"
                " AND kind IN ('content', 'voice') AND batch_id = ("
                " SELECT id FROM batches WHERE chat_key = ? AND state = 'answered' AND id < ?"
                " ORDER BY id DESC LIMIT 1)"
                " ORDER BY seq",
                (str(chat), before_batch),
            )
        return [content for (content,) in rows]

    async def chat_activity(self, *, search: str = "", limit: int) -> list[ChatActivity]:
        """Return up to ``limit`` chats, the most recently active first.

        With ``search``, only chats whose key, title or one of whose senders' names holds
        it. One pass over the ``messages_by_time`` index; the dashboard asks for a page at
        a time.
        """
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT chat_key, count(*), max(sent_at) FROM messages GROUP BY chat_key"
                " HAVING :search = '' OR instr(lower(chat_key), :search) > 0"
                "  OR max(instr(lower(sender_name), :search)) > 0"
                "  OR EXISTS (SELECT 1 FROM chat_titles AS t WHERE t.chat_key = messages.chat_key"
                "   AND instr(lower(t.title), :search) > 0)"
                " ORDER BY max(sent_at) DESC, chat_key LIMIT :limit",
                {"search": ascii_lower(search), "limit": limit},
            )
        return [
            ChatActivity(ChatKey.parse(chat_key), count, aware(last_at))
            for chat_key, count, last_at in rows
        ]

    async def chats_active_since(
        self, platform: str, since: datetime, *, limit: int
    ) -> list[ChatKey]:
        """Return up to ``limit`` chats of ``platform`` where a chatter wrote at or after
        ``since``, the most recently active first.

        Only the index entries from ``since`` on are read: left to itself, the planner
        would rather scan every message of the platform's chats by key.
        """
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT chat_key FROM messages INDEXED BY messages_chatter_by_time"
                " WHERE from_bot = 0 AND sent_at >= ? AND chat_key >= ? AND chat_key < ?"
                " GROUP BY chat_key ORDER BY max(sent_at) DESC, chat_key LIMIT ?",
                # The keys "<platform>:…" sort between "<platform>:" and "<platform>;".
                (unix(since, "since"), f"{platform}:", f"{platform};", limit),
            )
        return [ChatKey.parse(chat_key) for (chat_key,) in rows]

    async def chats_active_between(self, start: datetime, end: datetime) -> list[ChatKey]:
        """Return the chats with chatter messages sent in ``[start, end)``, by chat key."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT DISTINCT chat_key FROM messages"
                " WHERE from_bot = 0 AND sent_at >= ? AND sent_at < ? ORDER BY chat_key",
                (unix(start, "start"), unix(end, "end")),
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
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                " WHERE chat_key = ? AND sent_at >= ? AND sent_at < ?"
                " ORDER BY sent_at DESC, id DESC LIMIT ?",
                (str(chat), unix(start, "start"), unix(end, "end"), limit),
            )
        return [stored_message(row, chat) for row in reversed(list(rows))]

    async def chat_names(self, chats: Sequence[ChatKey]) -> dict[ChatKey, str]:
        """Return the name to show beside each chat's key, for those that have one.

        A group's is the newest title its messages gave; a private chat's, the newest name
        its chatter wrote under.
        """
        groups = json.dumps([str(chat) for chat in chats if chat.is_group])
        private = json.dumps([str(chat) for chat in chats if not chat.is_group])
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    "SELECT chat_key, title FROM chat_titles"
                    " WHERE chat_key IN (SELECT value FROM json_each(?))",
                    (groups,),
                )
            )
            rows += await db.execute_fetchall(
                "SELECT value, (SELECT sender_name FROM messages WHERE chat_key = value"
                "  AND from_bot = 0 ORDER BY sent_at DESC, id DESC LIMIT 1)"
                " FROM json_each(?)",
                (private,),
            )
        return {ChatKey.parse(key): name for key, name in rows if name}
