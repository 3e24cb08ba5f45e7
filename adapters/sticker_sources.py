"""Open the sticker sources of the running platforms when ``[stickers] enabled``.

With stickers off nothing is built, so nothing is fetched. Telegram keeps stickers by id
(nothing to open); QQ downloads them, with its own HTTP client, closed on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection

from bot.config import Config
from bot.stickers import StickerSource


@contextlib.asynccontextmanager
async def opened_sticker_sources(
    config: Config, platforms: Collection[str]
) -> AsyncIterator[dict[str, StickerSource]]:
    """Yield a sticker source per running platform (none with stickers off); close them."""
    sources: dict[str, StickerSource] = {}
    async with contextlib.AsyncExitStack() as stack:
        if config.stickers.enabled and "telegram" in platforms:
            from adapters.telegram.stickers import TelegramStickers

            sources["telegram"] = TelegramStickers()
        if config.stickers.enabled and "qq" in platforms:
            from adapters.qq.pictures import QQPictures
            from adapters.qq.stickers import QQStickers

            pictures = QQPictures(allow_private_hosts=config.qq.allow_private_image_hosts)
            stack.push_async_callback(pictures.aclose)
            sources["qq"] = QQStickers(pictures, config.stickers_dir)
        yield sources
