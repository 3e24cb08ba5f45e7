"""Map python-telegram-bot's errors to the :mod:`bot.errors` tree.

The core decides what to do after a failed send from the error's type alone: wait
(``RateLimited``), give up on the chat (``ChatUnavailable``), drop that message
(``MessageRefused``) or retry it only if it certainly did not arrive
(``SendFailed.maybe_delivered``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import timedelta
from typing import Final

import httpx
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

from bot.errors import ChatUnavailable, MessageRefused, PacebotError, RateLimited, SendFailed
from bot.log import redactor
from bot.models import ChatKey


def retry_after_seconds(error: RetryAfter) -> float:
    """Return how long Telegram asked to wait, whether PTB gives an int or a timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value: int | float | timedelta = error.retry_after
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


# Telegram's own words for "the message you quote does not exist (any more)".
_REPLY_NOT_FOUND: Final = ("message to be replied not found", "replied message not found")
_CHAT_GONE: Final = ("chat not found",)
_TOPIC_GONE: Final = ("message thread not found",)

# httpx errors raised before a request leaves this machine: it certainly did not arrive.
_BEFORE_SENDING: Final = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)


def describe(error: BaseException) -> str:
    """Describe an error in one line without the token."""
    text = str(error) or type(error).__name__
    return redactor(f"{type(error).__name__}: {text}")


def quote_is_gone(error: BadRequest) -> bool:
    """Tell whether Telegram refused a message because the one it quotes does not exist."""
    return _says(error, _REPLY_NOT_FOUND)


def topic_is_gone(error: BadRequest) -> bool:
    """Tell whether Telegram refused a message because it cannot find the forum topic."""
    return _says(error, _TOPIC_GONE)


def translate(chat: ChatKey, error: TelegramError) -> PacebotError:
    """Map a PTB error from posting to ``chat`` to the ``bot.errors`` tree."""
    reason = describe(error)
    if isinstance(error, RetryAfter):
        seconds = retry_after_seconds(error)
        msg = f"Telegram asked to wait {seconds:g} s before posting to {chat}"
        return RateLimited(msg, retry_after_s=seconds)
    if isinstance(error, Forbidden):
        return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
    if isinstance(error, ChatMigrated):
        return ChatUnavailable(
            f"{chat} became supergroup telegram:group:{error.new_chat_id}: {reason}"
        )
    if isinstance(error, BadRequest):
        if _says(error, _CHAT_GONE):
            return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
        return MessageRefused(f"Telegram refused a message to {chat}: {reason}")
    if isinstance(error, TimedOut):
        return SendFailed(
            f"sending to {chat} timed out: {reason}", maybe_delivered=not _never_sent(error)
        )
    return SendFailed(f"sending to {chat} failed: {reason}", maybe_delivered=not _never_sent(error))


def _never_sent(error: TelegramError) -> bool:
    """Tell whether a failed request certainly did not reach Telegram.

    PTB raises ``NetworkError`` both for an error answer (a 5xx: Telegram answered and
    posted nothing; no cause) and for a broken connection (the httpx error as the cause).
    A connection that broke after the request went out (``ReadError``, a read timeout,
    the client closed under it) may have delivered it: never resend that.
    """
    cause = error.__cause__
    if cause is None:
        return not isinstance(error, TimedOut)
    return isinstance(cause, _BEFORE_SENDING)


def _says(error: TelegramError, phrases: Sequence[str]) -> bool:
    """Tell whether Telegram's description of ``error`` contains one of ``phrases``."""
    text = error.message.casefold()
    return any(phrase in text for phrase in phrases)
