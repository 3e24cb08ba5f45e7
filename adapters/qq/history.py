"""Fetch a QQ chat's newest messages back through the OneBot history actions.

OneBot v11 has no history; NapCat, Lagrange and go-cqhttp add ``get_group_msg_history``
(``group_id``) and ``get_friend_msg_history`` (``user_id``), which answer
``{"messages": [...]}``, each item a full message event. pacebot asks with NapCat's field
names and without ``message_seq``: NapCat reads that as one of its own message ids, held
in memory only, and without it answers the newest ``count`` messages. It is also asked not
to fetch media URLs or expand forwarded messages (``disable_get_url``,
``parse_mult_msg``), which it otherwise does for every item.

Each item is read as a live event is (:func:`adapters.qq.wire.read_event`, then
:func:`adapters.qq.normalise.normalise`), oldest first. The bot's own messages are left
out: NapCat marks them ``post_type = "message_sent"``, Lagrange only by the sender's id.
An empty history is an error in NapCat ("消息…不存在"): like any refusal other than "no
such action", it reads as nothing to fetch.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from loguru import logger
from nonebot.adapters.onebot.v11 import ActionFailed, Bot, MessageEvent

from adapters.qq import errors, wire
from adapters.qq.normalise import normalise
from bot.addressing import BotNames
from bot.errors import HistoryUnavailable, PlatformError
from bot.models import ChatKey, ChatKind, IncomingMessage

_ACTIONS: Final = {
    ChatKind.GROUP: ("get_group_msg_history", "group_id"),
    ChatKind.PRIVATE: ("get_friend_msg_history", "user_id"),
}
_MILLISECONDS: Final = 10**11  # a ``time`` above this is in ms (NapCat's fallback), not s


def request(chat: ChatKey, *, count: int) -> tuple[str, dict[str, Any]]:
    """Return the action and parameters that ask for ``chat``'s newest ``count`` messages."""
    action, target = _ACTIONS[chat.kind]
    params = {target: int(chat.id), "count": count}
    return action, {**params, "disable_get_url": True, "parse_mult_msg": False}


async def latest_messages(
    bot: Bot, chat: ChatKey, *, count: int, names: BotNames, timeout_s: float
) -> list[IncomingMessage]:
    """Return ``chat``'s newest ``count`` messages, oldest first, the bot's own left out.

    Raise ``HistoryUnavailable`` if the implementation has no such action, and
    ``PlatformError`` if no answer came within ``timeout_s`` or the connection is gone.
    """
    action, params = request(chat, count=count)
    try:
        async with asyncio.timeout(timeout_s):
            result = await bot.call_api(action, **params)
    except ActionFailed as error:
        if errors.is_unsupported(error):
            msg = f"OneBot has no {action} ({errors.describe(error)})"
            raise HistoryUnavailable(msg) from None
        logger.bind(chat=str(chat)).debug("no history: {}", errors.describe(error))
        return []
    except Exception as error:
        msg = f"{action} for {chat} failed: {type(error).__name__}: {error}"
        raise PlatformError(msg) from None
    return messages_of(result, chat=chat, self_id=bot.self_id, names=names)


def messages_of(
    result: object, *, chat: ChatKey, self_id: str, names: BotNames
) -> list[IncomingMessage]:
    """Read a history answer as ``chat``'s messages, oldest first; skip the bot's own and
    anything that cannot be read."""
    items = result.get("messages") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return []
    log = logger.bind(chat=str(chat))
    messages = []
    for item in sorted((_as_event(i, self_id) for i in items if isinstance(i, dict)), key=_order):
        if item["post_type"] == "message_sent" or str(item.get("user_id")) == self_id:
            continue
        event = wire.read_event(item)
        if not isinstance(event, MessageEvent):
            continue
        try:
            message = normalise(event, names=names)
        except Exception:
            log.exception("QQ: reading message {} from history failed", event.message_id)
            continue
        if message is not None and message.chat == chat:
            messages.append(message)
    return messages


def _as_event(item: dict[str, Any], self_id: str) -> dict[str, Any]:
    """Fill in what a live event would carry, and give ``time`` in seconds."""
    event = {"self_id": self_id, "post_type": "message", **item}
    stamp = event.get("time")
    if isinstance(stamp, int | float) and stamp > _MILLISECONDS:
        event["time"] = int(stamp // 1000)
    return event


def _order(event: dict[str, Any]) -> tuple[float, int]:
    """Sort by time, then by QQ's sequence number within the second."""
    stamp, seq = event.get("time"), str(event.get("real_seq", ""))
    return (
        float(stamp) if isinstance(stamp, int | float) else 0.0,
        int(seq) if seq.isdigit() else 0,
    )
