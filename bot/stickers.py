"""The stickers people send, kept per chat (or for the whole bot) and sent back by id.

A sticker in a stored message joins its collection (``stickers.scope``: the chat's own,
which a forum's topics share, or one per platform): once, however often it is sent, with
a caption the prompt shows (``[s7] 猫猫震惊``). The caption is its emoji and set name
(Telegram) or the platform's summary (QQ) until the model, shown the sticker in a batch's
one call, writes a note about it (``image_notes``): that note becomes its caption, at no
extra call. Beyond ``stickers.max_per_chat`` the least recently seen or sent leave their
collection; a banned one is never offered, sent or collected again. Photos are never
collected.

The concept's ports live here: ``storage/`` keeps the collections (:class:`StickerStore`),
each platform makes its stickers ready to keep (:class:`StickerSource`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from loguru import logger

from bot.config.settings import Settings
from bot.errors import StorageError
from bot.models import ChatKey, IncomingMessage, StickerRecord, StickerSeen
from bot.prompt import clip
from bot.replies.items import ItemKind, Outgoing, Sticker


@dataclass(frozen=True, slots=True)
class SeenSticker:
    """A sticker seen in a message, as its collection now holds it (``None``: it is
    banned), and the file refs of the stickers that had to make room for it."""

    record: StickerRecord | None
    evicted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CollectedSticker:
    """A sticker made ready for a collection: what tells it apart, what sends it again."""

    key: str
    file_ref: str
    thumb_ref: str = ""  # drawn on the dashboard instead of the sticker, if not ""


class StickerSource(Protocol):
    """Where one platform's stickers are made ready to be kept and sent again."""

    async def collect(self, seen: StickerSeen) -> CollectedSticker | None:
        """Return the sticker as a collection keeps it; ``None`` if it cannot be kept
        (a download or decoding that failed). Never raises for a bad sticker."""
        ...

    async def forget(self, file_ref: str) -> None:
        """Let go of what a sticker that left its collection kept (its file, if any)."""
        ...

    async def thumbnail(self, file_ref: str) -> bytes | None:
        """Return the sticker as a small PNG for the dashboard; ``None`` if it cannot be
        drawn (its file is gone, or it is animated in a way no picture shows). Never
        raises for a bad sticker."""
        ...


class StickerStore(Protocol):
    """The stickers of each collection (a chat key, or ``global:<platform>``)."""

    async def see_sticker(
        self,
        collection: str,
        *,
        platform: str,
        key: str,
        file_ref: str,
        caption: str,
        chat: ChatKey,
        message_id: str,
        keep: int,
        now: datetime,
        thumb_ref: str = "",
    ) -> SeenSticker:
        """Add a sticker to ``collection`` or refresh it; evict beyond ``keep`` live ones."""
        ...

    async def caption_sticker(self, chat: ChatKey, message_id: str, caption: str) -> int:
        """Caption the stickers last seen in that message with the model's words about it."""
        ...

    async def stickers(
        self, collection: str, *, limit: int, banned: bool = False
    ) -> list[StickerRecord]:
        """Return up to ``limit`` live stickers of ``collection``, most sent first."""
        ...

    async def sticker(self, collection: str, sticker_id: int) -> StickerRecord | None:
        """Return one sticker of ``collection`` (banned or not), if it has it."""
        ...

    async def sticker_file_used(self, platform: str, file_ref: str) -> bool:
        """Tell whether any collection still holds a sticker kept as ``file_ref``."""
        ...

    async def sticker_sent(self, sticker_id: int, *, now: datetime) -> None:
        """Count one more send of a sticker."""
        ...

    async def ban_sticker(
        self, collection: str, sticker_id: int, *, by: str, now: datetime
    ) -> StickerRecord | None:
        """Ban a live sticker of ``collection``; ``None`` if it has no such live sticker."""
        ...


CAPTION_CHARS_MAX = 40  # of a caption the prompt shows
_ID_DIGITS_MAX = 18  # an SQLite integer id


def sticker_number(label: str) -> int | None:
    """Return the row id of a sticker label (``s7`` → 7, ``7`` too); ``None`` if it is not one."""
    digits = label.strip().removeprefix("s").removeprefix("S")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= _ID_DIGITS_MAX):
        return None
    return int(digits)


def default_caption(emoji: str, set_name: str, summary: str) -> str:
    """Return what a sticker is called before the model has seen it."""
    words = " ".join(part for part in (emoji.strip(), set_name.strip()) if part)
    return clip(words or summary.strip() or "sticker", CAPTION_CHARS_MAX)


class Stickers:
    """Collect stickers from stored messages, offer them to the prompt, send them back."""

    def __init__(
        self,
        config: Settings,
        store: StickerStore,
        sources: Mapping[str, StickerSource],
        *,
        now: Callable[[], datetime],
    ) -> None:
        self._config = config
        self._store = store
        self._sources = sources
        self._now = now
        self._in_order = asyncio.Lock()  # a lock's waiters go in the order they came

    def collection(self, chat: ChatKey) -> str:
        """Return the collection ``chat``'s stickers go to and come from."""
        return (
            str(chat.room) if self._config.stickers.scope == "chat" else f"global:{chat.platform}"
        )

    async def collect(self, messages: Sequence[IncomingMessage]) -> None:
        """Keep the stickers of stored messages; a sticker that fails is only logged.

        One page of messages at a time, in the order they came: the last seen must be the
        newest, or a page that finished late would evict stickers newer than its own.
        """
        async with self._in_order:
            for message in messages:
                if message.sticker is None:
                    continue
                try:
                    await self._collect(message)
                except StorageError as exc:
                    logger.bind(chat=str(message.chat)).warning("sticker not kept: {}", exc)

    async def _collect(self, message: IncomingMessage) -> None:
        seen = message.sticker
        source = self._sources.get(message.chat.platform)
        if seen is None or source is None:
            return
        collected = await source.collect(seen)
        log = logger.bind(chat=str(message.chat))
        if collected is None:
            log.info("sticker of message {} could not be kept", message.message_id)
            return
        kept = await self._store.see_sticker(
            self.collection(message.chat),
            platform=message.chat.platform,
            key=collected.key,
            file_ref=collected.file_ref,
            thumb_ref=collected.thumb_ref,
            caption=default_caption(seen.emoji, seen.set_name, seen.summary),
            chat=message.chat,
            message_id=message.message_id,
            keep=self._config.stickers.max_per_chat,
            now=self._now(),
        )
        for file_ref in kept.evicted:  # a file another collection holds stays
            if not await self._store.sticker_file_used(message.chat.platform, file_ref):
                await source.forget(file_ref)
        if kept.record is not None:
            log.debug("sticker {} seen in message {}", kept.record.label, message.message_id)

    async def caption_from_notes(self, chat: ChatKey, notes: Mapping[str, str]) -> None:
        """Caption the stickers of these messages with the model's notes about them."""
        for message_id, note in notes.items():
            await self._store.caption_sticker(chat, message_id, clip(note, CAPTION_CHARS_MAX))

    async def offered(self, chat: ChatKey) -> list[StickerRecord]:
        """Return the stickers the prompt offers in ``chat``: the most sent, then newest."""
        limit = self._config.stickers.in_prompt
        return await self._store.stickers(self.collection(chat), limit=limit) if limit else []

    async def prompt_part(self, chat: ChatKey) -> str:
        """Return the "stickers you can send" part of the prompt ("" when none is kept)."""
        offered = await self.offered(chat)
        if not offered:
            return ""
        lines = [f"[{sticker.label}] {sticker.caption}" for sticker in offered]
        return "Stickers you can send (by their id):\n" + "\n".join(lines)

    async def listing(self, chat: ChatKey, *, limit: int) -> list[StickerRecord]:
        """Return ``chat``'s collection for an admin, banned stickers last."""
        return await self._store.stickers(self.collection(chat), limit=limit, banned=True)

    async def ban(self, chat: ChatKey, label: str, *, by: str) -> StickerRecord | None:
        """Ban a live sticker of ``chat``'s collection; ``None`` if it has no such one."""
        number = sticker_number(label)
        if number is None:
            return None
        banned = await self._store.ban_sticker(
            self.collection(chat), number, by=by, now=self._now()
        )
        if banned is not None:
            logger.bind(chat=str(chat)).info("sticker {} banned by {}", banned.label, by)
        return banned

    async def thumbnail(self, chat: ChatKey, label: str) -> bytes | None:
        """Return a sticker of ``chat``'s collection (banned too) as a small PNG; ``None``
        if the collection has no such sticker or it cannot be drawn."""
        number = sticker_number(label)
        found = None if number is None else await self._store.sticker(self.collection(chat), number)
        source = None if found is None else self._sources.get(found.platform)
        if found is None or source is None:
            return None
        return await source.thumbnail(found.thumb_ref or found.file_ref)

    def kind_sent(self, chat: ChatKey, item: Outgoing) -> ItemKind:
        """A sticker goes out as a sticker."""
        return item.kind

    def instead(self, item: Outgoing) -> Outgoing | None:
        """Nothing replaces a sticker the platform refuses."""
        return None

    async def prepare(self, chat: ChatKey, item: Outgoing) -> Outgoing | None:
        """Make an item ready to send: a sticker gets what its platform sends it by.

        ``None`` for a sticker its collection no longer has, or has banned.
        """
        if not isinstance(item, Sticker):
            return item
        number = sticker_number(item.sticker_id)
        record = (
            None if number is None else await self._store.sticker(self.collection(chat), number)
        )
        if record is None or record.banned:
            return None
        return dataclasses.replace(item, file_ref=record.file_ref)

    async def delivered(self, chat: ChatKey, item: Outgoing) -> None:
        """Count a sticker sent."""
        number = sticker_number(item.sticker_id) if isinstance(item, Sticker) else None
        if number is not None:
            await self._store.sticker_sent(number, now=self._now())
