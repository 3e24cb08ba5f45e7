"""A chat's sticker collection as ``/stickers``, ``/sticker ban`` and the dashboard see it."""

from __future__ import annotations

from bot.models import ChatKey, StickerRecord
from bot.stickers import Stickers

STICKERS_SHOWN_MAX = 200  # one collection holds stickers.max_per_chat live ones, and the banned


class StickerOps:
    """Read and ban the stickers of a chat's collection (nothing while stickers are off)."""

    def __init__(self, stickers: Stickers | None) -> None:
        self._stickers = stickers

    @property
    def enabled(self) -> bool:
        """Whether ``[stickers] enabled`` is on."""
        return self._stickers is not None

    async def collection(self, chat: ChatKey) -> list[StickerRecord]:
        """Return ``chat``'s collection, the most sent first, banned ones last."""
        if self._stickers is None:
            return []
        return await self._stickers.listing(chat, limit=STICKERS_SHOWN_MAX)

    async def ban(self, chat: ChatKey, label: str, *, by: str) -> StickerRecord | None:
        """Ban a live sticker of ``chat``'s collection as ``by``; ``None`` if there is none."""
        if self._stickers is None:
            return None
        return await self._stickers.ban(chat, label, by=by)

    async def thumbnail(self, chat: ChatKey, label: str) -> bytes | None:
        """Return a sticker of ``chat``'s collection as a small PNG; ``None`` if there is no
        such sticker or it cannot be drawn."""
        if self._stickers is None:
            return None
        return await self._stickers.thumbnail(chat, label)
