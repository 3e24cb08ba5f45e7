"""Translate what ``nonebot-adapter-qq`` raises into the :mod:`bot.errors` tree.

The platform refuses with HTTP 400 and a code of its own. A reply whose passive window
expired (40034005), one too many for its message (40034128), a repeated ``msg_seq``
(40054005), a ``msg_id`` it does not know (40034024), a message that answers nothing where
that is not allowed (40034102) or beyond its quota (40034100), and any other 4xx are
refused for good: ``MessageRefused``, never retried (and never sent as a message that
answers nothing instead). A message held by the content review is refused too. 429 is a
rate limit; a 5xx, a timeout or a broken connection after the request left may have
delivered it; a connection that never opened certainly did not.
"""

from __future__ import annotations

from typing import Final

import httpx
from nonebot.adapters.qq.exception import (
    ActionFailed,
    AuditException,
    NetworkError,
    RateLimitException,
    UnauthorizedException,
)

from bot.errors import MessageRefused, PlatformError, RateLimited, SendFailed
from bot.models import ChatKey

WINDOW_EXPIRED: Final = 40034005
TOO_MANY_REPLIES: Final = 40034128
DUPLICATE_SEQ: Final = 40054005
UNKNOWN_MSG_ID: Final = 40034024
PROACTIVE_REFUSED: Final = 40034102
PROACTIVE_QUOTA: Final = 40034100
_WHY: Final = {
    WINDOW_EXPIRED: "its reply window closed",
    TOO_MANY_REPLIES: "its message was answered as often as the platform allows",
    DUPLICATE_SEQ: "its msg_seq was used before",
    UNKNOWN_MSG_ID: "the message it answers is unknown to the platform",
    PROACTIVE_REFUSED: "messages that answer nothing are not allowed there",
    PROACTIVE_QUOTA: "the chat's messages that answer nothing are spent this month",
}
RATE_LIMIT_WAIT_S: Final = 2.0  # the platform names no wait


def describe(error: ActionFailed) -> str:
    """Say what the platform answered, in a few words (its code, its words, why)."""
    why = _WHY.get(error.code or 0)
    words = str(error.message or "")[:80]
    said = f"HTTP {error.status_code}, code {error.code}: {words}"
    return f"{said} ({why})" if why else said


def send_failure(error: BaseException, *, chat: ChatKey, timeout_s: float) -> PlatformError:
    """Return the :mod:`bot.errors` form of a failed post to ``chat``."""
    if isinstance(error, AuditException):
        return MessageRefused(f"{chat}: held by the platform's content review")
    if isinstance(error, RateLimitException):
        return RateLimited(f"{chat}: rate limited", retry_after_s=RATE_LIMIT_WAIT_S)
    if isinstance(error, UnauthorizedException):
        msg = f"{chat}: the platform refused the access token ({describe(error)})"
        return SendFailed(msg, maybe_delivered=False)
    if isinstance(error, ActionFailed):
        if error.status_code >= httpx.codes.INTERNAL_SERVER_ERROR:
            return SendFailed(f"{chat}: {describe(error)}", maybe_delivered=True)
        return MessageRefused(f"{chat}: {describe(error)}")
    if isinstance(error, TimeoutError):
        msg = f"{chat}: no answer within {timeout_s:g} s"
        return SendFailed(msg, maybe_delivered=True)
    if isinstance(error, NetworkError):
        cause = error.__cause__
        never_left = isinstance(cause, httpx.ConnectError | httpx.ConnectTimeout)
        msg = f"{chat}: the platform cannot be reached ({type(cause).__name__})"
        return SendFailed(msg, maybe_delivered=not never_left)
    return SendFailed(f"{chat}: {type(error).__name__}", maybe_delivered=True)
