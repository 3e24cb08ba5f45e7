"""Fetch a QQ picture from its image segment's URL when a batch is answered, safely.

The download is the bot's one :class:`~adapters.qq.fetch.SafeFetch`, under its rules (no
private addresses unless allowed, redirects checked, a 10 MB cap, 10 s);
:mod:`adapters.pictures` re-encodes.
"""

from __future__ import annotations

from adapters.pictures import MAX_BYTES, to_jpeg
from adapters.qq.fetch import SafeFetch
from bot.errors import PictureUnavailable
from bot.models import Jpeg, Picture


class QQPictures:
    """The :class:`bot.ports.PictureSource` of QQ: download by URL, checked, then re-encode."""

    def __init__(self, fetch: SafeFetch) -> None:
        self._fetch = fetch

    async def fetch(self, picture: Picture) -> Jpeg:
        """Download ``picture.ref`` and re-encode it; raise ``PictureUnavailable``."""
        return await to_jpeg(await self.download(picture.ref))

    async def download(self, url: str) -> bytes:
        """Download a picture's ``url`` (10 MB at most); raise ``PictureUnavailable``."""
        return await self._fetch.fetch_bytes(
            url, max_bytes=MAX_BYTES, what="QQ picture", unavailable=PictureUnavailable
        )
