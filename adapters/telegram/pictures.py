"""Fetch a Telegram picture by its ``file_id`` when a batch is answered.

``getFile`` and the download go to the configured Bot API server (a self-hosted one
included), through a PTB ``Bot`` of their own so that picture downloads never queue
behind polling or sends. The file URL holds the bot token: it is used here and nowhere
else, and the picture reaches the model only as the JPEG :mod:`adapters.pictures` makes.
"""

from __future__ import annotations

from typing import Final

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from adapters.pictures import MAX_BYTES, to_jpeg
from adapters.telegram.errors import describe
from adapters.telegram.wire import quiet_http_loggers
from bot.errors import PictureUnavailable
from bot.models import Jpeg, Picture

OFFICIAL_API: Final = "https://api.telegram.org/bot"


def file_base_url(api_base_url: str) -> str:
    """Return where a Bot API server serves files: ``…/bot`` becomes ``…/file/bot``.

    ``""`` (Telegram's own server) gives ``https://api.telegram.org/file/bot``.
    """
    base = (api_base_url or OFFICIAL_API).rstrip("/")
    root = base.removesuffix("/bot")
    return f"{root}/file/bot"


class TelegramPictures:
    """The :class:`bot.ports.PictureSource` of Telegram: ``getFile``, download, re-encode."""

    def __init__(self, *, token: str, api_base_url: str = "", timeout_s: float = 10.0) -> None:
        quiet_http_loggers(token)  # the file URL holds the token
        self._request = HTTPXRequest(
            connection_pool_size=4,
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            write_timeout=timeout_s,
            pool_timeout=timeout_s,
        )
        # Never initialised (that would call getMe): getFile and downloads do not need it.
        self._bot = Bot(
            token,
            base_url=api_base_url or OFFICIAL_API,
            base_file_url=file_base_url(api_base_url),
            request=self._request,
        )

    async def fetch(self, picture: Picture) -> Jpeg:
        """Fetch the file behind ``picture.ref`` and re-encode it; ``PictureUnavailable``."""
        return await to_jpeg(await self.download(picture.ref))

    async def download(self, file_id: str) -> bytes:
        """Return the file behind ``file_id`` (at most ``MAX_BYTES``); ``PictureUnavailable``."""
        try:
            file = await self._bot.get_file(file_id)
        except TelegramError as error:
            msg = f"Telegram picture not fetched: {describe(error)}"
            raise PictureUnavailable(msg) from None
        if file.file_size is not None and file.file_size > MAX_BYTES:
            msg = f"the picture is {file.file_size} bytes, more than the {MAX_BYTES} allowed"
            raise PictureUnavailable(msg)
        try:
            data = await file.download_as_bytearray()
        except InvalidToken as error:
            # PTB names every 401 and 404 so; getFile has just accepted the token.
            msg = f"Telegram picture not downloaded: the file server answered {error.message}"
            raise PictureUnavailable(msg) from None
        except TelegramError as error:
            msg = f"Telegram picture not downloaded: {describe(error)}"
            raise PictureUnavailable(msg) from None
        return bytes(data)

    async def aclose(self) -> None:
        """Close the HTTP connections (``Bot.shutdown`` skips a bot never initialised)."""
        await self._request.shutdown()
