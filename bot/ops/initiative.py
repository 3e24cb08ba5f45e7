"""What an operator and a chatter see and change of the bot's initiative, for every face.

``/later``, ``/later cancel``, ``/quiet`` and the dashboard's chat page (with its JSON API)
read the pending later items, the openers sent and the quiet periods here, and cancel and
quiet through here: who may cancel is decided once (its asker, or an admin), and every
change is recorded with who made it (the row keeps it; a log line names them).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from loguru import logger

from bot.initiative.openers import OpenerSent, QuietPeriod
from bot.initiative.promises import LaterItem
from bot.initiative.schedule import quiet_until
from bot.initiative.store import InitiativeStore
from bot.models import ChatKey

LATER_SHOWN_MAX = 50  # a chat holds initiative.max_pending_per_chat pending items
OPENERS_SHOWN_MAX = 20
QUIET_SHOWN_MAX = 20
QUIET_HOURS_DEFAULT = 24.0
QUIET_HOURS_MAX = 24.0 * 365


class Cancelled(enum.Enum):
    """How a cancel went."""

    DONE = "done"
    NOT_YOURS = "not yours"  # someone else asked for it, and the canceller is no admin
    UNKNOWN = "unknown"  # no pending item with that id in this chat


@dataclass(frozen=True, slots=True)
class InitiativeView:
    """A chat's initiative as the dashboard shows it."""

    pending: list[LaterItem]
    openers: list[OpenerSent]
    quiet: list[QuietPeriod]  # newest first
    quiet_until: datetime | None  # the chat is quiet until then


class InitiativeOps:
    """Read and change a chat's later items and quiet periods."""

    def __init__(self, store: InitiativeStore, *, now: Callable[[], datetime]) -> None:
        self._store = store
        self._now = now

    async def pending(self, chat: ChatKey) -> list[LaterItem]:
        """Return the chat's later items not yet run, the soonest due first."""
        return await self._store.later_items(chat, pending_only=True, limit=LATER_SHOWN_MAX)

    async def cancel(
        self, chat: ChatKey, item_id: int, *, by: str, asker_id: str | None = None
    ) -> tuple[Cancelled, LaterItem | None]:
        """Cancel a pending item of ``chat`` as ``by``; with ``asker_id`` (a chatter, not an
        admin) only an item promised to them. Return how it went, and the item if known."""
        item = await self._store.later_item(chat, item_id)
        if item is None or item.state != "pending":
            return Cancelled.UNKNOWN, None
        if asker_id is not None and item.asker_id != asker_id:
            return Cancelled.NOT_YOURS, item
        cancelled = await self._store.cancel_later(chat, item_id, by=by, now=self._now())
        if cancelled is None:  # it fell due meanwhile
            return Cancelled.UNKNOWN, None
        logger.bind(chat=str(chat)).info("{} #{} cancelled by {}", item.kind, item_id, by)
        return Cancelled.DONE, cancelled

    async def quiet(self, chat: ChatKey, *, hours: float, by: str) -> QuietPeriod:
        """Pause openers and follow-ups in ``chat`` for ``hours``, as ``by``."""
        now = self._now()
        period = await self._store.start_quiet(
            chat, until=now + timedelta(hours=hours), by=by, now=now
        )
        logger.bind(chat=str(chat)).info("quiet for {:g} h, by {}", hours, by)
        return period

    async def quiet_off(self, chat: ChatKey, *, by: str) -> QuietPeriod | None:
        """End the chat's quiet, as ``by``; ``None`` if it was not quiet."""
        ended = await self._store.end_quiet(chat, by=by, now=self._now())
        if ended is not None:
            logger.bind(chat=str(chat)).info("quiet ended by {}", by)
        return ended

    async def view(self, chat: ChatKey) -> InitiativeView:
        """Return the chat's pending items, openers sent and quiet periods."""
        quiet = await self._store.quiet_periods(chat, limit=QUIET_SHOWN_MAX)
        return InitiativeView(
            pending=await self.pending(chat),
            openers=await self._store.openers_sent(chat, limit=OPENERS_SHOWN_MAX),
            quiet=quiet,
            quiet_until=quiet_until(quiet, now=self._now()),
        )
