"""Share one SQLite connection between the store's parts, one transaction at a time.

:class:`Database` is the base of the SQL mixins (``messages``, ``batches``, ``outbox``,
``summaries``) that :class:`storage.sqlite.SqliteStore` puts together. Every public
method of a mixin is one short transaction on the one connection, guarded by a lock so
two coroutines never interleave inside a transaction. Storing incoming messages is
``urgent``: it takes the connection next, ahead of the answers' work (see
:mod:`storage.turns`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from bot.errors import StorageError
from storage.turns import Turns


class Database:
    """One open, migrated connection, its lock and whether it was closed."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        """Wrap an open, migrated connection; use ``SqliteStore.open`` instead."""
        self._db = db
        self._path = path
        self._turns = Turns()
        self._closed = False

    @asynccontextmanager
    async def _connection(self, *, urgent: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the connection alone (urgent: next); SQLite errors become ``StorageError``."""
        async with self._turns.turn(urgent=urgent):
            if self._closed:
                msg = f"the database {self._path} is closed"
                raise StorageError(msg)
            try:
                yield self._db
            except sqlite3.Error as error:
                msg = f"database {self._path}: {error}"
                raise StorageError(msg) from error

    @asynccontextmanager
    async def _transaction(self, *, urgent: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """Run the body in one write transaction (``urgent``: next); roll back if it raises."""
        async with self._connection(urgent=urgent) as db:
            try:
                # Inside the try: a cancel while BEGIN is on its way would otherwise
                # hand the next holder an open transaction ("cannot start a transaction
                # within a transaction" for every write after it).
                await db.execute("BEGIN IMMEDIATE")
                yield db
            except BaseException:
                # aiosqlite queues the call before the await can be cancelled, so the
                # rollback runs ahead of anything the next holder of the lock sends.
                await db.rollback()
                raise
            await db.commit()  # a no-op if the body rolled back itself
