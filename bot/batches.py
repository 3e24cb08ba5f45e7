"""The store as the pipeline sees it: batches opened, closed, cancelled and recovered.

A batch takes a chat's waiting messages for one LLM call; closing it queues its replies
and keeps its promises in one transaction (the pipeline also keeps an edited text).
``storage/`` implements :class:`Batches`; the pipeline is its one user.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from bot.initiative.occasion import OccasionKind
from bot.initiative.promises import Promise
from bot.models import Batch, BatchOutcome, ChatKey
from bot.replies.items import OutboxItem, PlannedReply


class Batches(Protocol):
    """Waiting messages taken together for one LLM call, how each call ended, and the
    replies it queued."""

    async def waiting_counts(self, chat: ChatKey | None = None) -> dict[ChatKey, int]:
        """Count, per chat (or for ``chat`` only), the messages no batch has taken yet."""
        ...

    async def edit_message(self, chat: ChatKey, message_id: str, text: str) -> bool:
        """Replace a stored message's text; return ``False`` if it is unknown."""
        ...

    async def open_batch(self, chat: ChatKey, *, limit: int, now: datetime) -> Batch | None:
        """Take up to ``limit`` oldest waiting messages of a chat into a new open batch."""
        ...

    async def open_initiative_batch(
        self, chat: ChatKey, occasion: OccasionKind, *, later_id: int | None, now: datetime
    ) -> Batch | None:
        """Open a batch for ``occasion`` that takes no messages; ``None`` if its later item
        is no longer running."""
        ...

    async def close_batch(
        self,
        batch_id: int,
        outcome: BatchOutcome,
        *,
        now: datetime,
        replies: Sequence[PlannedReply] = (),
        error: str | None = None,
        promises: Sequence[Promise] = (),
    ) -> list[OutboxItem]:
        """Record how a batch ended and, in the same transaction, queue its replies, keep
        the later items it promised and mark done the later item it ran."""
        ...

    async def abandon_open_batches(self, *, now: datetime) -> int:
        """Mark batches left open by a crash abandoned; their messages wait again."""
        ...

    async def cancel_scheduled(self, chat: ChatKey, *, now: datetime) -> int:
        """Cancel every scheduled reply of a chat; return how many."""
        ...

    async def cancel_replies(self, item_ids: Sequence[int], *, now: datetime) -> int:
        """Cancel those of these replies that are still scheduled; return how many."""
        ...

    async def recover_outbox(self, *, now: datetime, stale_after_s: float) -> list[ChatKey]:
        """After a restart: drop ``sending`` and stale ``scheduled`` replies.

        Return the chats that still have fresh scheduled replies.
        """
        ...
