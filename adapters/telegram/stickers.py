"""Telegram's stickers as a collection keeps them: by id, never as files.

A ``file_id`` sends a sticker again from any chat of this bot, whatever its kind (static,
animated, video), so nothing is downloaded to keep one. Only the dashboard's thumbnails
fetch a file (``getFile`` on the configured Bot API server, through the bot's one
:class:`~adapters.telegram.files.TelegramFiles`): a static sticker is drawn from itself,
an animated (Lottie) or video one from the thumbnail Telegram gives it, and one without a
thumbnail has its caption shown instead.
"""

from __future__ import annotations

import asyncio

from loguru import logger

from adapters.pictures import MAX_BYTES, sticker_thumbnail
from adapters.telegram.files import TelegramFiles
from bot.errors import PictureUnavailable
from bot.models import StickerSeen
from bot.stickers import CollectedSticker


class TelegramStickers:
    """The :class:`bot.stickers.StickerSource` of Telegram."""

    def __init__(self, files: TelegramFiles) -> None:
        self._files = files

    async def collect(self, seen: StickerSeen) -> CollectedSticker | None:
        """Keep the sticker by its ids."""
        return CollectedSticker(
            key=seen.key or seen.ref, file_ref=seen.ref, thumb_ref=seen.thumb_ref
        )

    async def forget(self, file_ref: str) -> None:
        """Nothing was kept but the id."""

    async def thumbnail(self, file_ref: str) -> bytes | None:
        """Fetch the sticker and draw it small; ``None`` if it is gone or not a picture."""
        try:
            data = await self._files.download(
                file_ref, max_bytes=MAX_BYTES, what="sticker", unavailable=PictureUnavailable
            )
            return await asyncio.to_thread(sticker_thumbnail, data)
        except PictureUnavailable as exc:
            logger.info("Telegram sticker not drawn: {}", exc)
            return None
