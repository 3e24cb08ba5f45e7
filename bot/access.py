"""Which chats and people the bot serves at all: ``[access]`` and the chats switched off.

A bot pulled into a random group must not start storing it. A message is refused when its
sender is ``blocked``, its chat matches ``deny``, it is a group the ``allow`` list leaves
out (``groups = "allow"``), or an admin switched the chat off (``/bot off``, the
dashboard). A refused message is neither stored nor answered and costs nothing; the first
one of a chat each chat day is logged (INFO), the rest are not. An admin's commands still
reach a chat that is only switched off, so that ``/bot on`` can switch it on again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import date, datetime
from typing import Protocol

from loguru import logger

from bot.config.profiles import matches
from bot.config.settings import Settings
from bot.models import ChatKey, IncomingMessage


class Refusal(enum.StrEnum):
    """Why a message is refused, in the log's and the dashboard's words."""

    BLOCKED = "its sender is blocked (access.blocked)"
    DENIED = "the chat is denied (access.deny)"
    NOT_ALLOWED = 'the group is not allowed (access.groups = "allow")'
    SWITCHED_OFF = "the chat is switched off (/bot off)"


class Switches(Protocol):
    """The chats switched off, kept across restarts."""

    async def chats_switched_off(self) -> frozenset[ChatKey]:
        """Return every chat switched off now."""
        ...

    async def switch_chat(self, chat: ChatKey, *, off: bool, by: str, now: datetime) -> None:
        """Switch ``chat`` off or on, as ``by``."""
        ...


class Access:
    """Tell which messages the bot may keep; switch chats off and on.

    The chats switched off are read once (:meth:`load`) and kept in a set, bounded by the
    chats an admin switched off; the chats refused today are remembered for one chat day
    (one log line each), then let go.
    """

    def __init__(self, config: Settings, switches: Switches, *, now: Callable[[], datetime]):
        self._config = config
        self._switches = switches
        self._now = now
        self._days = config.chat_days(now)
        self._off: frozenset[ChatKey] = frozenset()
        self._told: dict[ChatKey, date] = {}

    def __len__(self) -> int:
        """Return how many refused chats are remembered: those refused this chat day."""
        return len(self._told)

    async def load(self) -> None:
        """Read the chats switched off (at start-up)."""
        self._off = await self._switches.chats_switched_off()

    def refusal(self, message: IncomingMessage, *, command: bool = False) -> Refusal | None:
        """Say why ``message`` is refused; ``None`` if the bot may keep it. A command
        reaches a chat that is only switched off."""
        refusal = self.chat_refusal(message.chat, sender=message.sender_id)
        if refusal is Refusal.SWITCHED_OFF and command:
            return None
        if refusal is not None:
            self._tell(message.chat, refusal)
        return refusal

    def chat_refusal(self, chat: ChatKey, *, sender: str | None = None) -> Refusal | None:
        """Say why ``chat`` (and ``sender`` in it) is refused; ``None`` if it is served."""
        access = self._config.access
        if sender is not None and f"{chat.platform}:{sender}" in access.blocked:
            return Refusal.BLOCKED
        if any(matches(pattern, chat) for pattern in access.deny):
            return Refusal.DENIED
        allowed = any(matches(pattern, chat) for pattern in access.allow)
        if chat.is_group and access.groups == "allow" and not allowed:
            return Refusal.NOT_ALLOWED
        if self.is_off(chat):
            return Refusal.SWITCHED_OFF
        return None

    def is_off(self, chat: ChatKey) -> bool:
        """Tell whether an admin switched ``chat`` off (or the group of its forum topic)."""
        return chat in self._off or chat.room in self._off

    async def switch(self, chat: ChatKey, *, on: bool, by: str) -> None:
        """Switch ``chat`` on or off as ``by``, kept in the store; log who did it."""
        await self._switches.switch_chat(chat, off=not on, by=by, now=self._now())
        self._off = self._off - {chat} if on else self._off | {chat}
        self._told.pop(chat, None)
        logger.bind(chat=str(chat)).info("switched {} by {}", "on" if on else "off", by)

    def _tell(self, chat: ChatKey, refusal: Refusal) -> None:
        """Log the first refused message of ``chat`` each chat day."""
        today = self._days.today()
        if self._told.get(chat) == today:
            return
        self._told = {c: day for c, day in self._told.items() if day == today}
        self._told[chat] = today
        logger.bind(chat=str(chat)).info(
            "messages here are neither stored nor answered: {}", refusal
        )
