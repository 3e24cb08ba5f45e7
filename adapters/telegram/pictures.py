"""Fetch a Telegram picture by its ``file_id`` when a batch is answered.

The download is the bot's one :class:`~adapters.telegram.files.TelegramFiles`; the
picture reaches the model only as the JPEG :mod:`adapters.pictures` makes, never by its
URL (which holds the bot token).
"""

from __future__ import annotations

from adapters.pictures import MAX_BYTES, to_jpeg
from adapters.telegram.files import TelegramFiles
from bot.errors import PictureUnavailable
from bot.models import Jpeg, Picture


class TelegramPictures:
    """The :class:`bot.ports.PictureSource` of Telegram: ``getFile``, download, re-encode."""

    def __init__(self, files: TelegramFiles) -> None:
        self._files = files

    async def fetch(self, picture: Picture) -> Jpeg:
        """Fetch the file behind ``picture.ref`` and re-encode it; ``PictureUnavailable``."""
        data = await self._files.download(
            picture.ref, max_bytes=MAX_BYTES, what="picture", unavailable=PictureUnavailable
        )
        return await to_jpeg(data)
