"""How a OneBot v11 send reads, for what a nonebot plugin posts: its chat and its words.

A plugin posts with ``bot.send`` (nonebot's ``send_msg``) or ``send_group_msg`` /
``send_private_msg``; the message is a ``Message``, a segment, a segment array or a
string (CQ codes in it unless ``auto_escape``). Its words are read as a chatter's are
(:func:`~adapters.qq.normalise.render`: pictures as ``[image]``, a quote kept apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from nonebot.adapters import Bot as BaseBot
from nonebot.adapters.onebot.v11 import Message, MessageSegment

from adapters.plugins.host import Said
from adapters.qq.normalise import render
from adapters.qq.outbound import as_int
from bot.models import ChatKey, ChatKind
from bot.ports import PacingLimits

SEND_ACTIONS: Final = frozenset({"send_msg", "send_group_msg", "send_private_msg"})


@dataclass(frozen=True, slots=True)
class OneBotRoad:
    """The OneBot v11 road, as :class:`~adapters.plugins.host.PluginHost` reads it."""

    platform: str
    limits: PacingLimits
    bot_name: str

    def chat_of(self, api: str, data: Mapping[str, Any]) -> ChatKey | None:
        """Return the chat a send posts to; ``None`` for any other call."""
        if api not in SEND_ACTIONS:
            return None
        kind = data.get("message_type")
        if kind not in ("group", "private"):
            in_group = api == "send_group_msg" or (api == "send_msg" and "group_id" in data)
            kind = "group" if in_group else "private"
        target = as_int(str(data.get("group_id" if kind == "group" else "user_id")))
        if target is None:
            return None
        return ChatKey(self.platform, ChatKind(kind), str(target))

    async def prepare(self, chat: ChatKey, data: dict[str, Any]) -> None:
        """Leave a send as it is: OneBot has no rules a send must be fitted to."""

    def said(self, bot: BaseBot, api: str, data: Mapping[str, Any], result: Any) -> Said | None:
        """Return what a send posted, by the message id OneBot gave it."""
        chat = self.chat_of(api, data)
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if chat is None or message_id is None:
            return None
        message = _message(data.get("message"), escaped=bool(data.get("auto_escape")))
        rendered = render(message, self_id=bot.self_id, bot_name=self.bot_name)
        if not rendered.text:
            return None
        return Said(chat, str(message_id), rendered.text, rendered.reply_to_id)


def _message(value: object, *, escaped: bool) -> Message:
    """Read a send's ``message`` parameter the way OneBot does."""
    if isinstance(value, str):
        return Message(MessageSegment.text(value)) if escaped else Message(value)
    if isinstance(value, Message | MessageSegment | list):
        return Message(value)
    return Message()
