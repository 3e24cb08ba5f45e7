"""Keep facts about people per (chat, person) in SQL, with an audit row for each change.

A fact is a ``person_facts`` row; forgetting it (an admin's ``/forget``, the person's own
``/forgetme``, or a newer fact crowding it out) is a soft delete that records who and
when, and every change leaves a ``fact_audit`` row, as summary pops do in their rows.
What was forgotten on request is not learned again (``forgotten_people``, and a forgotten
fact's words).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import date, datetime

import aiosqlite

from bot.memory.people import NIGHTLY, normalise_fact
from bot.models import ChatKey, Fact, KnownPerson, PersonNote
from storage.database import Database
from storage.values import aware, clean, unix

_COLUMNS = (
    "id, user_id, user_name, fact, source_day, created_at, is_deleted, deleted_at, deleted_by"
)


def _fact(row: sqlite3.Row, chat: ChatKey) -> Fact:
    deleted_at: float | None = row["deleted_at"]
    return Fact(
        id=row["id"],
        chat=chat,
        user_id=row["user_id"],
        user_name=row["user_name"],
        text=row["fact"],
        source_day=date.fromisoformat(row["source_day"]),
        created_at=aware(row["created_at"]),
        is_deleted=bool(row["is_deleted"]),
        deleted_at=None if deleted_at is None else aware(deleted_at),
        deleted_by=row["deleted_by"],
    )


async def facts_by_id(db: aiosqlite.Connection, chat: ChatKey, ids: Sequence[int]) -> list[Fact]:
    """Return the chat's live facts with these ids, in the order of ``ids``."""
    rows = await db.execute_fetchall(
        f"SELECT {_COLUMNS} FROM person_facts WHERE chat_key = ? AND is_deleted = 0"
        " AND id IN (SELECT value FROM json_each(?))",
        (str(chat), json.dumps(list(ids))),
    )
    found = {fact.id: fact for fact in (_fact(row, chat) for row in rows)}
    return [found[fact_id] for fact_id in ids if fact_id in found]


async def _audit(
    db: aiosqlite.Connection,
    chat: ChatKey,
    fact_ids: Sequence[int],
    action: str,
    by: str,
    at: float,
) -> None:
    await db.executemany(
        "INSERT INTO fact_audit (fact_id, chat_key, action, done_by, done_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(fact_id, str(chat), action, by, at) for fact_id in fact_ids],
    )


async def _insert(
    db: aiosqlite.Connection, chat: ChatKey, day: date, note: PersonNote, at: float
) -> list[Fact]:
    stored: list[Fact] = []
    for text in note.facts:
        fact = clean(text)
        rows = await db.execute_fetchall(
            "INSERT INTO person_facts (chat_key, user_id, user_name, fact, normalised,"
            " source_day, created_at)"
            " SELECT :chat, :user, :name, :fact, :normalised, :day, :at"
            # What was forgotten on request is not learned again: the person from any day
            # up to their request, a fact in the same words ever.
            " WHERE NOT EXISTS (SELECT 1 FROM forgotten_people"
            "  WHERE chat_key = :chat AND user_id = :user AND through_day >= :day)"
            " AND NOT EXISTS (SELECT 1 FROM person_facts"
            "  WHERE chat_key = :chat AND user_id = :user AND normalised = :normalised"
            "  AND is_deleted = 1 AND deleted_by <> :nightly)"
            # The partial unique index decides: the same live fact once per person.
            " ON CONFLICT (chat_key, user_id, normalised) WHERE is_deleted = 0 DO NOTHING"
            f" RETURNING {_COLUMNS}",
            {
                "chat": str(chat),
                "user": note.user_id,
                "name": clean(note.name),
                "fact": fact,
                "normalised": normalise_fact(fact),
                "day": day.isoformat(),
                "at": at,
                "nightly": NIGHTLY,
            },
        )
        stored.extend(_fact(row, chat) for row in rows)
    return stored


async def _crowd_out(
    db: aiosqlite.Connection, chat: ChatKey, user_id: str, *, keep: int, at: float
) -> set[int]:
    """Soft-delete a person's live facts beyond the ``keep`` newest; return their ids."""
    rows = await db.execute_fetchall(
        "UPDATE person_facts SET is_deleted = 1, deleted_at = :at, deleted_by = :by"
        " WHERE id IN (SELECT id FROM person_facts"
        "  WHERE chat_key = :chat AND user_id = :user AND is_deleted = 0"
        "  ORDER BY id DESC LIMIT -1 OFFSET :keep)"
        " RETURNING id",
        {"at": at, "by": NIGHTLY, "chat": str(chat), "user": user_id, "keep": keep},
    )
    crowded = [int(row[0]) for row in rows]
    await _audit(db, chat, crowded, "crowded_out", NIGHTLY, at)
    return set(crowded)


class SqlitePeople(Database):
    """The facts of :class:`bot.memory.ports.PeopleStore` in SQLite."""

    async def add_facts(
        self, chat: ChatKey, day: date, notes: Sequence[PersonNote], *, keep: int, now: datetime
    ) -> list[Fact]:
        """Store new facts (a live duplicate is skipped); keep each person's ``keep`` newest."""
        at = unix(now, "now")
        async with self._transaction() as db:
            learned: list[Fact] = []
            crowded: set[int] = set()
            for note in notes:
                learned += await _insert(db, chat, day, note, at)
                crowded |= await _crowd_out(db, chat, note.user_id, keep=keep, at=at)
            learned = [fact for fact in learned if fact.id not in crowded]
            await _audit(db, chat, [fact.id for fact in learned], "learned", NIGHTLY, at)
        return learned

    async def live_facts(self, chat: ChatKey, user_ids: Sequence[str]) -> dict[str, list[Fact]]:
        """Return the live facts of those people in ``chat``, newest first, by user id."""
        found: dict[str, list[Fact]] = {}
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT {_COLUMNS} FROM person_facts"
                " WHERE chat_key = ? AND is_deleted = 0"
                " AND user_id IN (SELECT value FROM json_each(?))"
                " ORDER BY user_id, id DESC",
                (str(chat), json.dumps(list(user_ids))),
            )
        for row in rows:
            found.setdefault(row["user_id"], []).append(_fact(row, chat))
        return found

    async def known_people(self, chat: ChatKey) -> list[KnownPerson]:
        """Return the people of ``chat`` with live facts, most facts first."""
        async with self._connection() as db:
            # With max(), SQLite takes the bare user_name from the row with the newest id.
            rows = await db.execute_fetchall(
                "SELECT user_id, user_name, max(id), count(*) AS facts FROM person_facts"
                " WHERE chat_key = ? AND is_deleted = 0"
                " GROUP BY user_id ORDER BY facts DESC, user_id",
                (str(chat),),
            )
        return [KnownPerson(row["user_id"], row["user_name"], row["facts"]) for row in rows]

    async def person_seen(self, chat: ChatKey, user_id: str) -> bool:
        """Whether a person ever wrote in ``chat``, or a fact about them was kept or
        forgotten there."""
        async with self._connection() as db:
            # The indexed lookups first: the messages one reads the chat's log by time.
            rows = await db.execute_fetchall(
                "SELECT EXISTS (SELECT 1 FROM person_facts WHERE chat_key = :chat"
                "  AND user_id = :user)"
                " OR EXISTS (SELECT 1 FROM forgotten_people WHERE chat_key = :chat"
                "  AND user_id = :user)"
                " OR EXISTS (SELECT 1 FROM messages WHERE chat_key = :chat"
                "  AND sender_id = :user AND from_bot = 0)",
                {"chat": str(chat), "user": user_id},
            )
        return bool(next(iter(rows))[0])

    async def forget_fact(
        self, chat: ChatKey, fact_id: int, *, by: str, now: datetime
    ) -> Fact | None:
        """Soft-delete one live fact of ``chat``; ``None`` if it has no such live fact."""
        at = unix(now, "now")
        async with self._transaction() as db:
            rows = list(
                await db.execute_fetchall(
                    "UPDATE person_facts SET is_deleted = 1, deleted_at = ?, deleted_by = ?"
                    " WHERE id = ? AND chat_key = ? AND is_deleted = 0"
                    f" RETURNING {_COLUMNS}",
                    (at, by, fact_id, str(chat)),
                )
            )
            await _audit(db, chat, [row["id"] for row in rows], "forgotten", by, at)
        return _fact(rows[0], chat) if rows else None

    async def forget_person(
        self, chat: ChatKey, user_id: str, *, by: str, now: datetime, through: date
    ) -> int:
        """Soft-delete every live fact about a person in ``chat``; return how many.

        Nothing about them is learned in ``chat`` from chat days up to ``through`` after.
        """
        at = unix(now, "now")
        async with self._transaction() as db:
            rows = await db.execute_fetchall(
                "UPDATE person_facts SET is_deleted = 1, deleted_at = ?, deleted_by = ?"
                " WHERE chat_key = ? AND user_id = ? AND is_deleted = 0 RETURNING id",
                (at, by, str(chat), user_id),
            )
            forgotten = [int(row[0]) for row in rows]
            await _audit(db, chat, forgotten, "forgotten", by, at)
            await db.execute(
                "INSERT INTO forgotten_people (chat_key, user_id, through_day, forgotten_at,"
                " forgotten_by) VALUES (:chat, :user, :day, :at, :by)"
                " ON CONFLICT (chat_key, user_id) DO UPDATE SET"
                "  through_day = max(through_day, excluded.through_day),"
                "  forgotten_at = excluded.forgotten_at, forgotten_by = excluded.forgotten_by",
                {
                    "chat": str(chat),
                    "user": user_id,
                    "day": through.isoformat(),
                    "at": at,
                    "by": by,
                },
            )
        return len(forgotten)
