"""Hand what one read of a wire brought to the core in one call, and survive a bad message.

:func:`deliver_together` is the delivery task of a platform whose events arrive one by
one (OneBot's frames, the official QQ bot's dispatches): it hands over what came in
together; :func:`drain` lets it finish at stop.

Both platforms read their wire in pages (a getUpdates answer, the OneBot frames that came
in while the last ones were stored) and give each page to
:meth:`bot.ports.MessageSink.receive_many`, which stores it in one transaction. The sink
handles database trouble itself; what reaches this module is a bug set off by one
message, and it must not cost the rest of the page: the page is handed over again one
message at a time, so only the message that fails alone is lost (storing is
idempotent, so the others are not stored twice).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

from loguru import logger

from bot.models import IncomingMessage
from bot.ports import MessageSink

HANDOVER_MAX: Final = 500  # events stored in one transaction at most
T = TypeVar("T")


async def hand_over(sink: MessageSink, messages: Sequence[IncomingMessage], *, wire: str) -> bool:
    """Give ``messages`` to ``sink`` at once; if that fails, one by one, logging each failure.

    ``wire`` names the platform in the log lines. Return whether every message was taken;
    never raises an ``Exception``.
    """
    if not messages:
        return True
    error = await _receive(sink, messages)
    if error is None:
        return True
    if len(messages) == 1:
        _log_failure(messages[0], error, wire=wire)
        return False
    logger.warning(
        "{}: handing over {} messages at once failed ({}: {}); trying one at a time",
        wire,
        len(messages),
        type(error).__name__,
        error,
    )
    taken = True
    for message in messages:
        error = await _receive(sink, (message,))
        if error is not None:
            _log_failure(message, error, wire=wire)
            taken = False
    return taken


async def _receive(sink: MessageSink, messages: Sequence[IncomingMessage]) -> Exception | None:
    """Hand ``messages`` over; return what went wrong, if anything."""
    try:
        await sink.receive_many(messages)
    except Exception as error:
        return error
    return None


def _log_failure(message: IncomingMessage, error: Exception, *, wire: str) -> None:
    logger.bind(chat=str(message.chat)).opt(exception=error).error(
        "{}: handling message {} failed: {}", wire, message.message_id, error
    )


async def deliver_together(
    inbox: asyncio.Queue[T], deliver: Callable[[list[T]], Awaitable[None]]
) -> None:
    """Hand what arrives over in arrival order, what came in together at once, for ever.

    Nothing waits to fill a hand-over: while one is being stored, what arrives queues up,
    and the next hand-over takes it all (up to :data:`HANDOVER_MAX`). One commit per
    hand-over keeps up with a busy wire, and the window in which a received event is not
    yet stored stays one commit long.
    """
    while True:
        items = [await inbox.get()]
        while len(items) < HANDOVER_MAX and not inbox.empty():
            items.append(inbox.get_nowait())
        try:
            await deliver(items)
        finally:
            for _ in items:
                inbox.task_done()


async def drain(
    inbox: asyncio.Queue[T], task: asyncio.Task[None] | None, *, timeout_s: float, wire: str
) -> None:
    """Let ``task`` hand over what ``inbox`` holds (``timeout_s`` at most), then end it."""
    if task is None:
        return
    if not task.done():
        try:
            async with asyncio.timeout(timeout_s):
                await inbox.join()
        except TimeoutError:
            logger.error("{}: {} received events were not stored in time", wire, inbox.qsize())
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
