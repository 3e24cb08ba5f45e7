"""Store what arrives before anything else happens to it, and wait out a failing database.

A platform hands over what one read of its wire brought; :class:`Keeper` stores it in one
write. A failing database (disk full, locked, I/O errors) is waited out for up to
``store_patience_s`` per outage: the adapter hands over nothing more meanwhile, so later
messages wait on the wire (a Telegram poll confirms nothing it has not stored), and once
the patience is spent each hand-over gets one try until a write succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

import stamina
from loguru import logger

from bot.errors import StorageError
from bot.models import ChatKey, IncomingMessage
from bot.retries import Retries


class KeptMessages(Protocol):
    """Where arriving messages are kept: those to answer, and those kept as context only."""

    async def add_messages(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages all or none; say for each whether it is new (not stored before)."""
        ...

    async def add_context(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages as context only, all or none; say for each whether it is new.

        A new one never waits for an answer: it is in the chat's history at once.
        """
        ...


class Keeper:
    """Store messages patiently; say which were new."""

    def __init__(
        self,
        store: KeptMessages,
        *,
        retries: Retries,
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._retries = retries
        self._now = now
        self._stopping = False
        self._failing_since: float | None = None  # loop time of the first failed write

    async def keep(self, messages: list[IncomingMessage]) -> list[IncomingMessage]:
        """Store ``messages``; return those stored now, in order.

        Not stored: a message stored before, or any the database refused for too long
        (logged as lost, by chat).
        """
        if not messages:
            return []
        received_at = self._now()
        failure: StorageError | None = None
        try:
            try:
                stored = await self._store_once(messages, received_at=received_at)
            except StorageError as error:
                stored = await self._store_patiently(messages, error, received_at=received_at)
        except StorageError as error:
            failure = error  # logged below, without a traceback: the cause says it all
        if failure is not None:
            for chat, ids in _ids_by_chat(messages).items():
                logger.bind(chat=str(chat)).error(
                    "message {} lost, it could not be stored: {}", ", ".join(ids), failure
                )
            return []
        return stored

    async def keep_as_context(self, messages: list[IncomingMessage]) -> list[IncomingMessage]:
        """Store ``messages`` as context, never to be answered; return those stored now.

        One try: a platform's history is asked again at its next connect.
        """
        if not messages:
            return []
        try:
            new = await self._store.add_context(messages, received_at=self._now())
        except StorageError as error:
            logger.warning("{} message(s) from history not stored: {}", len(messages), error)
            return []
        stored = [message for message, is_new in zip(messages, new, strict=True) if is_new]
        for chat, ids in _ids_by_chat(stored).items():
            logger.bind(chat=str(chat)).info(
                "message {} fetched back too late to answer: kept as context", ", ".join(ids)
            )
        return stored

    async def _store_patiently(
        self, messages: list[IncomingMessage], failure: StorageError, *, received_at: datetime
    ) -> list[IncomingMessage]:
        """Retry a write the database refused, with back-off, while the outage is young.

        Raise the last ``StorageError`` once the outage's patience is spent, or at a stop.
        """
        retries = self._retries
        since = self._failing_since
        spent_s = 0.0 if since is None else asyncio.get_running_loop().time() - since
        patience_s = retries.store_patience_s - spent_s
        if patience_s <= 0 or not self._may_recover(failure):
            raise failure
        async for attempt in stamina.retry_context(
            on=self._may_recover,
            attempts=None,
            timeout=patience_s,
            wait_initial=retries.store_wait_initial_s,
            wait_max=retries.store_wait_max_s,
        ):
            with attempt:
                stored = await self._store_once(messages, received_at=received_at)
        return stored

    async def _store_once(
        self, messages: list[IncomingMessage], *, received_at: datetime
    ) -> list[IncomingMessage]:
        """Try once to store ``messages``; note when the database began failing."""
        try:
            new = await self._store.add_messages(messages, received_at=received_at)
        except StorageError as error:
            if self._failing_since is None:
                self._failing_since = asyncio.get_running_loop().time()
            for chat, ids in _ids_by_chat(messages).items():
                logger.bind(chat=str(chat)).error(
                    "cannot store message {} ({}); retrying", ", ".join(ids), error
                )
            raise
        self._failing_since = None
        stored = [message for message, is_new in zip(messages, new, strict=True) if is_new]
        if len(stored) < len(messages):
            logger.debug("{} message(s) already stored", len(messages) - len(stored))
        return stored

    def stop(self) -> None:
        """Stop waiting out a failing database: a write under way gets one more try."""
        self._stopping = True

    def _may_recover(self, error: Exception) -> bool:
        """Tell stamina to retry a failed write, unless pacebot is stopping."""
        return isinstance(error, StorageError) and not self._stopping


def _ids_by_chat(messages: Sequence[IncomingMessage]) -> dict[ChatKey, list[str]]:
    """Group the message ids of ``messages`` by chat, in order."""
    grouped: dict[ChatKey, list[str]] = {}
    for message in messages:
        grouped.setdefault(message.chat, []).append(message.message_id)
    return grouped
