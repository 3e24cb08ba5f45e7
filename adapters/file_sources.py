"""Open what fetches the running platforms' files, for what is on.

Pictures for the model (``llm.vision``) and the stickers of collections (``[stickers]``)
each get their own HTTP clients, closed on exit: a sticker download never queues behind
a batch's pictures. With a feature off nothing is built for it, so nothing can be
downloaded; each platform's fetcher is imported only when that platform runs (the
Telegram one loads PTB). Telegram keeps stickers by id and fetches one only to draw it on
the dashboard; QQ downloads them to keep.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection
from typing import TYPE_CHECKING

from bot.config import Config
from bot.ports import PictureSource
from bot.secrets import Secrets
from bot.stickers import StickerSource

if TYPE_CHECKING:
    from adapters.qq.pictures import QQPictures


@contextlib.asynccontextmanager
async def opened_picture_sources(
    config: Config, secrets: Secrets, platforms: Collection[str]
) -> AsyncIterator[dict[str, PictureSource]]:
    """Yield a picture source per running platform (none with vision off); close them."""
    sources: dict[str, PictureSource] = {}
    async with contextlib.AsyncExitStack() as stack:
        if config.llm.vision and "telegram" in platforms and secrets.telegram_token:
            from adapters.telegram.pictures import TelegramPictures

            pictures = TelegramPictures(
                token=secrets.telegram_token, api_base_url=config.telegram.api_base_url
            )
            stack.push_async_callback(pictures.aclose)
            sources["telegram"] = pictures
        if config.llm.vision and "qq" in platforms:
            sources["qq"] = _qq_files(config, stack)
        yield sources


@contextlib.asynccontextmanager
async def opened_sticker_sources(
    config: Config, secrets: Secrets, platforms: Collection[str]
) -> AsyncIterator[dict[str, StickerSource]]:
    """Yield a sticker source per running platform (none with stickers off); close them."""
    sources: dict[str, StickerSource] = {}
    async with contextlib.AsyncExitStack() as stack:
        if config.stickers.enabled and "telegram" in platforms and secrets.telegram_token:
            from adapters.telegram.files import TelegramFiles
            from adapters.telegram.stickers import TelegramStickers

            files = TelegramFiles(
                token=secrets.telegram_token, api_base_url=config.telegram.api_base_url
            )
            stack.push_async_callback(files.aclose)
            sources["telegram"] = TelegramStickers(files)
        if config.stickers.enabled and "qq" in platforms:
            from adapters.qq.stickers import QQStickers

            sources["qq"] = QQStickers(_qq_files(config, stack), config.stickers_dir)
        yield sources


def _qq_files(config: Config, stack: contextlib.AsyncExitStack) -> QQPictures:
    from adapters.qq.pictures import QQPictures

    files = QQPictures(allow_private_hosts=config.qq.allow_private_image_hosts)
    stack.push_async_callback(files.aclose)
    return files
