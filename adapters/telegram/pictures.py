"""Fetch a Telegram picture by its ``file_id`` when a batch is answered.

The download is :mod:`adapters.telegram.files`'s; the picture reaches the model only as
the JPEG :mod:`adapters.pictures` makes, never by its URL (which holds the bot token).
"""

from __future__ import annotations

from adapters.pictures import MAX_BYTES, to_jpeg
from adapters.telegram.files import TelegramFiles
from bot.errors import PictureUnavailable
from bot.models import Jpeg, Picture


class TelegramPictures(TelegramFiles):
    """The :class:`bot.ports.PictureSource` of Telegram: ``getFile``, download, re-encode."""

    async def fetch(self, picture: Picture) -> Jpeg:
        """Fetch the file behind ``picture.ref`` and re-encode it; ``PictureUnavailable``."""
        data = await self.download(
            picture.ref, max_bytes=MAX_BYTES, what="picture", unavailable=PictureUnavailable
        )
        return await to_jpeg(data)
