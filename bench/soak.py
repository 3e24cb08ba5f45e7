"""A month without growing: 200 chats, 100,000 messages through the wire, 30 nightly runs.

The bot runs in this process as ``pacebot run`` runs it (``running_core`` and the started
platform: SQLite, the pipeline, the sender, PTB long-polling the fake Bot API), with two
differences an operator's bot does not have: its wall clock is a :class:`fakes.clock.Clock`
this benchmark moves one chat day ahead at a time, and the nightly recipe the scheduler
would run at night (``MemoryOps.run_nightly``) is run here after each day, since
APScheduler fires on the real clock. The far side runs in a process of its own
(:mod:`bench.soak_load`): the fake Bot API, fed the chatters' messages on their schedule,
the fake OpenAI-compatible server, and the reads of the bot's database.

Telegram, not the OneBot WebSocket: QQ's pacing lets a bot post one message a second in
all, so a month of replies there would take hours; Telegram's is 25 a second. Pacing is
``[pacing]``'s defaults scaled down (see ``_PACING``) so that a burst is answered within
a second or two.

The month is ten tenths of three chat days each. A day: 200 chats (half private, half
groups with six members; a quarter of the groups' bursts @ the bot, which answers groups
only when addressed, as by default) send their share of the day's messages in bursts of
4-12 lines 100 ms apart, starting at random over ``window_s``; the benchmark waits until
every message is stored, every chat idle and the outbox empty, moves the clock a day
ahead and runs the nightly recipe. At the end of each tenth, the bot idle, it reads this
process's RSS (``/proc/self/smaps_rollup``), its asyncio tasks, open file descriptors
(``/proc/self/fd``; those that are TCP connections to the fakes, the HTTP clients'
keep-alive pools, counted apart), the event loop's timer handles (the not-cancelled ones
of the ``_scheduled`` heap; the heap's length too), threads, objects the garbage
collector tracks, the chats the pipeline holds state for (``Pipeline.chats_held``), and the
database's bytes (main file + WAL, and per table with
``dbstat``) per stored message (chatters' and the bot's). The first tenth's readings are
the idle baseline: RSS may grow 10 % from them to the end, tasks, files and timers must
come back to them, the chats held stay within 10 % of them, and bytes per message may
grow 10 % at most. Where RSS goes is read beside it:
Python's small-object blocks (``sys.getallocatedblocks``), and what glibc's malloc has
handed out and what it keeps freed (``mallinfo2``); after the last reading, RSS once more
after ``malloc_trim(0)``.

A full run redraws ``docs/soak.svg`` (RSS and bytes per message over the tenths); a quick
run (four chats, three one-day tenths) draws it into its working directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import multiprocessing
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from adapters.app import running_core
from adapters.platforms import build_platforms
from adapters.telegram.platform import TelegramPlatform
from adapters.wiring import Core
from bench import soak_load
from bench.dataset import CHAT_LINES, GROUP_CHATTER
from bench.plot import Panel, Series, svg
from bench.report import Figure, at_most, exactly
from bench.rig import REPO, fresh_path
from bot.config.model import Config, PacingConfig, parse_config
from bot.ops.status import StatusOps
from bot.secrets import Secrets
from fakes.clock import Clock

GROWTH_TARGET_PCT = 10.0
BYTES_GROWTH_TARGET_PCT = 10.0
GAP_S = 0.1  # between two lines of a burst
GROUP_MEMBERS = 6
MENTION_SHARE = 0.25  # of a group's bursts
_SCALE_DOWN = 12.5
_DEFAULTS = PacingConfig()
# Every wait of [pacing] 12.5 times shorter (debounce 0.4-1.2 s, at most 4.8 s; a reply's
# delay at most 0.8 s); typing 12.5 times faster. stale_after_s keeps its 300 s: a day's
# replies queue for up to ~15 s behind Telegram's 25 sends/s, and none should be dropped.
_PACING = {
    "debounce_min_s": _DEFAULTS.debounce_min_s / _SCALE_DOWN,
    "debounce_max_s": _DEFAULTS.debounce_max_s / _SCALE_DOWN,
    "max_wait_s": _DEFAULTS.max_wait_s / _SCALE_DOWN,
    "max_delay_s": _DEFAULTS.max_delay_s / _SCALE_DOWN,
    "typing_chars_per_s": _DEFAULTS.typing_chars_per_s * _SCALE_DOWN,
}
_MIB = 1024 * 1024
_SETTLE_S = 0.5  # after the bot is idle, before reading: the last responses land


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int  # half private, half groups
    messages: int  # through the wire, over the whole month
    tenths: int
    days_per_tenth: int
    window_s: float  # a day's bursts start within this many seconds


FULL = Scale(chats=200, messages=100_000, tenths=10, days_per_tenth=3, window_s=15.0)
QUICK = Scale(chats=4, messages=72, tenths=3, days_per_tenth=1, window_s=0.5)


@dataclass(frozen=True, slots=True)
class Chat:
    chat_id: int
    members: tuple[int, ...]  # one (the chat's own user) in a private chat

    @property
    def is_group(self) -> bool:
        return self.chat_id < 0


@dataclass(frozen=True, slots=True)
class Reading:
    """What the idle bot holds at the end of one tenth."""

    rss: int  # bytes
    anonymous: int  # bytes
    tasks: int
    fds: int
    pooled: int  # of them, TCP connections to the fakes: the HTTP clients' keep-alive pools
    timers: int  # scheduled handles not cancelled
    timer_heap: int  # the heap's length, cancelled handles included
    threads: int
    objects: int  # tracked by the garbage collector
    blocks: int  # pymalloc blocks in use: every small Python object, frozen ones too
    malloc_in_use: int  # bytes glibc's malloc has handed out and not had back, all arenas
    malloc_free: int  # bytes freed but kept in malloc's heaps, not given back to the system
    db_main: int  # bytes of the database file
    db_wal: int  # bytes of its write-ahead log
    messages: int  # rows of ``messages``: chatters' and the bot's
    tables: dict[str, int]  # bytes of each table and index in the database file
    chats_held: int = 0  # chats some part of the pipeline holds state for (chats_held())

    @property
    def db_bytes(self) -> int:
        return self.db_main + self.db_wal

    @property
    def bytes_per_message(self) -> float:
        return self.db_bytes / max(1, self.messages)

    @property
    def main_bytes_per_message(self) -> float:
        return self.db_main / max(1, self.messages)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Play the month (three one-day tenths when quick) and read the bot after each tenth."""
    scale = QUICK if quick else FULL
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    load = context.Process(target=soak_load.main, args=(theirs,), name="soak-load", daemon=True)
    load.start()
    try:
        urls: dict[str, str] = await _answer(ours)
        readings, totals = await _month(ours, urls, scale, fresh_path(workdir, "soak"))
    finally:
        ours.send({"do": "stop"})
        load.join(10)
        if load.is_alive():
            load.kill()
    plot = workdir / "soak.svg" if quick else REPO / "docs" / "soak.svg"
    plot.write_text(_svg(readings, scale), encoding="utf-8")
    return _figures(readings, totals, scale)


async def _month(
    conn: Connection, urls: dict[str, str], scale: Scale, path: Path
) -> tuple[list[Reading], Counter[str]]:
    """Play every day of the month; return the reading of each tenth and the counts."""
    config = _config(path, urls)
    clock = Clock(_first_morning(config))
    secrets = Secrets("bench-key", "bench-key", telegram_token=urls["token"])
    chats = _chats(scale.chats)
    peers = {urlsplit(urls[name]).port for name in ("llm", "bot_api")}
    database = str(config.database_path)
    rng = random.Random(40)
    readings: list[Reading] = []
    totals: Counter[str] = Counter()
    days = scale.tenths * scale.days_per_tenth
    async with _running(config, secrets, clock) as core:
        for tenth in range(scale.tenths):
            for day in range(tenth * scale.days_per_tenth, (tenth + 1) * scale.days_per_tenth):
                share = _share(scale.messages, days, day)
                lines = _day(rng, chats, share, scale.window_s, mention=urls["mention"])
                offset_s = clock.now().timestamp() - time.time()
                conn.send({"do": "day", "lines": lines, "offset_s": offset_s})
                await _answer(conn)
                totals["pushed"] += len(lines)
                idle = await _until_idle(core.ops.status, conn, database, totals["pushed"])
                totals["not_idle"] += not idle
                clock.jump(days=1)
                report = await core.ops.memory.run_nightly()
                totals["summaries"] += len(report.pushed)
                totals["summaries_failed"] += len(report.failed)
            conn.send({"do": "tidy"})
            totals.update(await _answer(conn))
            await asyncio.sleep(_SETTLE_S)
            reading = await _read(conn, database, peers)
            held = sum(core.pipeline.chats_held().values())
            readings.append(replace(reading, chats_held=held))
        totals["rss_trimmed"] = _trimmed_rss()
        conn.send({"do": "count", "database": database})
        stored: int = await _answer(conn)
    totals["never_stored"] = totals["pushed"] - stored
    return readings, totals


@contextlib.asynccontextmanager
async def _running(config: Config, secrets: Secrets, clock: Clock) -> AsyncIterator[Core]:
    """Run the core on ``clock`` and Telegram, as ``running_bot`` does, the nightly job
    left to the benchmark."""
    adapters = build_platforms(config, secrets)
    telegram = adapters["telegram"]
    assert isinstance(telegram, TelegramPlatform)
    async with running_core(config, secrets, dict(adapters), nightly=False, now=clock.now) as core:
        await telegram.start(core.inbox)
        try:
            await telegram.wait_ready()
            yield core
        finally:
            await telegram.stop()


def _config(path: Path, urls: dict[str, str]) -> Config:
    data: dict[str, Any] = {
        "bot": {"name": "小满", "data_dir": str(path / "data")},
        "pacing": _PACING,
        "llm": {"base_url": urls["llm"], "timeout_s": 10.0, "max_retries": 0},
        "telegram": {"enabled": True, "api_base_url": urls["bot_api"]},
    }
    return parse_config(data, base_dir=path)


def _first_morning(config: Config) -> datetime:
    """Return 10:00 local time of the next chat day: the days played stay within a day."""
    local = datetime.now(config.bot.zone) + timedelta(days=1)
    return local.replace(hour=10, minute=0, second=0, microsecond=0)


def _chats(count: int) -> list[Chat]:
    private = [Chat(5000 + n, (5000 + n,)) for n in range(count // 2)]
    groups = [
        Chat(-(1_000_000 + n), tuple(7000 + n * GROUP_MEMBERS + m for m in range(GROUP_MEMBERS)))
        for n in range(count - count // 2)
    ]
    return private + groups


def _share(messages: int, days: int, day: int) -> int:
    """Return day ``day``'s share of ``messages``: the days add up to it exactly."""
    return round((day + 1) * messages / days) - round(day * messages / days)


def _day(
    rng: random.Random, chats: Sequence[Chat], count: int, window_s: float, *, mention: str
) -> list[tuple[float, int, int, str]]:
    """Return one day's ``count`` lines as (due second, chat id, sender id, text), in order.

    Each chat gets an even share, in bursts of 4-12 lines ``GAP_S`` apart.
    """
    lines: list[tuple[float, int, int, str]] = []
    for index, chat in enumerate(chats):
        left = count // len(chats) + (index < count % len(chats))
        while left > 0:
            size = min(left, rng.randint(4, 12))
            left -= size
            start = rng.uniform(0, window_s)
            addressed = chat.is_group and rng.random() < MENTION_SHARE
            pool = GROUP_CHATTER if chat.is_group else CHAT_LINES
            for n in range(size):
                text = rng.choice(pool)
                if addressed and n == size - 1:
                    text = f"{mention} {text}"
                lines.append((start + n * GAP_S, chat.chat_id, rng.choice(chat.members), text))
    lines.sort()
    return lines


async def _until_idle(status: StatusOps, conn: Connection, database: str, pushed: int) -> bool:
    """Wait until every line pushed is stored, every chat idle and the outbox empty.

    The bot's own view first; then the load process counts the stored lines: this process
    opens no connection of its own, whose page cache would count in its memory.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(120):
            while True:
                if not status.live_chats() and await status.queued_replies() == 0:
                    conn.send({"do": "count", "database": database})
                    if await _answer(conn) >= pushed:
                        return True
                await asyncio.sleep(0.1)
    return False


async def _read(conn: Connection, database: str, peers: set[int | None]) -> Reading:
    """Read what the process holds now (call it with the bot idle); the load process
    reads the database."""
    loop = asyncio.get_running_loop()
    handles = list(loop._scheduled)  # type: ignore[attr-defined]  # the timer heap
    rollup = _smaps_rollup()
    heap = _mallinfo()
    fds = _fd_targets()
    conn.send({"do": "database", "database": database})
    main, wal, messages, tables = await _answer(conn)
    return Reading(
        rss=rollup["Rss"],
        anonymous=rollup["Anonymous"],
        tasks=len(asyncio.all_tasks()),
        fds=len(fds),
        pooled=_connections_to(peers, fds),
        timers=sum(not handle.cancelled() for handle in handles),
        timer_heap=len(handles),
        threads=threading.active_count(),
        objects=len(gc.get_objects()),
        blocks=sys.getallocatedblocks(),
        malloc_in_use=heap.in_use,
        malloc_free=heap.free,
        db_main=main,
        db_wal=wal,
        messages=messages,
        tables=tables,
    )


def _fd_targets() -> list[str]:
    """Return what each of this process's open file descriptors points at."""
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    return targets


def _connections_to(ports: set[int | None], fds: list[str]) -> int:
    """Count the TCP connections among ``fds`` whose far end listens on one of ``ports``."""
    ours = {target[len("socket:[") : -1] for target in fds if target.startswith("socket:[")}
    count = 0
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(f"/proc/self/net/{table}").read_text().splitlines()[1:]:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                count += fields[9] in ours and remote_port in ports
    return count


_MALLINFO2_FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``: every field a ``size_t``."""

    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS.split()]


@dataclass(frozen=True, slots=True)
class _Heap:
    in_use: int = 0
    free: int = 0


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def _mallinfo() -> _Heap:
    """Return what glibc's malloc holds over every arena (nothing on another libc).

    Python keeps small objects in arenas of its own (``sys.getallocatedblocks``); larger
    ones, and SQLite, PTB's and the SDK's buffers, come from malloc.
    """
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return _Heap()
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return _Heap(in_use=info.uordblks + info.hblkhd, free=info.fordblks)


def _trimmed_rss() -> int:
    """Give malloc's free heap back to the system and return RSS then (as it was if not)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    return _smaps_rollup()["Rss"]


def _smaps_rollup() -> dict[str, int]:
    """Return the fields of ``/proc/self/smaps_rollup`` in bytes."""
    fields = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) * 1024
    return fields


def _figures(readings: list[Reading], totals: Counter[str], scale: Scale) -> list[Figure]:
    first, last = readings[0], readings[-1]
    growth = (last.rss / first.rss - 1) * 100
    growth_db = (last.bytes_per_message / first.bytes_per_message - 1) * 100
    growth_main = (last.main_bytes_per_message / first.main_bytes_per_message - 1) * 100
    days = scale.tenths * scale.days_per_tenth
    figures = [
        Figure(f"soak.rss.tenth_{n:02d}", r.rss / _MIB, "MiB", note=_note(r))
        for n, r in enumerate(readings, 1)
    ]
    figures += [
        Figure(
            "soak.rss.growth",
            growth,
            "%",
            target=at_most(GROWTH_TARGET_PCT),
            note=f"{first.rss / _MIB:.1f} → {last.rss / _MIB:.1f} MiB, first tenth to the end",
        ),
        Figure("soak.anonymous.growth", (last.anonymous / first.anonymous - 1) * 100, "%"),
        Figure("soak.objects.growth", (last.objects / first.objects - 1) * 100, "%"),
        Figure("soak.pymalloc_blocks.growth", (last.blocks / first.blocks - 1) * 100, "%"),
        Figure(
            "soak.malloc.in_use.growth",
            (last.malloc_in_use - first.malloc_in_use) / _MIB,
            "MiB",
            note=f"{first.malloc_in_use / _MIB:.1f} → {last.malloc_in_use / _MIB:.1f} MiB "
            "handed out by glibc's malloc (0 where it has no mallinfo2)",
        ),
        Figure(
            "soak.malloc.free_held.growth",
            (last.malloc_free - first.malloc_free) / _MIB,
            "MiB",
            note=f"{first.malloc_free / _MIB:.1f} → {last.malloc_free / _MIB:.1f} MiB freed "
            "but kept in malloc's heaps",
        ),
        Figure(
            "soak.rss.end_trimmed",
            totals["rss_trimmed"] / _MIB,
            "MiB",
            note="after the last reading, once malloc_trim(0) gave the free heap back",
        ),
    ]
    for name, unit, at_first, at_end in (
        ("tasks", "tasks", first.tasks, last.tasks),
        ("fds", "fds", first.fds, last.fds),
        ("fds.besides_pools", "fds", first.fds - first.pooled, last.fds - last.pooled),
        ("timers", "handles", first.timers, last.timers),
        ("threads", "threads", first.threads, last.threads),
    ):
        # The keep-alive connections of the HTTP pools come and go with the traffic of the
        # tenth's last minutes: the files besides them are the ones held to the first count.
        target = None if name == "fds" else exactly(at_first)
        figures += [
            Figure(f"soak.{name}.idle", at_first, unit, note="after the first tenth"),
            Figure(f"soak.{name}.end", at_end, unit, target=target),
        ]
    # Held by the chats active within each part's window: as many as before, give or take.
    figures += [
        Figure("soak.chats_held.idle", first.chats_held, "chats", note="after the first tenth"),
        Figure(
            "soak.chats_held.end",
            last.chats_held,
            "chats",
            target=at_most(first.chats_held * (1 + GROWTH_TARGET_PCT / 100)),
            note=f"of {scale.chats} chats, summed over the pipeline's parts",
        ),
    ]
    figures += [
        Figure(
            "soak.fds.pooled.most",
            max(r.pooled for r in readings),
            "fds",
            note="keep-alive connections to the LLM and Bot API at a tenth's end, the most; "
            f"{first.pooled} after the first, {last.pooled} at the end",
        ),
        Figure("soak.timers.heap_end", last.timer_heap, "handles", note="cancelled ones too"),
        Figure("soak.db.bytes_per_message.first", first.bytes_per_message, "B"),
        Figure("soak.db.bytes_per_message.end", last.bytes_per_message, "B"),
        Figure(
            "soak.db.bytes_per_message.growth",
            growth_db,
            "%",
            target=at_most(BYTES_GROWTH_TARGET_PCT),
            note="main + WAL over every stored message (the WAL's few MiB weigh less as "
            "messages add up)",
        ),
        Figure(
            "soak.db.main_bytes_per_message.growth",
            growth_main,
            "%",
            note=f"{growth_main:+.1f} %: {first.main_bytes_per_message:,.0f} → "
            f"{last.main_bytes_per_message:,.0f} B, the database file alone",
        ),
        *_added_per_message(readings),
        *_steepest_table(first, last),
        Figure("soak.db.mib_end", last.db_bytes / _MIB, "MiB", note=f"{last.messages:,} rows"),
        Figure("soak.db.wal_mib_end", last.db_wal / _MIB, "MiB"),
        Figure("soak.messages", totals["pushed"], "messages", note=f"{scale.chats} chats"),
        Figure("soak.never_stored", totals["never_stored"], "messages", target=exactly(0)),
        Figure("soak.not_idle", totals["not_idle"], "days", target=exactly(0)),
        Figure("soak.replies_sent", totals["sends"], "messages"),
        Figure("soak.failed_sends", totals["failed"], "calls", target=exactly(0)),
        Figure("soak.llm.reply_calls", totals["replies"], "calls"),
        Figure("soak.llm.summary_calls", totals["summary_calls"], "calls"),
        Figure(
            "soak.summaries",
            totals["summaries"],
            "summaries",
            target=exactly(scale.chats * days),
            note=f"{days} nights; {totals['summaries_failed']} failed",
        ),
    ]
    return figures


def _added_per_message(readings: list[Reading]) -> list[Figure]:
    """Return the bytes each message added in the second tenth and in the last one."""
    figures = []
    for label, n in (("second", 1), ("last", len(readings) - 1)):
        before, after = readings[n - 1], readings[n]
        added = (after.db_bytes - before.db_bytes) / max(1, after.messages - before.messages)
        figures.append(
            Figure(f"soak.db.added_per_message.{label}_tenth", added, "B", note="main + WAL")
        )
    return figures


def _steepest_table(first: Reading, last: Reading) -> list[Figure]:
    """Return how much the table or index whose bytes per message grew the most grew,
    among those holding 1 % of the file at the end."""
    grown = [
        (size / last.messages / (first.tables[name] / first.messages), name)
        for name, size in last.tables.items()
        if size >= last.db_main / 100 and first.tables.get(name)
    ]
    if not grown:
        return []
    ratio, name = max(grown)
    before = first.tables[name] / first.messages
    return [
        Figure(
            "soak.db.steepest_table.growth",
            (ratio - 1) * 100,
            "%",
            note=f"{name}: {before:,.0f} → {before * ratio:,.0f} B/message, "
            f"{last.tables[name] / _MIB:.1f} MiB at the end",
        )
    ]


def _note(reading: Reading) -> str:
    return (
        f"{reading.tasks} tasks, {reading.fds} fds ({reading.pooled} pooled), "
        f"{reading.timers} timers, {reading.threads} threads, {reading.objects:,} objects, "
        f"{reading.bytes_per_message:,.0f} B/message ({reading.db_wal / _MIB:.1f} MiB WAL)"
    )


async def _answer(conn: Connection) -> Any:
    """Wait for the load process's next answer without blocking the loop."""
    return await asyncio.to_thread(conn.recv)


def _svg(readings: Sequence[Reading], scale: Scale) -> str:
    """Draw RSS and bytes per message over the tenths, each with its ±10 % band."""
    rss = Series("RSS", [r.rss / _MIB for r in readings], "#1f5fa8")
    per_message = Series("main + WAL", [r.bytes_per_message for r in readings], "#b8562b")
    main = Series("main file alone", [r.main_bytes_per_message for r in readings], "#8a8a8a")
    return svg(
        f"A month without growing: {scale.chats} chats, {scale.messages:,} messages, "
        f"{scale.tenths * scale.days_per_tenth} nights",
        [
            (Panel(50, 50, "RSS at the end of each tenth (MiB)"), [rss]),
            (Panel(430, 50, "database bytes per stored message"), [per_message, main]),
        ],
        footer="dashed: the first tenth ± 10 % (the targets); x: tenths of the month, "
        f"{scale.days_per_tenth} chat days each",
    )
