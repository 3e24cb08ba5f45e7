"""Keep each chat's prompt stack and its knowledge index in SQL.

:class:`SqliteSummaries` holds the lock around the functions here, which run inside the
transaction it opened and never commit; it cuts words (``storage/search.py``) before
taking the lock. A summary is a ``prompt_history`` row (the
stack, in push order by id) and a ``knowledge_index`` row (what recall searches). Popping
is a soft delete of both; the FTS rows stay, and every query keeps ``is_deleted = 0``.
Times come in as unix seconds and go out as aware UTC datetimes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import date, datetime

import aiosqlite

from bot.errors import SummaryExists
from bot.models import ChatKey, DaySummary, SummaryRecord
from storage import search
from storage.database import Database
from storage.values import aware, clean, unix

_RECORD_COLUMNS = (
    "p.id, p.summary_date, p.added_prompt, p.created_at, p.is_deleted, p.deleted_at,"
    " p.deleted_by, p.partial, k.summary, k.topics, k.key_points, k.keywords, k.message_count"
)
_JOIN = "prompt_history AS p JOIN knowledge_index AS k ON k.prompt_history_id = p.id"


async def _has_summary(
    db: aiosqlite.Connection,
    chat: ChatKey,
    day: date,
    *,
    include_popped: bool,
    include_partial: bool,
) -> bool:
    """Tell whether ``day`` has a live summary (or any, if ``include_popped``); a live
    partial one counts only ``include_partial``."""
    rows = await db.execute_fetchall(
        "SELECT EXISTS (SELECT 1 FROM prompt_history"
        " WHERE chat_key = ? AND summary_date = ?"
        " AND ((is_deleted = 0 AND (partial = 0 OR ?)) OR (is_deleted = 1 AND ?)))",
        (str(chat), day.isoformat(), include_partial, include_popped),
    )
    return bool(next(iter(rows))[0])


async def _push(
    db: aiosqlite.Connection,
    chat: ChatKey,
    day: date,
    content: DaySummary,
    *,
    search_text: str,
    added_prompt: str,
    full_prompt_before: str,
    full_prompt_after: str,
    message_count: int,
    created_at: float,
    partial: bool,
) -> SummaryRecord | None:
    """Insert a summary and its index row; ``None`` (nothing written) if the day is live."""
    pushed = list(
        await db.execute_fetchall(
            "INSERT INTO prompt_history (chat_key, summary_date, added_prompt,"
            " full_prompt_before, full_prompt_after, created_at, partial)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            # The partial unique index decides: one live summary per chat day.
            " ON CONFLICT (chat_key, summary_date) WHERE is_deleted = 0 DO NOTHING"
            " RETURNING id",
            (
                str(chat),
                day.isoformat(),
                added_prompt,
                full_prompt_before,
                full_prompt_after,
                created_at,
                partial,
            ),
        )
    )
    if not pushed:
        return None
    history_id: int = pushed[0][0]
    await db.execute(
        "INSERT INTO knowledge_index (prompt_history_id, chat_key, summary_date, summary,"
        " topics, key_points, keywords, message_count, search_text)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (history_id, str(chat), day.isoformat(), *_indexed(content, message_count, search_text)),
    )
    return await _record(db, chat, history_id)


async def _replace(
    db: aiosqlite.Connection,
    chat: ChatKey,
    history_id: int,
    content: DaySummary,
    *,
    search_text: str,
    added_prompt: str,
    message_count: int,
    created_at: float,
    partial: bool,
) -> SummaryRecord | None:
    """Write a new summary into a live partial row, keeping its place in the stack, and
    let its vectors go (the row is embedded again); ``None`` if that row is no longer a
    live partial summary (popped meanwhile: it stays popped)."""
    replaced = list(
        await db.execute_fetchall(
            "UPDATE prompt_history SET added_prompt = :added,"
            " full_prompt_after = full_prompt_before || char(10) || char(10) || :added,"
            " created_at = :at, partial = :partial"
            " WHERE id = :id AND chat_key = :chat AND is_deleted = 0 AND partial = 1"
            " RETURNING id",
            {"added": added_prompt, "at": created_at, "partial": partial}
            | {"id": history_id, "chat": str(chat)},
        )
    )
    if not replaced:
        return None
    await db.execute(
        "UPDATE knowledge_index SET summary = ?, topics = ?, key_points = ?, keywords = ?,"
        " message_count = ?, search_text = ? WHERE prompt_history_id = ?",
        (*_indexed(content, message_count, search_text), history_id),
    )
    await db.execute("DELETE FROM embeddings WHERE kind = 'summary' AND row_id = ?", (history_id,))
    return await _record(db, chat, history_id)


async def _live_summaries(db: aiosqlite.Connection, chat: ChatKey) -> list[SummaryRecord]:
    """Return the chat's live summaries in push order."""
    rows = await db.execute_fetchall(
        f"SELECT {_RECORD_COLUMNS} FROM {_JOIN}"
        " WHERE p.chat_key = ? AND p.is_deleted = 0 ORDER BY p.id",
        (str(chat),),
    )
    return [_summary_record(row, chat) for row in rows]


async def _pop(
    db: aiosqlite.Connection, chat: ChatKey, *, by: str, deleted_at: float
) -> SummaryRecord | None:
    """Soft-delete the chat's newest live summary and hide its index row."""
    popped = list(
        await db.execute_fetchall(
            "UPDATE prompt_history SET is_deleted = 1, deleted_at = :at, deleted_by = :by,"
            " pop_seq = 1 + coalesce((SELECT max(pop_seq) FROM prompt_history"
            "  WHERE chat_key = :chat AND is_deleted = 1), 0)"
            " WHERE id = (SELECT max(id) FROM prompt_history"
            "  WHERE chat_key = :chat AND is_deleted = 0)"
            " RETURNING id",
            {"chat": str(chat), "at": deleted_at, "by": by},
        )
    )
    if not popped:
        return None
    history_id: int = popped[0][0]
    await db.execute(
        "UPDATE knowledge_index SET is_deleted = 1 WHERE prompt_history_id = ?", (history_id,)
    )
    return await _record(db, chat, history_id)


async def _restorable(db: aiosqlite.Connection, chat: ChatKey) -> int | None:
    """Return the id of the summary a restore would bring back: the chat's last popped
    one, unless a live one is newer or of the same day."""
    candidates = list(
        await db.execute_fetchall(
            "SELECT id, summary_date FROM prompt_history"
            " WHERE chat_key = ? AND is_deleted = 1 ORDER BY pop_seq DESC LIMIT 1",
            (str(chat),),
        )
    )
    if not candidates:
        return None
    history_id: int = candidates[0]["id"]
    # Something newer was pushed since, or the popped day was summarised again.
    blocked = await db.execute_fetchall(
        "SELECT EXISTS (SELECT 1 FROM prompt_history"
        "  WHERE chat_key = :chat AND is_deleted = 0 AND id > :id)"
        " OR EXISTS (SELECT 1 FROM prompt_history"
        "  WHERE chat_key = :chat AND is_deleted = 0 AND summary_date = :day)",
        {"chat": str(chat), "id": history_id, "day": candidates[0]["summary_date"]},
    )
    return None if next(iter(blocked))[0] else history_id


async def _restore(
    db: aiosqlite.Connection, chat: ChatKey, *, restored_at: float
) -> SummaryRecord | None:
    """Bring back the chat's last popped summary, unless a live one is newer or same-day."""
    history_id = await _restorable(db, chat)
    if history_id is None:
        return None
    await db.execute(
        "UPDATE prompt_history SET is_deleted = 0, deleted_at = NULL, deleted_by = NULL,"
        " pop_seq = NULL, restored_at = ? WHERE id = ?",
        (restored_at, history_id),
    )
    await db.execute(
        "UPDATE knowledge_index SET is_deleted = 0 WHERE prompt_history_id = ?", (history_id,)
    )
    return await _record(db, chat, history_id)


async def _summaries_on(
    db: aiosqlite.Connection, chat: ChatKey, days: Sequence[date]
) -> list[SummaryRecord]:
    """Return the chat's live summaries of ``days``, oldest day first."""
    wanted = json.dumps(sorted({day.isoformat() for day in days}))
    rows = await db.execute_fetchall(
        f"SELECT {_RECORD_COLUMNS} FROM {_JOIN}"
        " WHERE p.chat_key = ? AND p.is_deleted = 0"
        " AND p.summary_date IN (SELECT value FROM json_each(?))"
        " ORDER BY p.summary_date, p.id",
        (str(chat), wanted),
    )
    return [_summary_record(row, chat) for row in rows]


async def _search_summaries(
    db: aiosqlite.Connection, chat: ChatKey, terms: Sequence[str], *, limit: int
) -> list[SummaryRecord]:
    """Return the chat's live summaries matching ``terms`` (from ``search.query_terms``).

    Indexed words are ranked by bm25. A one- or two-character Han question, or one no
    indexed word matches, is also looked for as substrings, newest summary first.
    The caller has checked that there are terms and room for a hit.
    """
    rows = list(
        await db.execute_fetchall(
            f"SELECT {_RECORD_COLUMNS} FROM knowledge_fts"
            " JOIN knowledge_index AS k ON k.id = knowledge_fts.rowid"
            " JOIN prompt_history AS p ON p.id = k.prompt_history_id"
            " WHERE knowledge_fts MATCH ? AND k.chat_key = ? AND k.is_deleted = 0"
            # The chat key column only narrows the search: it weighs nothing in the rank.
            " ORDER BY bm25(knowledge_fts, 1.0, 0.0), k.id DESC LIMIT ?",
            (
                f"chat_key : {search.quote(str(chat))} AND search_text : ({search.any_of(terms)})",
                str(chat),
                limit,
            ),
        )
    )
    found = [_summary_record(row, chat) for row in rows]
    if (found and not search.is_short_han(terms)) or len(found) >= limit:
        return found
    substrings = search.fallback_terms(terms)
    if not substrings:
        return found
    # Summaries with no such word but with the term inside a longer one ("山" in "爬山").
    haystack = (
        "lower(k.summary || char(10) || k.topics || char(10) || k.key_points"
        " || char(10) || k.keywords)"
    )
    any_term = " OR ".join([f"instr({haystack}, ?) > 0"] * len(substrings))
    seen = [record.id for record in found]
    rows = list(
        await db.execute_fetchall(
            f"SELECT {_RECORD_COLUMNS} FROM {_JOIN}"
            " WHERE k.chat_key = ? AND k.is_deleted = 0"
            f" AND p.id NOT IN (SELECT value FROM json_each(?)) AND ({any_term})"
            " ORDER BY k.id DESC LIMIT ?",
            (str(chat), json.dumps(seen), *substrings, limit - len(found)),
        )
    )
    return found + [_summary_record(row, chat) for row in rows]


async def records_by_id(
    db: aiosqlite.Connection, chat: ChatKey, history_ids: Sequence[int]
) -> list[SummaryRecord]:
    """Return the chat's live summaries with these ids, in the order of ``history_ids``."""
    rows = await db.execute_fetchall(
        f"SELECT {_RECORD_COLUMNS} FROM {_JOIN}"
        " WHERE p.chat_key = ? AND p.is_deleted = 0"
        " AND p.id IN (SELECT value FROM json_each(?))",
        (str(chat), json.dumps(list(history_ids))),
    )
    found = {record.id: record for record in (_summary_record(row, chat) for row in rows)}
    return [found[history_id] for history_id in history_ids if history_id in found]


async def _record(db: aiosqlite.Connection, chat: ChatKey, history_id: int) -> SummaryRecord:
    rows = list(
        await db.execute_fetchall(
            f"SELECT {_RECORD_COLUMNS} FROM {_JOIN} WHERE p.id = ?", (history_id,)
        )
    )
    return _summary_record(rows[0], chat)


def _summary_record(row: sqlite3.Row, chat: ChatKey) -> SummaryRecord:
    deleted_at: float | None = row["deleted_at"]
    return SummaryRecord(
        id=row["id"],
        chat=chat,
        day=date.fromisoformat(row["summary_date"]),
        content=DaySummary(
            summary=row["summary"],
            topics=_tuple(row["topics"]),
            key_points=_tuple(row["key_points"]),
            keywords=_tuple(row["keywords"]),
        ),
        added_prompt=row["added_prompt"],
        message_count=row["message_count"],
        created_at=aware(row["created_at"]),
        is_deleted=bool(row["is_deleted"]),
        deleted_at=None if deleted_at is None else aware(deleted_at),
        deleted_by=row["deleted_by"],
        partial=bool(row["partial"]),
    )


def _indexed(content: DaySummary, message_count: int, search_text: str) -> tuple[object, ...]:
    """Return a knowledge-index row's summary, topics, key points, keywords, message count
    and words, as its columns hold them."""
    lists = (_json_list(items) for items in (content.topics, content.key_points, content.keywords))
    return (content.summary, *lists, message_count, search_text)


def _cleaned(content: DaySummary) -> DaySummary:
    return DaySummary(
        summary=clean(content.summary),
        topics=tuple(clean(topic) for topic in content.topics),
        key_points=tuple(clean(point) for point in content.key_points),
        keywords=tuple(clean(keyword) for keyword in content.keywords),
    )


def _search_text(content: DaySummary) -> str:
    return search.index_text(
        [content.summary, *content.topics, *content.key_points, *content.keywords]
    )


def _json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def _tuple(json_list: str) -> tuple[str, ...]:
    return tuple(str(item) for item in json.loads(json_list))


class SqliteSummaries(Database):
    """The summaries of :class:`bot.memory.ports.MemoryStore` in SQLite (log reads:
    ``messages``)."""

    async def has_summary(
        self, chat: ChatKey, day: date, *, include_popped: bool, include_partial: bool = True
    ) -> bool:
        """Tell whether ``day`` has a live summary (or any, popped ones included); a live
        partial one counts unless ``include_partial`` is false."""
        async with self._connection() as db:
            return await _has_summary(
                db, chat, day, include_popped=include_popped, include_partial=include_partial
            )

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
        partial: bool = False,
    ) -> SummaryRecord:
        """Push a day's summary and index it, atomically; ``SummaryExists`` if one is live."""
        created_at = unix(now, "now")
        content = _cleaned(content)
        search_text = _search_text(content)
        async with self._transaction() as db:
            record = await _push(
                db,
                chat,
                day,
                content,
                search_text=search_text,
                added_prompt=clean(added_prompt),
                full_prompt_before=clean(full_prompt_before),
                full_prompt_after=clean(full_prompt_after),
                message_count=message_count,
                created_at=created_at,
                partial=partial,
            )
        if record is None:
            msg = f"{chat} already has a live summary for {day.isoformat()}"
            raise SummaryExists(msg)
        return record

    async def replace_summary(
        self,
        chat: ChatKey,
        history_id: int,
        content: DaySummary,
        *,
        added_prompt: str,
        message_count: int,
        now: datetime,
        partial: bool,
    ) -> SummaryRecord | None:
        """Put a summary in the place of a live partial one; ``None`` if it is no longer
        live and partial."""
        created_at = unix(now, "now")
        content = _cleaned(content)
        search_text = _search_text(content)
        async with self._transaction() as db:
            return await _replace(
                db,
                chat,
                history_id,
                content,
                search_text=search_text,
                added_prompt=clean(added_prompt),
                message_count=message_count,
                created_at=created_at,
                partial=partial,
            )

    async def live_summaries(self, chat: ChatKey) -> list[SummaryRecord]:
        """Return the chat's live summaries in push order (oldest first)."""
        async with self._connection() as db:
            return await _live_summaries(db, chat)

    async def pop_summary(self, chat: ChatKey, *, by: str, now: datetime) -> SummaryRecord | None:
        """Soft-delete the newest live summary (and hide its index row); ``None`` if none."""
        deleted_at = unix(now, "now")
        async with self._transaction() as db:
            return await _pop(db, chat, by=by, deleted_at=deleted_at)

    async def restore_summary(self, chat: ChatKey, *, now: datetime) -> SummaryRecord | None:
        """Undo the last pop if nothing was pushed since; return what came back, or ``None``.

        ``None`` also when the popped day has been summarised again meanwhile.
        """
        restored_at = unix(now, "now")
        async with self._transaction() as db:
            return await _restore(db, chat, restored_at=restored_at)

    async def restorable_summary(self, chat: ChatKey) -> SummaryRecord | None:
        """Return the summary ``restore_summary`` would bring back now; ``None`` if none."""
        async with self._connection() as db:
            history_id = await _restorable(db, chat)
            return None if history_id is None else await _record(db, chat, history_id)

    async def summaries_on(self, chat: ChatKey, days: Sequence[date]) -> list[SummaryRecord]:
        """Return the live summaries of those chat days, oldest first."""
        async with self._connection() as db:
            return await _summaries_on(db, chat, days)

    async def search_summaries(
        self, chat: ChatKey, query: str, *, limit: int
    ) -> list[SummaryRecord]:
        """Return the live summaries that best match ``query``'s keywords, best first.

        Any text is a valid query: one with no searchable words finds nothing. A chat
        without live summaries is not searched at all.
        """
        if limit < 1 or not await self._has_live_summaries(chat):
            return []
        terms = search.query_terms(query)
        if not terms:
            return []
        async with self._connection() as db:
            return await _search_summaries(db, chat, terms, limit=limit)

    async def _has_live_summaries(self, chat: ChatKey) -> bool:
        """Tell whether ``chat`` has a live summary to search."""
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT 1 FROM knowledge_index WHERE chat_key = ? AND is_deleted = 0 LIMIT 1",
                (str(chat),),
            )
        return bool(rows)
