"""What each kind of item needs around its send: made ready just before, replaced when
the platform refuses it, noted once it went out.

The sender calls these hooks for every item it delivers; a sticker is looked up and a
voice note spoken just before its turn (``bot/stickers.py``, ``bot/voice/speaking.py``),
a refused voice note goes out as its words. Kinds without hooks go as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bot.models import ChatKey
from bot.replies.items import ItemKind, Outgoing


class ItemHooks(Protocol):
    """What an item needs just before it is sent, what goes instead if the platform
    refuses it, and what follows once it was sent."""

    def kind_sent(self, chat: ChatKey, item: Outgoing) -> ItemKind:
        """Return the kind ``item`` will go out as: what the chat is shown while it waits."""
        ...

    async def prepare(self, chat: ChatKey, item: Outgoing) -> Outgoing | None:
        """Return ``item`` ready to send (``None``: it can no longer be sent)."""
        ...

    def instead(self, item: Outgoing) -> Outgoing | None:
        """Return what to send when the platform refuses ``item`` (``None``: nothing)."""
        ...

    async def delivered(self, chat: ChatKey, item: Outgoing) -> None:
        """Note that ``item`` was sent."""
        ...


class AsTheyAre:
    """Items need nothing before or after they are sent, and nothing replaces them."""

    def kind_sent(self, chat: ChatKey, item: Outgoing) -> ItemKind:
        return item.kind

    async def prepare(self, chat: ChatKey, item: Outgoing) -> Outgoing | None:
        return item

    def instead(self, item: Outgoing) -> Outgoing | None:
        return None

    async def delivered(self, chat: ChatKey, item: Outgoing) -> None:
        return None


class HooksByKind:
    """The hooks of each kind of item (stickers', voice's); other kinds go as they are."""

    def __init__(self, hooks: Mapping[ItemKind, ItemHooks]) -> None:
        self._hooks = dict(hooks)
        self._plain = AsTheyAre()

    def _of(self, item: Outgoing) -> ItemHooks:
        return self._hooks.get(item.kind, self._plain)

    def kind_sent(self, chat: ChatKey, item: Outgoing) -> ItemKind:
        return self._of(item).kind_sent(chat, item)

    async def prepare(self, chat: ChatKey, item: Outgoing) -> Outgoing | None:
        return await self._of(item).prepare(chat, item)

    def instead(self, item: Outgoing) -> Outgoing | None:
        return self._of(item).instead(item)

    async def delivered(self, chat: ChatKey, item: Outgoing) -> None:
        await self._of(item).delivered(chat, item)
