"""Gather the pictures of a batch for its one LLM call (README, "Pictures").

Only the newest ``llm.max_images`` pictures are fetched, a few at a time, when the batch
is answered; a picture that cannot be fetched or decoded keeps its placeholder and the
batch is answered all the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final

from loguru import logger

from bot.errors import PictureUnavailable
from bot.models import Batch, ImageInput, Jpeg, Picture, StoredMessage
from bot.ports import PictureSource

FETCH_CONCURRENCY: Final = 4
"""Pictures fetched at once for one batch."""


def newest_pictures(batch: Batch, limit: int) -> list[tuple[StoredMessage, Picture]]:
    """Return up to ``limit`` of the batch's pictures, newest first."""
    found: list[tuple[StoredMessage, Picture]] = []
    for message in reversed(batch.messages):
        for picture in reversed(message.pictures):
            if len(found) == limit:
                return found
            found.append((message, picture))
    return found


async def look_at(
    batch: Batch, sources: Mapping[str, PictureSource], *, max_images: int
) -> tuple[ImageInput, ...]:
    """Fetch the newest ``max_images`` pictures of ``batch``; return them oldest first."""
    source = sources.get(batch.chat.platform)
    wanted = newest_pictures(batch, max_images) if source is not None else []
    if source is None or not wanted:
        return ()
    log = logger.bind(chat=str(batch.chat), batch=batch.id)
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def fetch(message: StoredMessage, picture: Picture) -> Jpeg | None:
        async with gate:
            try:
                return await source.fetch(picture)
            except PictureUnavailable as exc:
                log.info("picture of message {} left as a placeholder: {}", message.message_id, exc)
            except Exception as exc:  # a bug in one fetch must not cost the batch its answer
                log.opt(exception=exc).error("fetching a picture of {} failed", message.message_id)
            return None

    seen = await asyncio.gather(*(fetch(message, picture) for message, picture in wanted))
    images = [
        ImageInput(message.message_id, jpeg)
        for (message, _), jpeg in zip(wanted, seen, strict=True)
        if jpeg is not None
    ]
    images.reverse()
    return tuple(images)
