"""Fetch back what a platform could not deliver: the messages missed while away.

OneBot v11 never sends an event twice: one received but not yet stored when the process
died, or written while the bot was down or disconnected, is found only in the platform's
history. Each time a platform that keeps one (a :class:`~bot.ports.History`) connects,
:class:`Backfill` asks it for the newest messages of each of its chats where someone
wrote lately, the most recently active first, and hands them to
a :class:`HistorySink` (the pipeline): each one missing from the store is
stored once, answered like a live message if it is still fresh, kept as context if not.

Commands found there are left alone: they are never stored, so whether one already ran
cannot be known, and running one twice is worse than not at all. A platform that turns
out to have no history is noted once and not asked again until the next start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from loguru import logger

from bot.errors import HistoryUnavailable, PlatformError
from bot.models import ChatKey, IncomingMessage
from bot.ports import History
from bot.tasks import start_task


@dataclass(frozen=True, slots=True)
class BackfillSettings:
    """Which chats of a platform are asked, and for how much."""

    active_within: timedelta  # chats where a chatter wrote this recently
    chats: int  # at most this many of them, the most recently active first
    count: int  # each chat's newest this many messages


class ActiveChats(Protocol):
    """Which chats of a platform were active lately."""

    async def chats_active_since(
        self, platform: str, since: datetime, *, limit: int
    ) -> list[ChatKey]:
        """Return up to ``limit`` chats of ``platform`` where a chatter wrote at or after
        ``since``, the most recently active first."""
        ...


class HistorySink(Protocol):
    """Where messages fetched back from a platform's history go (the pipeline)."""

    async def receive_history(self, messages: Sequence[IncomingMessage]) -> list[IncomingMessage]:
        """Take messages fetched back; return those stored now (the rest were stored before)."""
        ...


class Backfill:
    """Fetch back, on each connect of a platform, the messages its history holds and the
    store misses."""

    def __init__(
        self,
        store: ActiveChats,
        pipeline: HistorySink,
        sources: Mapping[str, tuple[History, BackfillSettings]],
        *,
        is_command: Callable[[str], bool],
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._is_command = is_command
        self._pipeline = pipeline
        self._sources = sources
        self._now = now
        self._unavailable: set[str] = set()  # platforms found without history this run
        self._running: set[asyncio.Task[None]] = set()
        self._stopping = False

    def connected(self, platform: str) -> None:
        """Start fetching back what ``platform`` holds, if it keeps a history."""
        source = self._sources.get(platform)
        if source is None or self._stopping or platform in self._unavailable:
            return
        history, settings = source
        start_task(
            self.fetch_back(history, settings),
            name=f"backfill:{platform}",
            failure=f"{platform}: fetching back missed messages failed",
            owner=self._running,
        )

    async def fetch_back(self, history: History, settings: BackfillSettings) -> dict[ChatKey, int]:
        """Ask each recently active chat for its newest messages; store what was missed.

        Return how many messages each chat asked gave that were not stored before.
        """
        name = history.name
        since = self._now() - settings.active_within
        chats = await self._store.chats_active_since(name, since, limit=settings.chats)
        found: dict[ChatKey, int] = {}
        for chat in chats:
            try:
                messages = await history.latest_messages(chat, count=settings.count)
            except HistoryUnavailable as error:
                self._unavailable.add(name)
                logger.info("{}: no message history to fetch missed messages from: {}", name, error)
                return found
            except PlatformError as error:
                logger.info(
                    "{}: fetching back missed messages stopped after {} of {} chats: {}",
                    name,
                    len(found),
                    len(chats),
                    error,
                )
                break
            chat_messages = [m for m in messages if not self._is_command(m.text)]
            found[chat] = len(await self._pipeline.receive_history(chat_messages))
        _log_found(name, found)
        return found

    async def stop(self) -> None:
        """Stop fetching; what was stored stays, the next start asks again."""
        self._stopping = True
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def _log_found(platform: str, found: Mapping[ChatKey, int]) -> None:
    """Say in one line how many missed messages each chat gave."""
    total = sum(found.values())
    if not total:
        logger.info("{}: {} chat(s) asked for missed messages; none missed", platform, len(found))
        return
    counts = [f"{chat} {count}" for chat, count in found.items() if count]
    if len(counts) < len(found):
        counts.append(f"{len(found) - len(counts)} other(s) none")
    logger.info(
        "{}: {} chat(s) asked for missed messages; {} stored now ({})",
        platform,
        len(found),
        total,
        ", ".join(counts),
    )
