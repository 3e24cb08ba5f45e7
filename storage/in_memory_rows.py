"""The rows the in-memory store keeps: one dataclass per SQLite table it stands in for."""

from __future__ import annotations

from dataclasses import dataclass

from bot.models import (
    BatchOutcome,
    ChatKey,
    OutboxItem,
    OutboxState,
    Picture,
    StoredMessage,
)
from storage.values import aware


@dataclass(slots=True)
class MessageRow:
    """One message of a chat's log, as the ``messages`` table holds it."""

    id: int
    chat: ChatKey
    message_id: str
    sender_id: str
    sender_name: str
    text: str
    sent_at: float
    received_at: float
    from_bot: bool
    addresses_bot: bool
    reply_to_id: str | None
    batch_id: int | None = None  # None while the message waits
    pictures: tuple[Picture, ...] = ()
    image_note: str | None = None

    def stored(self) -> StoredMessage:
        """Return the message as the ports hand it out."""
        return StoredMessage(
            chat=self.chat,
            message_id=self.message_id,
            sender_id=self.sender_id,
            sender_name=self.sender_name,
            text=self.text,
            sent_at=aware(self.sent_at),
            from_bot=self.from_bot,
            addresses_bot=self.addresses_bot,
            reply_to_id=self.reply_to_id,
            pictures=self.pictures,
            image_note=self.image_note,
        )


@dataclass(slots=True)
class BatchRow:
    """One batch, as the ``batches`` table holds it."""

    id: int
    chat: ChatKey
    state: BatchOutcome
    created_at: float
    finished_at: float | None = None
    error: str | None = None


@dataclass(slots=True)
class OutboxRow:
    """One reply, as the ``outbox`` table holds it."""

    id: int
    chat: ChatKey
    batch_id: int
    seq: int
    content: str
    reply_to: str | None
    due_at: float
    state: OutboxState
    updated_at: float
    platform_message_id: str | None = None
    reason: str | None = None  # why a reply was dropped

    def item(self) -> OutboxItem:
        """Return the reply as the ports hand it out."""
        return OutboxItem(
            id=self.id,
            chat=self.chat,
            batch_id=self.batch_id,
            seq=self.seq,
            content=self.content,
            due_at=aware(self.due_at),
            state=self.state,
            reply_to=self.reply_to,
        )
