"""What pictures cost a batch: download + re-encode time, and the bytes sent to the model.

Telegram: PTB's ``getFile`` and the download from the fake Bot API of a 1280 × 960 photo
(the size pacebot picks: the smallest covering 1024 px). QQ: the download of a
4000 × 3000 phone original from a local image host, through the SSRF checks. Each is
re-encoded to a ≤1024 px JPEG in a worker thread. A batch is ``llm.max_images`` = 4
pictures fetched together (``bot.vision.look_at``), as the answer path does.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from adapters.qq.fetch import SafeFetch
from adapters.qq.pictures import QQPictures
from adapters.telegram.files import TelegramFiles
from adapters.telegram.pictures import TelegramPictures
from bench.report import Figure, spread_figures
from bench.stats import Spread
from bot.models import Batch, ChatKey, ChatKind, Picture, StoredMessage
from bot.ports import PictureSource
from bot.vision import look_at
from fakes.bot_api import FakeBotAPI
from fakes.image_host import ImageHost
from fakes.images import photo_like

MAX_IMAGES = 4


def _batch(platform: str, refs: list[str]) -> Batch:
    chat = ChatKey(platform, ChatKind.PRIVATE, "1")
    messages = tuple(
        StoredMessage(
            chat=chat,
            message_id=str(n),
            sender_id="1",
            sender_name="A",
            text="[photo]",
            sent_at=datetime.now(UTC),
            from_bot=False,
            pictures=(Picture(ref, "[photo]"),),
        )
        for n, ref in enumerate(refs)
    )
    return Batch(1, chat, messages)


async def _measure_source(
    name: str, source: PictureSource, refs: list[str], source_bytes: int, *, rounds: int
) -> list[Figure]:
    singles: list[float] = []
    batches: list[float] = []
    sent = 0
    for _ in range(rounds):
        started = time.perf_counter()
        jpeg = await source.fetch(Picture(refs[0], "[photo]"))
        singles.append((time.perf_counter() - started) * 1e3)
        sent = len(jpeg.data_url)
        started = time.perf_counter()
        images = await look_at(_batch(name, refs), {name: source}, max_images=MAX_IMAGES)
        batches.append((time.perf_counter() - started) * 1e3)
        assert len(images) == MAX_IMAGES
    return [
        *spread_figures(f"pictures.{name}.one", Spread.of(singles), "ms"),
        *spread_figures(f"pictures.{name}.batch_of_4", Spread.of(batches), "ms"),
        Figure(f"pictures.{name}.downloaded", source_bytes / 1024, "KiB"),
        Figure(f"pictures.{name}.sent", sent / 1024, "KiB", note="data URL, per picture"),
    ]


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Fetch and re-encode Telegram and QQ pictures, one at a time and four together."""
    rounds = 2 if quick else 15
    figures: list[Figure] = []
    telegram_photo = photo_like(1280, 960)
    async with FakeBotAPI() as api:
        for n in range(MAX_IMAGES):
            api.add_file(f"photo-{n}", telegram_photo)
        files = TelegramFiles(token=api.token, api_base_url=api.base_url)
        try:
            refs = [f"photo-{n}" for n in range(MAX_IMAGES)]
            figures += await _measure_source(
                "telegram", TelegramPictures(files), refs, len(telegram_photo), rounds=rounds
            )
        finally:
            await files.aclose()
    qq_original = photo_like(4000, 3000)
    async with ImageHost() as host:
        urls = [host.serve(f"/{n}.jpg", qq_original) for n in range(MAX_IMAGES)]
        fetch = SafeFetch(allow_private_hosts=True)
        try:
            qq = QQPictures(fetch)
            figures += await _measure_source("qq", qq, urls, len(qq_original), rounds=rounds)
        finally:
            await fetch.aclose()
    return figures
