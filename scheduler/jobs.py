"""Put the nightly job on the clock: APScheduler 3, cron at the day boundary, local time.

Only when it runs is decided here; what it does is the core's
(:meth:`bot.ops.memory.MemoryOps.run_nightly`), which the composition root hands over.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from bot.config.model import Config

MISFIRE_GRACE_S = 6 * 3600  # a run up to six hours late (a suspended laptop) still happens
NIGHTLY_JOB_ID = "nightly-summaries"


def nightly_trigger(config: Config) -> CronTrigger:
    """Return the cron trigger at ``memory.day_boundary`` in ``bot.timezone``."""
    boundary = config.memory.day_boundary_time
    return CronTrigger(hour=boundary.hour, minute=boundary.minute, timezone=config.bot.zone)


def start_scheduler(config: Config, nightly: Callable[[], Awaitable[Any]]) -> AsyncIOScheduler:
    """Start a scheduler (inside the running loop) that calls ``nightly`` every night."""
    scheduler = AsyncIOScheduler(timezone=config.bot.zone)
    scheduler.add_job(
        nightly,
        nightly_trigger(config),
        id=NIGHTLY_JOB_ID,
        coalesce=True,
        misfire_grace_time=MISFIRE_GRACE_S,
        max_instances=1,
        replace_existing=True,
    )
    scheduler.start()
    return scheduler
