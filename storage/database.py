"""Share one SQLite connection between the store's parts, one transaction at a time.

:class:`Database` is the base of the SQL mixins (``messages``, ``batches``, ``outbox``,
``summaries``) that :class:`storage.sqlite.SqliteStore` puts together. Every public
method of a mixin is one short transaction on the one connection, guarded by a lock so
two coroutines never interleave inside a transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from bot.errors import StorageError


class Database:
    """One open, migrated connection, its lock and whether it was closed."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        """Wrap an open, migrated connection; use ``SqliteStore.open`` instead."""
        self._db = db
        self._path = path
        self._lock = asyncio.Lock()
        self._closed = False

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the connection alone; turn SQLite errors into ``StorageError``."""
        async with self._lock:
            if self._closed:
                msg = f"the database {self._path} is closed"
                raise StorageError(msg)
            try:
                yield self._db
            except sqlite3.Error as error:
                msg = f"database {self._path}: {error}"
                raise StorageError(msg) from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """Run the body in one write transaction; roll back if it raises."""
        async with self._connection() as db:
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                # aiosqlite queues the call before the await can be cancelled, so the
                # rollback runs ahead of anything the next holder of the lock sends.
                await db.rollback()
                raise
            await db.commit()  # a no-op if the body rolled back itself
