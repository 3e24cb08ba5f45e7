"""Keep the vectors of memory rows in SQLite and find a chat's nearest ones with numpy.

A row to embed is (kind, row id, chat, text); :data:`SOURCES` names, per kind, the table
that holds it, the column with its text and what makes it live: day summaries and facts
about people (a fact is embedded with the name of its person, so "who likes cats" finds
it). Vectors are BLOBs of float32 scaled to unit length; a search reads the
one chat's vectors (a few hundred a year) and ranks them by dot product. That plain scan
was measured against ``sqlite-vec`` on a year × 1,000 chats (docs/benchmarks.md) and is
as fast, with no SQLite extension to load.

numpy (≈12 MiB, 0.1 s to import) loads when vectors are first stored or searched, in a
worker thread: embeddings are off by default, and then ``pacebot run`` never loads it.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import aiosqlite

from bot.models import ChatKey, EmbeddingSource, Fact, SummaryRecord
from storage.database import Database
from storage.people import facts_by_id
from storage.summaries import records_by_id
from storage.values import unix

SCAN_WINDOW = 2000  # rows of one kind looked at per call of ``unembedded``: the lock is short


@dataclass(frozen=True, slots=True)
class Source:
    """Where rows of one kind live: their table, their text and which of them are live."""

    table: str
    text: str  # an SQL expression over the table's columns
    live: str  # an SQL condition on one of the table's columns (prefixed with the alias)


SOURCES: dict[str, Source] = {
    "summary": Source("prompt_history", "added_prompt", "is_deleted = 0"),
    "fact": Source("person_facts", "s.user_name || ': ' || s.fact", "is_deleted = 0"),
}
"""Every kind of row that is embedded, in the order back-fill walks them."""


def unit_blob(vector: Sequence[float]) -> bytes:
    """Return ``vector`` scaled to unit length as little-endian float32 bytes."""
    import numpy as np

    array = np.asarray(vector, dtype="<f4")
    norm = float(np.linalg.norm(array))
    return (array / norm if norm > 0 else array).astype("<f4").tobytes()


def nearest(ids: Sequence[int], blobs: Sequence[bytes], query: bytes, *, limit: int) -> list[int]:
    """Return the ids of the ``limit`` unit vectors nearest the unit vector ``query``.

    A vector at a right angle to the question or beyond (cosine ≤ 0) shares nothing with
    it and is left out.
    """
    import numpy as np

    dims = len(query) // 4
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
    scores = matrix @ np.frombuffer(query, dtype="<f4")
    best = np.argsort(-scores, kind="stable")[:limit]
    return [ids[int(index)] for index in best if scores[index] > 0]


async def _numpy_loaded() -> None:
    """Import numpy in a worker thread if this is the first use of vectors.

    The event loop keeps turning meanwhile; later calls find it in ``sys.modules``.
    """
    if "numpy" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "numpy")


async def _unembedded(
    db: aiosqlite.Connection, kind: str, *, model: str, after_id: int
) -> tuple[list[EmbeddingSource], int | None]:
    """Return the live rows of ``kind`` in one id window after ``after_id`` with no vector.

    Also return the last id of the window, or ``None`` when no row of the kind is left.
    """
    source = SOURCES[kind]
    rows = list(
        await db.execute_fetchall(
            f"SELECT s.id, s.chat_key, {source.text} AS text,"
            " EXISTS (SELECT 1 FROM embeddings AS e"
            "  WHERE e.kind = :kind AND e.row_id = s.id AND e.model = :model) AS done"
            f" FROM {source.table} AS s WHERE s.id > :after AND s.{source.live}"
            " ORDER BY s.id LIMIT :window",
            {"kind": kind, "model": model, "after": after_id, "window": SCAN_WINDOW},
        )
    )
    pending = [
        EmbeddingSource(kind, row["id"], ChatKey.parse(row["chat_key"]), row["text"])
        for row in rows
        if not row["done"]
    ]
    return pending, (rows[-1]["id"] if len(rows) == SCAN_WINDOW else None)


class SqliteVectors(Database):
    """The :class:`bot.memory.ports.VectorStore` in SQLite."""

    async def unembedded(
        self, *, model: str, after: tuple[str, int] | None
    ) -> tuple[list[EmbeddingSource], tuple[str, int] | None]:
        """Return the live rows with no ``model`` vector in one window, and where to go on.

        Each call reads at most ``SCAN_WINDOW`` rows of one kind, so the database is never
        held long; ``None`` as the position means every kind has been read to its end.
        """
        kinds = list(SOURCES)
        kind, after_id = after if after is not None else (kinds[0], 0)
        async with self._connection() as db:
            pending, last_id = await _unembedded(db, kind, model=model, after_id=after_id)
        if last_id is not None:
            return pending, (kind, last_id)
        position = kinds.index(kind) + 1
        return pending, (kinds[position], 0) if position < len(kinds) else None

    async def add_vectors(
        self,
        model: str,
        rows: Sequence[tuple[EmbeddingSource, Sequence[float]]],
        *,
        now: datetime,
    ) -> None:
        """Store one vector per row (replacing an older one of the same model)."""
        await _numpy_loaded()
        created_at = unix(now, "now")
        values = [
            (row.kind, row.row_id, str(row.chat), model, len(vector), unit_blob(vector), created_at)
            for row, vector in rows
        ]
        async with self._transaction() as db:
            await db.executemany(
                "INSERT INTO embeddings (kind, row_id, chat_key, model, dims, vector, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (kind, row_id, model) DO UPDATE SET"
                " dims = excluded.dims, vector = excluded.vector, created_at = excluded.created_at",
                values,
            )

    async def similar_summaries(
        self, chat: ChatKey, vector: Sequence[float], *, model: str, limit: int
    ) -> list[SummaryRecord]:
        """Return the chat's live summaries nearest ``vector`` (cosine), nearest first."""
        await _numpy_loaded()  # before taking the connection: no one waits for it
        async with self._connection() as db:
            ids = await _nearest_of(db, "summary", chat, vector, model=model, limit=limit)
            return await records_by_id(db, chat, ids) if ids else []

    async def similar_facts(
        self, chat: ChatKey, vector: Sequence[float], *, model: str, limit: int
    ) -> list[Fact]:
        """Return the chat's live facts nearest ``vector`` (cosine), nearest first."""
        await _numpy_loaded()  # before taking the connection: no one waits for it
        async with self._connection() as db:
            ids = await _nearest_of(db, "fact", chat, vector, model=model, limit=limit)
            return await facts_by_id(db, chat, ids) if ids else []


async def _nearest_of(
    db: aiosqlite.Connection,
    kind: str,
    chat: ChatKey,
    vector: Sequence[float],
    *,
    model: str,
    limit: int,
) -> list[int]:
    """Return the ids of the chat's live rows of ``kind`` nearest ``vector``, nearest first."""
    if limit < 1 or not vector:
        return []
    source = SOURCES[kind]
    rows = list(
        await db.execute_fetchall(
            "SELECT row_id, vector FROM embeddings"
            " WHERE chat_key = :chat AND kind = :kind AND model = :model AND dims = :dims"
            # The chat's live ids come from the partial index alone; a join would read each
            # row, and a summary's row holds the whole prompt before and after it.
            f" AND row_id IN (SELECT id FROM {source.table}"
            f"  WHERE chat_key = :chat AND {source.live})",
            {"chat": str(chat), "kind": kind, "model": model, "dims": len(vector)},
        )
    )
    if not rows:
        return []
    return nearest(
        [row[0] for row in rows], [row[1] for row in rows], unit_blob(vector), limit=limit
    )
