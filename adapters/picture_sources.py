"""Open the picture sources of the running platforms when ``llm.vision`` is on.

With vision off nothing is built, so nothing can be downloaded. Each platform's fetcher
is imported only when that platform runs (the Telegram one loads PTB).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection

from bot.config import Config
from bot.ports import PictureSource
from bot.secrets import Secrets


@contextlib.asynccontextmanager
async def opened_picture_sources(
    config: Config, secrets: Secrets, platforms: Collection[str]
) -> AsyncIterator[dict[str, PictureSource]]:
    """Yield a picture source per running platform (none with vision off); close them."""
    sources: dict[str, PictureSource] = {}
    async with contextlib.AsyncExitStack() as stack:
        if config.llm.vision and "telegram" in platforms and secrets.telegram_token:
            from adapters.telegram.pictures import TelegramPictures

            telegram = TelegramPictures(
                token=secrets.telegram_token, api_base_url=config.telegram.api_base_url
            )
            stack.push_async_callback(telegram.aclose)
            sources["telegram"] = telegram
        if config.llm.vision and "qq" in platforms:
            from adapters.qq.pictures import QQPictures

            qq = QQPictures(allow_private_hosts=config.qq.allow_private_image_hosts)
            stack.push_async_callback(qq.aclose)
            sources["qq"] = qq
        yield sources
