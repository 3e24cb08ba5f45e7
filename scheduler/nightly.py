"""The nightly job: summarise every chat's finished days, a few chats at a time.

A plain async function, tested without a scheduler; what it runs is the core's
(``bot/memory/nightly.py``), which ``pacebot summarize`` runs by hand too.
"""

from __future__ import annotations

from loguru import logger

from bot.config import Config
from bot.memory.nightly import NightlyReport, days_to_summarise, pending_work, summarise_days
from bot.memory.ports import MemoryStore
from bot.memory.stack import Memory


async def run_nightly(memory: Memory, store: MemoryStore, config: Config) -> NightlyReport:
    """Summarise every chat's finished days not summarised yet (catching up after downtime)."""
    days = days_to_summarise(memory.today(), catch_up_days=config.memory.catch_up_days)
    work = await pending_work(store, memory.days, days)
    report = await summarise_days(memory, work, concurrency=config.memory.summary_concurrency)
    # Also what an earlier run or a down endpoint left without a vector.
    await memory.embed_pending()
    if work:
        logger.info(
            "nightly summaries: {} pushed, {} skipped, {} failed",
            len(report.pushed),
            len(report.skipped),
            len(report.failed),
        )
    return report
