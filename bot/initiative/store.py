"""The port initiative keeps its promises, quiet periods and openers through.

``storage/initiative.py`` implements it on the SQLite file. Later items are created with
the batch whose plan made them, and marked done when the batch that ran them closes, each
in that batch's transaction (:meth:`bot.ports.Batches.close_batch`): a promise is never
kept without the answer that made it, nor run without its replies being queued.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from bot.initiative.openers import OpenerFacts, OpenerSent, QuietPeriod
from bot.initiative.promises import LaterItem
from bot.models import ChatKey


class InitiativeStore(Protocol):
    """Durable later items, quiet periods and what the opener guards read."""

    async def pending_later_count(self, chat: ChatKey) -> int:
        """Count the chat's later items not yet run (pending or being run)."""
        ...

    async def next_later_due(self, *, platforms: Collection[str]) -> datetime | None:
        """Return when the earliest pending item on one of ``platforms`` falls due."""
        ...

    async def claim_due_later(
        self, *, now: datetime, platforms: Collection[str], limit: int
    ) -> list[LaterItem]:
        """Move up to ``limit`` pending items due by ``now`` to running; return them,
        the most overdue first."""
        ...

    async def drop_later(self, item_id: int, *, reason: str, now: datetime) -> bool:
        """Give up a pending or running item; ``False`` if it is neither any more."""
        ...

    async def recover_later(self, *, now: datetime, stale_after_s: float) -> list[LaterItem]:
        """After a restart: items a crash left running are pending again; pending ones more
        than ``stale_after_s`` past due are dropped. Return those dropped."""
        ...

    async def later_items(
        self, chat: ChatKey, *, pending_only: bool, limit: int
    ) -> list[LaterItem]:
        """Return the chat's later items, the soonest due first (pending ones only, or all)."""
        ...

    async def later_item(self, chat: ChatKey, item_id: int) -> LaterItem | None:
        """Return one later item of ``chat``; ``None`` if it has none with that id."""
        ...

    async def cancel_later(
        self, chat: ChatKey, item_id: int, *, by: str, now: datetime
    ) -> LaterItem | None:
        """Cancel a pending item of ``chat`` as ``by``; ``None`` if it has no such item."""
        ...

    async def opener_candidates(self, *, since: datetime) -> dict[ChatKey, datetime]:
        """Return the chats where the bot answered a person's message since ``since``, each
        with the time of its last message (anyone's)."""
        ...

    async def opener_facts(self, chat: ChatKey, *, day_start: datetime) -> OpenerFacts:
        """Return what the opener guards read about ``chat`` (openers counted since
        ``day_start``)."""
        ...

    async def openers_sent(self, chat: ChatKey, *, limit: int) -> list[OpenerSent]:
        """Return the chat's newest opener batches, newest first."""
        ...

    async def start_quiet(
        self, chat: ChatKey, *, until: datetime, by: str, now: datetime
    ) -> QuietPeriod:
        """Quiet ``chat`` from now until ``until`` (ending a quiet already running)."""
        ...

    async def end_quiet(self, chat: ChatKey, *, by: str, now: datetime) -> QuietPeriod | None:
        """End the chat's running quiet; ``None`` if it is not quiet."""
        ...

    async def quiet_periods(self, chat: ChatKey, *, limit: int) -> list[QuietPeriod]:
        """Return the chat's newest quiet periods, newest first."""
        ...
