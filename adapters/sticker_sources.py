"""Open the sticker sources of the running platforms when ``[stickers] enabled``.

With stickers off nothing is built, so nothing is fetched. Telegram keeps stickers by id
and fetches one only to draw it on the dashboard; QQ downloads them. Each has its own HTTP
client, closed on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection

from bot.config import Config
from bot.secrets import Secrets
from bot.stickers import StickerSource


@contextlib.asynccontextmanager
async def opened_sticker_sources(
    config: Config, secrets: Secrets, platforms: Collection[str]
) -> AsyncIterator[dict[str, StickerSource]]:
    """Yield a sticker source per running platform (none with stickers off); close them."""
    sources: dict[str, StickerSource] = {}
    async with contextlib.AsyncExitStack() as stack:
        if config.stickers.enabled and "telegram" in platforms and secrets.telegram_token:
            from adapters.telegram.pictures import TelegramPictures
            from adapters.telegram.stickers import TelegramStickers

            files = TelegramPictures(
                token=secrets.telegram_token, api_base_url=config.telegram.api_base_url
            )
            stack.push_async_callback(files.aclose)
            sources["telegram"] = TelegramStickers(files)
        if config.stickers.enabled and "qq" in platforms:
            from adapters.qq.pictures import QQPictures
            from adapters.qq.stickers import QQStickers

            pictures = QQPictures(allow_private_hosts=config.qq.allow_private_image_hosts)
            stack.push_async_callback(pictures.aclose)
            sources["qq"] = QQStickers(pictures, config.stickers_dir)
        yield sources
