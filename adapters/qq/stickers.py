"""QQ's stickers as a collection keeps them: their bytes, in files, since QQ URLs expire.

A sticker is fetched from its image segment's URL as a picture is, by the bot's one
:class:`~adapters.qq.fetch.SafeFetch` (size cap, timeout, redirects checked, private
addresses refused unless ``qq.allow_private_image_hosts``), re-encoded small
(``adapters.pictures.sticker_image``) and kept as ``<data_dir>/stickers/<sha256>.<ext>``:
the same picture sent again is the same file, whichever chat or collection holds it. It
is sent again as an image segment with the bytes inlined (``base64://``).
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from loguru import logger

from adapters.pictures import sticker_image, sticker_thumbnail
from adapters.qq.pictures import QQPictures
from bot.errors import PictureUnavailable
from bot.models import StickerSeen
from bot.stickers import CollectedSticker


class QQStickers:
    """The :class:`bot.stickers.StickerSource` of QQ."""

    def __init__(self, pictures: QQPictures, directory: Path) -> None:
        self._pictures = pictures
        self._directory = directory

    async def collect(self, seen: StickerSeen) -> CollectedSticker | None:
        """Download, re-encode and keep the sticker's picture; ``None`` if it cannot be."""
        try:
            data, extension = await asyncio.to_thread(
                sticker_image, await self._pictures.download(seen.ref)
            )
        except PictureUnavailable as exc:
            logger.info("QQ sticker not kept: {}", exc)
            return None
        key = hashlib.sha256(data).hexdigest()
        name = f"{key}.{extension}"
        await asyncio.to_thread(self._write, name, data)
        return CollectedSticker(key=key, file_ref=name)

    def _write(self, name: str, data: bytes) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        path = self._directory / name
        if not path.exists():
            path.write_bytes(data)

    async def forget(self, file_ref: str) -> None:
        """Delete a kept file no collection holds any more."""
        await asyncio.to_thread((self._directory / Path(file_ref).name).unlink, missing_ok=True)

    async def thumbnail(self, file_ref: str) -> bytes | None:
        """Draw the kept file small for the dashboard; ``None`` if it is gone or unreadable."""
        path = self._directory / Path(file_ref).name
        try:
            data = await asyncio.to_thread(path.read_bytes)
            return await asyncio.to_thread(sticker_thumbnail, data)
        except (OSError, PictureUnavailable) as exc:
            logger.info("QQ sticker {} not drawn: {}", file_ref, exc)
            return None
