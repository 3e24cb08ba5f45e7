"""What this machine can do at all: the yardsticks the other figures are divided by.

- ``limits.commit``: single-row ``INSERT`` + commit into the real ``messages`` table through
  aiosqlite, one after another (one thread hop per call), on the same disk as the store.
- ``limits.executemany``: the same rows, 1,000 per transaction.
- ``limits.roundtrip``: one aiosqlite ``SELECT 1``: the floor of any query the bot makes.
- ``limits.rearm``: cancelling and re-arming a bare ``loop.call_at`` handle.
- ``limits.http``: one bare httpx POST to the fake Bot API over loopback.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import httpx

from bench.report import Figure, spread_figures
from bench.rig import fresh_path
from bench.stats import Spread
from fakes.bot_api import FakeBotAPI
from storage.migrate import load_migrations, migrate

_INSERT = (
    "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
    " sent_at, received_at, from_bot, addresses_bot, reply_to_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, 0, 1, NULL)"
    " ON CONFLICT (chat_key, message_id) DO NOTHING"
)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure the machine's limits."""
    rows = 300 if quick else 5000
    figures = await _sqlite(fresh_path(workdir, "limits.sqlite3"), rows=rows)
    figures += _rearm(asyncio.get_running_loop(), handles=1000 if quick else 100_000)
    figures += await _http(requests=30 if quick else 1000)
    return figures


def _row(number: int) -> tuple[object, ...]:
    now = datetime.now(UTC).timestamp()
    chat = f"telegram:private:{100_000_000 + number % 1000}"
    return (chat, str(number), "7", "小明", "周末要不要去爬山？", now, now)


async def _sqlite(path: Path, *, rows: int) -> list[Figure]:
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        await migrate(db, load_migrations())
        started = time.perf_counter()
        for number in range(rows):
            await db.execute(_INSERT, _row(number))  # autocommit: one commit per row
        commit_rate = rows / (time.perf_counter() - started)

        batch = [_row(number) for number in range(rows, rows + 10 * rows)]
        started = time.perf_counter()
        for first in range(0, len(batch), 1000):
            await db.execute("BEGIN")
            await db.executemany(_INSERT, batch[first : first + 1000])
            await db.commit()
        many_rate = len(batch) / (time.perf_counter() - started)

        samples = []
        for _ in range(rows):
            started = time.perf_counter()
            await db.execute_fetchall("SELECT 1")
            samples.append(time.perf_counter() - started)
    return [
        Figure("limits.commit.rows_per_s", commit_rate, "rows/s", note="aiosqlite, 1 row/commit"),
        Figure("limits.executemany.rows_per_s", many_rate, "rows/s", note="1,000 rows/commit"),
        *spread_figures("limits.roundtrip", Spread.of(samples).scaled(1000), "ms"),
    ]


def _rearm(loop: asyncio.AbstractEventLoop, *, handles: int) -> list[Figure]:
    timers = [loop.call_at(loop.time() + 60, _nothing) for _ in range(handles)]
    started = time.perf_counter()
    for index, handle in enumerate(timers):
        handle.cancel()
        timers[index] = loop.call_at(loop.time() + 60, _nothing)
    per_rearm_s = (time.perf_counter() - started) / handles
    for handle in timers:
        handle.cancel()
    return [Figure("limits.rearm", per_rearm_s * 1e6, "µs", note="bare loop.call_at")]


def _nothing() -> None:
    pass


async def _http(*, requests: int) -> list[Figure]:
    samples = []
    async with FakeBotAPI() as api, httpx.AsyncClient() as client:
        url = f"{api.base_url}{api.token}/sendMessage"
        for number in range(requests):
            started = time.perf_counter()
            response = await client.post(url, data={"chat_id": "42", "text": f"hi {number}"})
            samples.append(time.perf_counter() - started)
            response.raise_for_status()
    return spread_figures("limits.http", Spread.of(samples[5:]).scaled(1000), "ms")
