"""Translate nonebot's OneBot errors into the :mod:`bot.errors` tree.

A send that fails becomes one of::

    ChatUnavailable             the bot can no longer post there (kicked, muted, not a friend)
    SendFailed(maybe_delivered) everything else; ``maybe_delivered`` when the message may
                                have been posted although no answer says so

OneBot has no standard error codes for these, so the words of the answer decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from nonebot.adapters.onebot.v11 import ActionFailed, ApiNotAvailable, NetworkError

from adapters.qq.normalise import one_line
from bot.errors import ChatUnavailable, PacebotError, SendFailed
from bot.models import ChatKey

# Words OneBot implementations use when the bot can no longer post to a chat. There is
# no standard error code for these (NapCat, Lagrange and go-cqhttp all differ).
CHAT_GONE: Final = (
    "not in group",
    "not in the group",
    "group not found",
    "group not exist",
    "not a member",
    "muted",
    "not friend",
    "not a friend",
    "friend not found",
    "blocked",
    "kicked",
    "群不存在",
    "不在群",
    "不是群成员",
    "禁言",
    "非好友",
    "不是好友",
    "好友不存在",
    "拉黑",
    "被移出",
)
# An implementation that timed out *internally* may still have posted the message.
MAYBE_POSTED: Final = ("timeout", "timed out", "超时")
# The OneBot v11 code for "no such action", and the words implementations use for it.
UNSUPPORTED_RETCODE: Final = 1404
UNSUPPORTED_WORDS: Final = ("unsupported", "not support", "unknown action", "不支持")


def says(error: ActionFailed, phrases: Sequence[str]) -> bool:
    """Tell whether the failure's words contain one of ``phrases``, ignoring case."""
    words = " ".join(str(error.info.get(key) or "") for key in ("wording", "message", "msg"))
    folded = words.casefold()
    return any(phrase in folded for phrase in phrases)


def describe(error: ActionFailed) -> str:
    """Say in one line what the OneBot implementation answered."""
    info = error.info
    words = info.get("wording") or info.get("message") or info.get("msg") or "no reason given"
    return f"retcode {info.get('retcode')}: {one_line(str(words), 200)}"


def is_unsupported(error: ActionFailed) -> bool:
    """Tell whether the implementation answered that it has no such action."""
    return error.info.get("retcode") == UNSUPPORTED_RETCODE or says(error, UNSUPPORTED_WORDS)


def refusal(chat: ChatKey, action: str, error: ActionFailed) -> PacebotError:
    """Map a failed action to the ``bot.errors`` tree."""
    reason = describe(error)
    if says(error, CHAT_GONE):
        return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
    if says(error, MAYBE_POSTED):
        return SendFailed(f"OneBot timed out posting to {chat} ({reason})", maybe_delivered=True)
    return SendFailed(f"OneBot refused {action} to {chat}: {reason}", maybe_delivered=False)


def send_failure(error: Exception, *, chat: ChatKey, action: str, timeout_s: float) -> PacebotError:
    """Map whatever a send raised to the ``bot.errors`` tree.

    No answer within ``timeout_s`` may still mean posted; a refusal is read by
    :func:`refusal`; anything that broke before the request went out posted nothing.
    """
    if isinstance(error, (TimeoutError, NetworkError)):
        msg = f"OneBot did not answer {action} for {chat} within {timeout_s:g} s"
        return SendFailed(msg, maybe_delivered=True)
    if isinstance(error, ActionFailed):
        return refusal(chat, action, error)
    if isinstance(error, ApiNotAvailable):
        msg = f"OneBot disconnected; nothing was sent to {chat}"
        return SendFailed(msg, maybe_delivered=False)
    msg = f"sending to {chat} failed: {type(error).__name__}: {error}"
    return SendFailed(msg, maybe_delivered=False)
