"""Bring an SQLite file's schema up to date with the numbered ``migrations/*.sql`` files.

The schema is versioned with ``PRAGMA user_version``: ``storage/migrations/NNNN_*.sql``
are applied in order, each in its own transaction. A step that must cut words as the
store does calls ``index_text(part, ...)`` (:func:`storage.search.index_text` of the
non-NULL parts), which :func:`migrate` lends to the connection.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import aiosqlite

from bot.errors import StorageError
from storage import search

_MIGRATION_NAME = re.compile(r"^(\d{4})_\w+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step."""

    version: int
    name: str
    sql: str


def load_migrations() -> tuple[Migration, ...]:
    """Read the bundled ``migrations/NNNN_name.sql`` files in version order."""
    found: list[Migration] = []
    for entry in resources.files("storage.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if versions != list(range(1, len(found) + 1)):
        msg = f"migration files must be numbered 0001, 0002, ... without gaps; found {versions}"
        raise StorageError(msg)
    return tuple(found)


def split_statements(script: str) -> list[str]:
    """Cut an SQL script into single statements (``CREATE TRIGGER ... END;`` stays whole)."""
    statements: list[str] = []
    pending = ""
    *terminated, rest = script.split(";")
    for part in terminated:
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    tail = pending + rest
    if tail.strip() and not _only_comments(tail):
        statements.append(tail.strip())
    return statements


def _only_comments(sql: str) -> bool:
    lines = (line.strip() for line in sql.splitlines())
    return all(not line or line.startswith("--") for line in lines)


async def migrate(db: aiosqlite.Connection, migrations: Sequence[Migration]) -> int:
    """Bring the schema up to the newest migration; return the resulting version.

    ``db`` must be in autocommit mode (``isolation_level=None``). Each migration runs in
    one ``BEGIN IMMEDIATE`` transaction that re-reads the version first, so two processes
    opening a fresh file at once do not apply a step twice.
    """
    newest = migrations[-1].version if migrations else 0
    version = await _user_version(db)
    await db.create_function("index_text", -1, _index_text, deterministic=True)
    if version > newest:
        msg = (
            f"the database schema is version {version}, newer than this pacebot knows "
            f"({newest}); upgrade pacebot or restore an older database"
        )
        raise StorageError(msg)
    for migration in migrations:
        if migration.version <= version:
            continue
        await db.execute("BEGIN IMMEDIATE")
        try:
            version = await _user_version(db)
            if migration.version > version:
                for statement in split_statements(migration.sql):
                    await db.execute(statement)
                # Inside the transaction: the version moves only if the whole step did.
                await db.execute(f"PRAGMA user_version = {migration.version:d}")
                version = migration.version
        except BaseException:
            # Queued before this await can be cancelled, so it always runs.
            await db.rollback()
            raise
        await db.commit()
    return version


def _index_text(*parts: str | None) -> str:
    """Return the index words of the non-NULL ``parts`` (the SQL function ``index_text``)."""
    return search.index_text([part for part in parts if part is not None])


async def _user_version(db: aiosqlite.Connection) -> int:
    rows = list(await db.execute_fetchall("PRAGMA user_version"))
    return int(rows[0][0])
