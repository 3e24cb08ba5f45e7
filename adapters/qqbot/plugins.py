"""The official QQ bot as a road for nonebot plugins (SPEC §31): its events, its sends.

With plugins hosted (:class:`~adapters.plugins.host.PluginHost`), each event the gateway
dispatched is read by :func:`as_event` into ``nonebot-adapter-qq``'s event class, so a
plugin's matchers see it as in a plain nonebot bot on the QQ adapter. An event the
adapter's models cannot read (an author without a field they require) reaches pacebot
alone.

:class:`OfficialRoad` reads a plugin's sends (``bot.send``, ``send_to_group``,
``send_to_c2c``: each ends in ``post_group_messages`` or ``post_c2c_messages``):

- a passive reply (``msg_id``) gets its ``msg_seq`` from the store, as pacebot's own
  replies do, so that a plugin and pacebot answering one message never give the
  platform the same number (it refuses the second);
- a message that answers nothing is counted against the chat's ``proactive_per_month``,
  as pacebot's own are; one beyond the quota is logged, and the platform has the last word;
- what went through is kept as the bot's message: its ``content``, by the id the platform
  gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from loguru import logger
from nonebot.adapters import Bot as BaseBot
from nonebot.adapters.qq.event import EVENT_CLASSES, Event
from nonebot.compat import type_validate_python
from pydantic import ValidationError

from adapters.plugins.host import Said
from adapters.qqbot.ledger import Ledger
from adapters.qqbot.normalise import PLATFORM_NAME
from adapters.qqbot.outbound import PLATFORM_ZONE
from bot.config.qq_official import QQOfficialConfig
from bot.errors import StorageError
from bot.models import ChatKey, ChatKind
from bot.ports import PacingLimits

SEND_CALLS: Final = {"post_group_messages": "group_openid", "post_c2c_messages": "openid"}
"""The API calls that post a message, and the parameter naming their chat."""


def as_event(event_type: str, event_id: str | None, data: Mapping[str, Any]) -> Event | None:
    """Read a dispatched event as the adapter's model does; ``None`` if it has no class
    (``RESUMED``) or does not fit it."""
    kind = EVENT_CLASSES.get(event_type)
    if kind is None:
        return None
    try:
        return type_validate_python(kind, {"event_id": event_id, **data})
    except ValidationError as error:
        logger.debug(
            "QQ bot: a {} event is not for plugins: {} field(s) do not fit nonebot's model",
            event_type,
            error.error_count(),
        )
        return None


@dataclass(frozen=True, slots=True)
class OfficialRoad:
    """The official QQ bot's road, as :class:`~adapters.plugins.host.PluginHost` reads it."""

    limits: PacingLimits
    ledger: Ledger
    config: Callable[[], QQOfficialConfig]
    now: Callable[[], datetime]
    platform: str = PLATFORM_NAME

    def chat_of(self, api: str, data: Mapping[str, Any]) -> ChatKey | None:
        """Return the chat a send posts to; ``None`` for any other call."""
        target = data.get(SEND_CALLS.get(api, ""))
        if not isinstance(target, str) or not target:
            return None
        kind = ChatKind.GROUP if api == "post_group_messages" else ChatKind.PRIVATE
        return ChatKey(self.platform, kind, target)

    async def prepare(self, chat: ChatKey, data: dict[str, Any]) -> None:
        """Number a plugin's passive reply in the store; count one that answers nothing."""
        answers = data.get("msg_id")
        try:
            if isinstance(answers, str) and answers:
                data["msg_seq"] = await self.ledger.next_reply_seq(
                    self.platform, answers, now=self.now()
                )
            elif not data.get("event_id"):
                await self._count_proactive(chat)
        except StorageError as error:
            logger.bind(chat=str(chat)).warning(
                "a plugin's message to {} goes as the plugin numbered it: {}", chat, error
            )

    async def _count_proactive(self, chat: ChatKey) -> None:
        per_month = self.config().proactive_per_month
        month = self.now().astimezone(PLATFORM_ZONE).strftime("%Y-%m")
        if await self.ledger.take_proactive(chat, month, per_month=per_month) is None:
            logger.bind(chat=str(chat)).warning(
                "a plugin sends {} a message that answers nothing beyond the {} of {} "
                "(qq_official.proactive_per_month); the platform may refuse it",
                chat,
                per_month,
                month,
            )

    def said(self, bot: BaseBot, api: str, data: Mapping[str, Any], result: Any) -> Said | None:
        """Return what a send posted: its words, by the id the platform gave it."""
        chat = self.chat_of(api, data)
        message_id = getattr(result, "id", None)
        content = data.get("content")
        if chat is None or not message_id or not isinstance(content, str) or not content.strip():
            return None
        return Said(chat, str(message_id), content.strip())
