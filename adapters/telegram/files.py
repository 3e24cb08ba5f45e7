"""Download a file a Telegram message carries (a picture, a sticker, a voice note) by its
``file_id``.

``getFile`` and the download go to the configured Bot API server (a self-hosted one
included), through a PTB ``Bot`` of their own so that downloads never queue behind
polling or sends. One :class:`TelegramFiles` serves a running bot's pictures, sticker
thumbnails and voice notes alike (``adapters/media.py`` opens it). The file URL holds the
bot token: it is used here and nowhere else, and what is downloaded leaves this process
only as the bytes the caller makes of it.
"""

from __future__ import annotations

from typing import Final

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from adapters.telegram.errors import describe
from adapters.telegram.wire import quiet_http_loggers
from bot.errors import MediaUnavailable

OFFICIAL_API: Final = "https://api.telegram.org/bot"
POOL_CONNECTIONS: Final = 8
"""Connections to the Bot API server at once: twice the pictures a batch fetches together
(4, ``bot/vision.py``)."""


def file_base_url(api_base_url: str) -> str:
    """Return where a Bot API server serves files: ``…/bot`` becomes ``…/file/bot``.

    ``""`` (Telegram's own server) gives ``https://api.telegram.org/file/bot``.
    """
    base = (api_base_url or OFFICIAL_API).rstrip("/")
    root = base.removesuffix("/bot")
    return f"{root}/file/bot"


class TelegramFiles:
    """``getFile``, then the download, with a size cap and errors that hold no token.

    One connection pool of ``POOL_CONNECTIONS`` (8) serves every download of the bot: a
    batch's pictures take at most half of it, so a voice note being heard or a sticker
    drawn for the dashboard does not queue behind them.
    """

    def __init__(self, *, token: str, api_base_url: str = "", timeout_s: float = 10.0) -> None:
        quiet_http_loggers(token)  # the file URL holds the token
        self._request = HTTPXRequest(
            connection_pool_size=POOL_CONNECTIONS,
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            write_timeout=timeout_s,
            pool_timeout=timeout_s,
        )
        # Never initialised (that would call getMe): getFile and downloads do not need it.
        # getUpdates is never called here: its request is the same pool, not a second one.
        self._bot = Bot(
            token,
            base_url=api_base_url or OFFICIAL_API,
            base_file_url=file_base_url(api_base_url),
            request=self._request,
            get_updates_request=self._request,
        )

    async def download(
        self, file_id: str, *, max_bytes: int, what: str, unavailable: type[MediaUnavailable]
    ) -> bytes:
        """Download the file behind ``file_id`` (at most ``max_bytes``); raise
        ``unavailable`` naming ``what`` when it cannot be had."""
        try:
            file = await self._bot.get_file(file_id)
        except TelegramError as error:
            msg = f"Telegram {what} not fetched: {describe(error)}"
            raise unavailable(msg) from None
        if file.file_size is not None and file.file_size > max_bytes:
            msg = f"the {what} is {file.file_size} bytes, more than the {max_bytes} allowed"
            raise unavailable(msg)
        try:
            data = await file.download_as_bytearray()
        except InvalidToken as error:
            # PTB names every 401 and 404 so; getFile has just accepted the token.
            msg = f"Telegram {what} not downloaded: the file server answered {error.message}"
            raise unavailable(msg) from None
        except TelegramError as error:
            msg = f"Telegram {what} not downloaded: {describe(error)}"
            raise unavailable(msg) from None
        if len(data) > max_bytes:  # a server that announced less than it sent
            msg = f"the {what} is {len(data)} bytes, more than the {max_bytes} allowed"
            raise unavailable(msg)
        return bytes(data)

    async def aclose(self) -> None:
        """Close the HTTP connections (``Bot.shutdown`` skips a bot never initialised)."""
        await self._request.shutdown()
