"""Which chat days to summarise, and summarising many of them a few chats at a time.

The nightly job and ``pacebot summarize`` both run this, through
:class:`bot.ops.memory.MemoryOps`. It is idempotent: a day that has a summary (live or
popped) is left alone, except a live partial one (written before the day ended), which
the whole day's summary replaces; the store refuses a second live summary for a day even
when two runs race. A chat that fails is logged and, having no summary, is tried again
at the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from loguru import logger

from bot.days import ChatDays
from bot.errors import LLMError, StorageError
from bot.memory.ports import MemoryStore
from bot.memory.stack import FIRST_CHAT_DAY, Memory, SummaryResult
from bot.models import ChatKey


@dataclass
class NightlyReport:
    """What one run did, per chat day."""

    pushed: list[tuple[ChatKey, date]] = field(default_factory=list)
    skipped: list[tuple[ChatKey, date]] = field(default_factory=list)
    failed: list[tuple[ChatKey, date]] = field(default_factory=list)


def days_to_summarise(today: date, *, catch_up_days: int) -> list[date]:
    """Return the finished chat days a run looks at, oldest first (yesterday at least)."""
    return [today - timedelta(days=n) for n in range(max(catch_up_days, 1), 0, -1)]


async def pending_work(
    store: MemoryStore,
    chat_days: ChatDays,
    days: Sequence[date],
    *,
    only: ChatKey | None = None,
    on_purpose: bool = False,
) -> list[tuple[ChatKey, date]]:
    """Return the (chat, day) pairs with chatter messages and no summary but a partial one.

    A popped day counts as summarised, unless the run is ``on_purpose`` (an operator
    naming the day). A live partial summary (of a day summarised before it ended) does
    not: the run writes the whole day over it.
    """
    work: list[tuple[ChatKey, date]] = []
    for day in days:
        if day < FIRST_CHAT_DAY:
            continue
        start, end = chat_days.bounds(day)
        chats = [only] if only else await store.chats_active_between(start, end)
        for chat in chats:
            done = await store.has_summary(
                chat, day, include_popped=not on_purpose, include_partial=False
            )
            if not done:
                work.append((chat, day))
    return work


async def summarise_days(
    memory: Memory,
    work: Sequence[tuple[ChatKey, date]],
    *,
    concurrency: int,
    on_purpose: bool = False,
    progress: Callable[[ChatKey, date, SummaryResult | None], None] | None = None,
) -> NightlyReport:
    """Summarise each (chat, day), at most ``concurrency`` at once; never raise for one.

    A chat's days go one after another, oldest first: each is pushed on top of the one
    before, so its stack stays in day order. Chats run side by side.
    """
    report = NightlyReport()
    gate = asyncio.Semaphore(concurrency)

    async def one(chat: ChatKey, day: date) -> None:
        log = logger.bind(chat=str(chat))
        result: SummaryResult | None = None
        async with gate:
            try:
                result = await memory.summarise(chat, day, on_purpose=on_purpose)
            except (LLMError, StorageError) as exc:
                log.warning("summary of {} failed, will retry next run: {}", day, exc)
                report.failed.append((chat, day))
            except Exception:  # a bug in one chat's summary must not stop the others
                log.exception("summary of {} failed unexpectedly; will retry next run", day)
                report.failed.append((chat, day))
            else:
                done = report.pushed if result is SummaryResult.PUSHED else report.skipped
                done.append((chat, day))
                if result is SummaryResult.PUSHED:
                    log.info("summarised {}", day)
        if progress is not None:
            progress(chat, day, result)

    days_of: dict[ChatKey, list[date]] = {}
    for chat, day in work:
        days_of.setdefault(chat, []).append(day)

    async def in_order(chat: ChatKey, days: list[date]) -> None:
        for day in sorted(days):
            await one(chat, day)

    await asyncio.gather(*(in_order(chat, days) for chat, days in days_of.items()))
    return report
