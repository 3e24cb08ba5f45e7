"""Hand what one read of a wire brought to the core in one call, and survive a bad message.

Both platforms read their wire in pages (a getUpdates answer, the OneBot frames that came
in while the last ones were stored) and give each page to
:meth:`bot.ports.MessageSink.receive_many`, which stores it in one transaction. The sink
handles database trouble itself; what reaches this module is a bug set off by one
message, and it must not cost the rest of the page: the page is handed over again one
message at a time, so only the message that fails alone is lost (storing is
idempotent, so the others are not stored twice).
"""

from __future__ import annotations

from collections.abc import Sequence

from loguru import logger

from bot.models import IncomingMessage
from bot.ports import MessageSink


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
