"""Later items: 100,000 pending across 10,000 chats, and those falling due, on time.

A database is built with 10,000 chats each holding ten pending later items (SQL written
straight into a migrated file: building it through the answer path would take minutes).
Of the 100,000, ``due_soon`` fall due over the run's first seconds, spread evenly; the rest
are hours to 30 days away. The real core then starts on it (``fakes.harness``: SQLite,
the pipeline, the ``openai`` SDK against the fake LLM server, a recording platform),
twice on an empty database first (the first start pays the imports, the second is the
yardstick), and answers a message before the first item falls due, as a running bot has.

The figures: the RSS the start with them added over the empty one (what 100,000 pending
items cost a running bot), the start-up time with them pending and without, the timers and
tasks initiative holds while they wait (one wake-up, no task), and for each item falling
due the lateness from its due time to its initiative batch's LLM request.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.machine import rss_bytes
from bench.report import Figure, at_most, exactly
from bench.rig import fresh_path
from bench.stats import percentile
from bot.models import ChatKey
from fakes.harness import harness, make_config, user_prompt
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

LATENESS_TARGET_S = 1.0
_NOTE_RE = re.compile(r"\bdue(\d+)\b")
_REPLY = '{"replies": [{"content": "到点啦"}]}'


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int
    per_chat: int
    due_soon: int  # items falling due during the run
    spread_s: float  # over this many seconds
    lead_s: float  # the first falls due this long after the database is built


FULL = Scale(chats=10_000, per_chat=10, due_soon=300, spread_s=15.0, lead_s=10.0)
QUICK = Scale(chats=200, per_chat=10, due_soon=20, spread_s=2.0, lead_s=4.0)


async def _build(path: Path, scale: Scale, *, now: datetime) -> dict[int, float]:
    """Write the pending items; return the unix due time of each item due soon, by id.

    The rows are made by SQLite itself (a recursive CTE), not as Python objects: what this
    process holds afterwards is only what the running bot holds.
    """
    store = await SqliteStore.open(path)  # creates and migrates the schema
    await store.close()
    now_s = now.timestamp()
    start_s = now_s + scale.lead_s  # the core is up, and has answered once, by then
    step = scale.chats // scale.due_soon  # every step-th chat has one item due soon
    soon = {
        n * step * scale.per_chat + 1: start_s + scale.spread_s * n / scale.due_soon
        for n in range(scale.due_soon)
    }
    later_s = 30 * 86400 - 7200
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "INSERT INTO batches (id, chat_key, state, created_at, finished_at)"
            " WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n < ?)"
            " SELECT n + 1, 'test:private:' || n, 'answered', ?, ? FROM c",
            (scale.chats - 1, now_s, now_s),
        )
        db.execute(
            "INSERT INTO later_items (id, chat_key, platform, batch_id, asker_id, kind, note,"
            " due_at, state, created_at, updated_at)"
            " WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < :total)"
            " SELECT n, 'test:private:' || ((n - 1) / :per), 'test', (n - 1) / :per + 1, '7',"
            " 'remind', 'note due' || n,"
            " CASE WHEN (n - 1) % (:per * :step) = 0 AND (n - 1) / (:per * :step) < :soon"
            "  THEN :start + :spread * ((n - 1) / (:per * :step)) / :soon"
            "  ELSE :now + 3600 + (n * 7919) % :later END,"
            " 'pending', :now, :now FROM i",
            {
                "total": scale.chats * scale.per_chat,
                "per": scale.per_chat,
                "step": step,
                "soon": scale.due_soon,
                "start": start_s,
                "spread": scale.spread_s,
                "now": now_s,
                "later": later_s,
            },
        )
    db.close()
    return soon


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Start the core with the items pending; measure memory, start-up and lateness."""
    scale = QUICK if quick else FULL
    loop = asyncio.get_running_loop()
    async with FakeLLMServer(default=_REPLY) as llm:
        for name in ("initiative-warm", "initiative-empty"):  # the first start imports
            empty = fresh_path(workdir, name)
            config = make_config(empty, llm.base_url)
            await (await SqliteStore.open(config.database_path)).close()  # migrated, as the full
            started = time.perf_counter()
            async with harness(empty, llm, config=config):
                empty_start_s = time.perf_counter() - started
                rss_empty = rss_bytes()
        full = fresh_path(workdir, "initiative-full")
        config = make_config(full, llm.base_url)
        config.bot.data_dir.mkdir(parents=True)
        soon = await _build(config.database_path, scale, now=datetime.now(UTC))
        started = time.perf_counter()
        async with harness(full, llm, config=config) as bot:
            full_start_s = time.perf_counter() - started
            rss_full = rss_bytes()
            # A bot that has answered once has its SDK loaded.
            await bot.say("先热个身", chat=ChatKey.parse("test:private:warm"))
            await bot.settle()
            wall0, loop0 = datetime.now(UTC).timestamp(), loop.time()
            timers = sum(
                "WakeUp._fire" in repr(h) and not h.cancelled()
                for h in loop._scheduled  # type: ignore[attr-defined]
            )
            tasks = sum("initiative" in t.get_name() for t in asyncio.all_tasks())
            last_due = max(soon.values()) - wall0
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(last_due + 20):
                    while len(llm.requests) <= len(soon):  # noqa: ASYNC110 - the fake's record
                        await asyncio.sleep(0.05)
            await bot.settle()
    lateness = []
    for body, arrived in zip(llm.requests, llm.request_times, strict=True):
        found = _NOTE_RE.search(user_prompt(body))
        if found is not None and int(found[1]) in soon:  # not the warm-up
            lateness.append(arrived - (loop0 + soon[int(found[1])] - wall0))
    pending = scale.chats * scale.per_chat
    note = f"{pending:,} pending in {scale.chats:,} chats"
    return [
        Figure("initiative.pending", float(pending), "items"),
        Figure("initiative.rss_added", (rss_full - rss_empty) / 2**20, "MiB", note=note),
        Figure("initiative.start.seconds", full_start_s, "s", note=note),
        Figure("initiative.start_empty.seconds", empty_start_s, "s", note="no item pending"),
        Figure("initiative.timers", float(timers), "timers", exactly(1.0), note="one wake-up"),
        Figure("initiative.tasks", float(tasks), "tasks", exactly(0.0)),
        Figure("initiative.ran", len(lateness) / len(soon), "fraction", exactly(1.0)),
        Figure("initiative.lateness.p50", percentile(lateness, 0.5) * 1e3, "ms"),
        Figure(
            "initiative.lateness.p99",
            percentile(lateness, 0.99) * 1e3,
            "ms",
            at_most(LATENESS_TARGET_S * 1e3),
            note="due → its LLM request",
        ),
        Figure("initiative.lateness.max", max(lateness) * 1e3, "ms"),
    ]
