"""Which chats the bot serves, as an operator reads and switches it, for every face."""

from __future__ import annotations

from dataclasses import dataclass

from bot.access import Access, Refusal
from bot.models import ChatKey


@dataclass(frozen=True, slots=True)
class ChatAccess:
    """Whether a chat is served, and if not, why; whether an admin switched it off."""

    chat: ChatKey
    refusal: Refusal | None  # None: served; the rules of [access] come before the switch
    switched_off: bool = False  # by /bot off or the dashboard, whatever [access] says

    @property
    def served(self) -> bool:
        return self.refusal is None

    @property
    def refused_by_config(self) -> bool:
        """Whether ``[access]`` refuses it: no switch can serve it then."""
        return self.refusal is not None and self.refusal is not Refusal.SWITCHED_OFF


class AccessOps:
    """Read whether a chat is served; switch it off and on (``/bot``, the dashboard)."""

    def __init__(self, access: Access) -> None:
        self._access = access

    async def load(self) -> None:
        """Read the chats switched off (at start-up)."""
        await self._access.load()

    def of(self, chat: ChatKey) -> ChatAccess:
        """Return whether ``chat`` is served, and if not, why."""
        refusal = self._access.chat_refusal(chat)
        return ChatAccess(chat, refusal, switched_off=self._access.is_off(chat))

    async def switch(self, chat: ChatKey, *, on: bool, by: str) -> ChatAccess:
        """Switch ``chat`` on or off as ``by``; return how it stands now."""
        await self._access.switch(chat, on=on, by=by)
        return self.of(chat)
