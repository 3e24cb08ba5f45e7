"""Which chats the bot serves, as an operator reads and switches it, for every face."""

from __future__ import annotations

from dataclasses import dataclass

from bot.access import Access, Refusal
from bot.models import ChatKey


@dataclass(frozen=True, slots=True)
class ChatAccess:
    """Whether a chat is served, and if not, why."""

    chat: ChatKey
    refusal: Refusal | None  # None: served

    @property
    def served(self) -> bool:
        return self.refusal is None

    @property
    def switched_off(self) -> bool:
        """Whether an admin switched it off (the one refusal a switch undoes)."""
        return self.refusal is Refusal.SWITCHED_OFF


class AccessOps:
    """Read whether a chat is served; switch it off and on (``/bot``, the dashboard)."""

    def __init__(self, access: Access) -> None:
        self._access = access

    async def load(self) -> None:
        """Read the chats switched off (at start-up)."""
        await self._access.load()

    def of(self, chat: ChatKey) -> ChatAccess:
        """Return whether ``chat`` is served, and if not, why."""
        return ChatAccess(chat, self._access.chat_refusal(chat))

    async def switch(self, chat: ChatKey, *, on: bool, by: str) -> ChatAccess:
        """Switch ``chat`` on or off as ``by``; return how it stands now."""
        await self._access.switch(chat, on=on, by=by)
        return self.of(chat)
