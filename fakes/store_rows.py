"""Rows for store tests: messages at known moments, stored and answered the usual way.

Times count from :data:`T0`; a numeric message id doubles as its seconds after ``T0``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.models import Batch, BatchOutcome, ChatKey, ChatKind, IncomingMessage, StoredMessage
from bot.replies.items import OutboxItem, PlannedReply, Text
from storage.sqlite import SqliteStore

T0 = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)
ALICE = ChatKey("telegram", ChatKind.PRIVATE, "123")


def at(seconds: float) -> datetime:
    """Return T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def incoming(
    chat: ChatKey,
    message_id: str,
    text: str | None = None,
    *,
    sent_at: datetime | None = None,
    sender_id: str = "42",
    reply_to_id: str | None = None,
) -> IncomingMessage:
    """Build a chatter's message; numeric ids double as seconds after T0."""
    return IncomingMessage(
        chat=chat,
        message_id=message_id,
        sender_id=sender_id,
        sender_name="Alice",
        text=f"message {message_id}" if text is None else text,
        sent_at=at(int(message_id)) if sent_at is None else sent_at,
        addresses_bot=chat.kind is ChatKind.PRIVATE,
        reply_to_id=reply_to_id,
    )


def stored(message: IncomingMessage) -> StoredMessage:
    """Return how the store should give ``message`` back."""
    return StoredMessage(
        chat=message.chat,
        message_id=message.message_id,
        sender_id=message.sender_id,
        sender_name=message.sender_name,
        text=message.text,
        sent_at=message.sent_at,
        from_bot=False,
        addresses_bot=message.addresses_bot,
        reply_to_id=message.reply_to_id,
    )


async def add(store: SqliteStore, *messages: IncomingMessage) -> None:
    """Store ``messages``, each received one second after it was sent."""
    for message in messages:
        assert await store.add_message(message, received_at=message.sent_at + timedelta(seconds=1))


async def answered_batch(
    store: SqliteStore, chat: ChatKey, contents: list[str], *, now: datetime = T0
) -> tuple[Batch, list[OutboxItem]]:
    """Open a batch of the waiting messages and close it as answered with ``contents``."""
    batch = await store.open_batch(chat, limit=30, now=now)
    assert batch is not None
    replies = [
        PlannedReply(Text(content), due_at=now + timedelta(seconds=i))
        for i, content in enumerate(contents)
    ]
    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=now, replies=replies)
    return batch, items
