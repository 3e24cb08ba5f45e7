"""The pictures of a batch in its one LLM call (README, "Pictures").

With ``llm.vision`` on, only the newest ``llm.max_images`` pictures are fetched, a few at
a time, when the batch is answered; a picture that cannot be fetched or decoded keeps its
placeholder and the batch is answered all the same. A provider that refuses pictures is
said once per process (a setting to change, not an event); what the model wrote about the
pictures it saw is kept for later prompts, and a sticker's note becomes its caption.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol

from loguru import logger

from bot.config.settings import Settings
from bot.errors import ImagesRefused, PictureUnavailable, StorageError
from bot.models import Batch, ChatKey, Completion, ImageInput, Jpeg, Picture, StoredMessage
from bot.ports import PictureSource
from bot.replies.parse import parse_image_notes
from bot.stickers import Stickers

if TYPE_CHECKING:
    from loguru import Logger

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


class ImageNotes(Protocol):
    """Where what the model saw in pictures is kept."""

    async def add_image_notes(self, chat: ChatKey, notes: Mapping[str, str]) -> int:
        """Keep what the model saw in these messages' pictures; return how many were kept.

        Only chatters' messages that carry pictures take a note; other ids are ignored.
        """
        ...


class Eyes:
    """What the answer's call sees of a batch's pictures, and what it said of them."""

    def __init__(
        self,
        config: Settings,
        store: ImageNotes,
        pictures: Mapping[str, PictureSource],
        stickers: Stickers | None,
    ) -> None:
        self._config = config
        self._store = store
        self._pictures = pictures
        self._stickers = stickers
        self._warned_refused = False  # one per run: once per process

    async def look(self, batch: Batch) -> tuple[ImageInput, ...]:
        """With ``llm.vision``, fetch the batch's newest pictures for the call."""
        if not self._config.llm.vision:
            return ()
        return await look_at(batch, self._pictures, max_images=self._config.llm.max_images)

    def refused(self, exc: ImagesRefused) -> None:
        """Say once per run that the model refuses pictures; every batch re-asks."""
        if self._warned_refused:
            logger.info("pictures refused again; re-asking without them")
            return
        self._warned_refused = True
        logger.warning(
            "the LLM refused a request with pictures ({}); re-asking without them. If this "
            "model cannot see images, set llm.vision = false",
            exc,
        )

    async def keep_notes(
        self, batch: Batch, completion: Completion, images: tuple[ImageInput, ...], log: Logger
    ) -> None:
        """Store what the model wrote about the pictures it saw, for later prompts."""
        shown = frozenset(image.message_id for image in images)
        seen = parse_image_notes(completion.text, message_ids=shown)
        if not seen:
            return
        try:
            kept = await self._store.add_image_notes(batch.chat, seen)
            if self._stickers is not None:  # a sticker's note becomes its caption
                await self._stickers.caption_from_notes(batch.chat, seen)
        except StorageError as exc:  # the answer matters more than the note
            log.warning("image notes not kept: {}", exc)
            return
        log.debug("{} image note(s) kept", kept)
