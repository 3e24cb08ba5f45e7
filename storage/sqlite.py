"""Keep messages, batches, the outbox and each chat's memory in one SQLite file.

The database runs in WAL mode with ``synchronous=NORMAL``: a committed write survives a
killed process. Times are stored as unix seconds (UTC) and come back as aware UTC
datetimes; naive datetimes are a programming error and raise ``ValueError``.

:class:`SqliteStore` opens, migrates (``storage/migrate.py``) and closes the file; the SQL
of each port lives beside it, one mixin per concept over the shared connection
(``storage/database.py``): ``messages.py``, ``batches.py``, ``outbox.py`` and
``summaries.py`` (the prompt stack and its knowledge index, with its word cutting in
``search.py``), ``people.py`` (facts about people, per chat), ``traces.py`` and
``vectors.py`` (the vectors of semantic recall), ``initiative.py`` (later items, quiet
periods, what the opener guards read), ``usage.py`` (what the LLM calls cost) and
``rooms.py`` (what the group gate reads of a room), ``access.py`` (the chats
switched off) and ``ledger.py`` (the official QQ bot's reply numbers, proactive quota
and gateway session).
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import Self

import aiosqlite

from bot.errors import StorageError
from storage.access import SqliteAccess
from storage.batches import SqliteBatches
from storage.initiative import SqliteInitiative
from storage.ledger import SqliteLedger
from storage.messages import SqliteMessageLog
from storage.migrate import load_migrations, migrate
from storage.outbox import SqliteOutbox
from storage.people import SqlitePeople
from storage.rooms import SqliteRooms
from storage.stickers import SqliteStickers
from storage.summaries import SqliteSummaries
from storage.traces import SqliteTraces
from storage.usage import SqliteUsage
from storage.vectors import SqliteVectors

_BUSY_TIMEOUT_MS = 5000  # another process holding the write lock: wait, then fail


class SqliteStore(
    SqliteMessageLog,
    SqliteBatches,
    SqliteOutbox,
    SqliteSummaries,
    SqlitePeople,
    SqliteStickers,
    SqliteTraces,
    SqliteVectors,
    SqliteInitiative,
    SqliteUsage,
    SqliteRooms,
    SqliteAccess,
    SqliteLedger,
):
    """The :class:`bot.ports.Store`, ``MemoryStore``, ``TraceLog``, ``VectorStore``,
    ``UsageLog`` and ``RoomLog`` on one SQLite file."""

    @classmethod
    async def open(cls, path: Path) -> SqliteStore:
        """Open (creating if needed) and migrate the database at ``path``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            msg = f"cannot create the data directory {path.parent}: {error}"
            raise StorageError(msg) from error
        try:
            # When aiosqlite's own connect fails, its worker thread outlives the call and
            # may report to a closed loop; open the file once in a plain thread first.
            await asyncio.to_thread(_probe, path)
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            msg = f"cannot open the database {path}: {error}"
            raise StorageError(msg) from error
        try:
            await _configure(db, path)
            await migrate(db, load_migrations())
        except sqlite3.Error as error:
            await db.close()
            msg = f"cannot open the database {path}: {error}"
            raise StorageError(msg) from error
        except BaseException:
            await db.close()
            raise
        return cls(db, path)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the database; calling it again does nothing."""
        async with self._turns.turn():
            if self._closed:
                return
            self._closed = True
            try:
                with suppress(sqlite3.Error):  # only a hint to the query planner
                    await self._db.execute("PRAGMA optimize")
                await self._db.close()
            except sqlite3.Error as error:
                msg = f"cannot close the database {self._path}: {error}"
                raise StorageError(msg) from error


def _probe(path: Path) -> None:
    sqlite3.connect(path).close()


async def _configure(db: aiosqlite.Connection, path: Path) -> None:
    db.row_factory = sqlite3.Row
    await db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
    rows = list(await db.execute_fetchall("PRAGMA journal_mode = WAL"))
    mode = str(rows[0][0]).lower()
    if mode != "wal":
        msg = f"the database {path} cannot use WAL mode (journal_mode is {mode!r})"
        raise StorageError(msg)
    await db.execute("PRAGMA synchronous = NORMAL")
    await db.execute("PRAGMA foreign_keys = ON")
