"""Telegram's stickers as a collection keeps them: by id, never as files.

A ``file_id`` sends a sticker again from any chat of this bot, whatever its kind (static,
animated, video), so nothing is downloaded; ``file_unique_id`` tells it apart.
"""

from __future__ import annotations

from bot.models import StickerSeen
from bot.stickers import CollectedSticker


class TelegramStickers:
    """The :class:`bot.ports.StickerSource` of Telegram."""

    async def collect(self, seen: StickerSeen) -> CollectedSticker | None:
        """Keep the sticker by its ids."""
        return CollectedSticker(key=seen.key or seen.ref, file_ref=seen.ref)

    async def forget(self, file_ref: str) -> None:
        """Nothing was kept but the id."""
