"""Keep messages, batches and the outbox in process memory, with the SQLite store's rules.

:class:`InMemoryStore` implements :class:`bot.ports.MessageLog`, :class:`bot.ports.Batches`
and :class:`bot.ports.Outbox` (with ``close``, the :class:`bot.ports.Store`) for tests that
need a store but not a file. It keeps the same promises as ``storage/sqlite.py``, proven
by one contract suite over both: a message is stored once per platform message id, a
reply moves scheduled → sending → sent (or cancelled, or dropped), a restart drops what
was caught mid-send. Nothing here awaits between reading and writing, and each method
checks everything that can fail before it changes anything, so every method is atomic on
the event loop, as each SQLite transaction is. Times are kept as unix seconds
so they order and round-trip exactly as in SQLite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from bot.errors import StorageError
from bot.models import (
    Batch,
    BatchOutcome,
    ChatActivity,
    ChatKey,
    IncomingMessage,
    OutboxItem,
    OutboxState,
    Picture,
    PlannedReply,
    StoredMessage,
)
from storage.in_memory_rows import BatchRow, MessageRow, OutboxRow
from storage.values import BOT_SENDER_ID, ascii_lower, aware, clean, unix


class InMemoryStore:
    """The :class:`bot.ports.Store` in process memory; gone when the process ends."""

    def __init__(self) -> None:
        """Start empty."""
        self._messages: dict[tuple[ChatKey, str], MessageRow] = {}  # insertion = id order
        self._batches: dict[int, BatchRow] = {}
        self._outbox: dict[int, OutboxRow] = {}
        self._next_message_id = 1
        self._next_batch_id = 1
        self._next_outbox_id = 1
        self._closed = False

    async def close(self) -> None:
        """Refuse all further work; calling it again does nothing."""
        self._closed = True

    # -- what tests may inspect ----------------------------------------------------------

    def message_rows(self) -> list[MessageRow]:
        """Return copies of every stored message, in the order they were stored."""
        return [replace(row) for row in self._messages.values()]

    def batch_rows(self) -> list[BatchRow]:
        """Return copies of every batch, in the order they were opened."""
        return [replace(row) for row in self._batches.values()]

    def outbox_rows(self) -> list[OutboxRow]:
        """Return copies of every reply, in the order they were queued."""
        return [replace(row) for row in self._outbox.values()]

    # -- messages ------------------------------------------------------------------------

    async def add_message(self, message: IncomingMessage, *, received_at: datetime) -> bool:
        """Store a chatter's message once; return ``False`` if it was already stored."""
        (stored,) = await self.add_messages((message,), received_at=received_at)
        return stored

    async def add_messages(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store chatters' messages at once; say for each whether it is new."""
        received_at_s = unix(received_at, "received_at")
        rows = [(message, unix(message.sent_at, "sent_at")) for message in messages]
        self._check_open()
        stored = []
        for message, sent_at_s in rows:
            key = (message.chat, message.message_id)
            stored.append(key not in self._messages)
            if not stored[-1]:
                continue
            self._messages[key] = MessageRow(
                id=self._take_message_id(),
                chat=message.chat,
                message_id=message.message_id,
                sender_id=message.sender_id,
                sender_name=clean(message.sender_name),
                text=clean(message.text),
                sent_at=sent_at_s,
                received_at=received_at_s,
                from_bot=False,
                addresses_bot=message.addresses_bot,
                reply_to_id=message.reply_to_id,
                pictures=tuple(
                    Picture(clean(p.ref), clean(p.placeholder)) for p in message.pictures
                ),
            )
        return stored

    async def add_image_notes(self, chat: ChatKey, notes: Mapping[str, str]) -> int:
        """Keep what the model saw in these messages' pictures; return how many were kept."""
        self._check_open()
        rows = [self._messages.get((chat, message_id)) for message_id in notes]
        kept = 0
        for row, note in zip(rows, notes.values(), strict=True):
            if row is not None and not row.from_bot and row.pictures:
                row.image_note = clean(note)
                kept += 1
        return kept

    async def edit_message(self, chat: ChatKey, message_id: str, text: str) -> bool:
        """Replace a stored message's text; return ``False`` if it is unknown."""
        self._check_open()
        row = self._messages.get((chat, message_id))
        if row is None:
            return False
        row.text = clean(text)
        return True

    async def is_bot_message(self, chat: ChatKey, message_id: str) -> bool:
        """Tell whether ``message_id`` in ``chat`` is a message the bot sent."""
        self._check_open()
        row = self._messages.get((chat, message_id))
        return row is not None and row.from_bot

    async def waiting_counts(self, chat: ChatKey | None = None) -> dict[ChatKey, int]:
        """Count, per chat (or for ``chat`` only), the messages no batch has taken yet."""
        self._check_open()
        counts: dict[ChatKey, int] = {}
        for row in self._messages.values():
            if row.batch_id is None and not row.from_bot and chat in (None, row.chat):
                counts[row.chat] = counts.get(row.chat, 0) + 1
        return dict(sorted(counts.items(), key=lambda pair: str(pair[0])))

    async def recent_history(
        self, chat: ChatKey, *, exclude_batch: int, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` newest answered-or-sent messages, oldest first."""
        self._check_open()
        answered = [
            row
            for row in self._messages.values()
            if row.chat == chat
            and (row.from_bot or (row.batch_id is not None and row.batch_id != exclude_batch))
        ]
        return _newest(answered, limit)

    async def chat_activity(self, *, search: str = "", limit: int) -> list[ChatActivity]:
        """Return up to ``limit`` chats, the most recently active first, matching ``search``."""
        self._check_open()
        search = ascii_lower(search)
        chats: dict[ChatKey, list[MessageRow]] = {}
        for row in self._messages.values():
            chats.setdefault(row.chat, []).append(row)
        found = [
            ChatActivity(chat, len(rows), aware(max(row.sent_at for row in rows)))
            for chat, rows in chats.items()
            if search in ascii_lower(str(chat))
            or any(search in ascii_lower(row.sender_name) for row in rows)
        ]
        found.sort(key=lambda activity: str(activity.chat))
        found.sort(key=lambda activity: activity.last_message_at, reverse=True)
        return found if limit < 0 else found[:limit]  # as SQLite's LIMIT

    # -- batches -------------------------------------------------------------------------

    async def open_batch(self, chat: ChatKey, *, limit: int, now: datetime) -> Batch | None:
        """Take up to ``limit`` oldest waiting messages of a chat into a new open batch."""
        if limit < 1:
            msg = f"limit must be at least 1, got {limit}"
            raise ValueError(msg)
        created_at = unix(now, "now")
        self._check_open()
        waiting = [
            row
            for row in self._messages.values()
            if row.chat == chat and row.batch_id is None and not row.from_bot
        ][:limit]
        if not waiting:
            return None
        batch = BatchRow(
            id=self._next_batch_id, chat=chat, state=BatchOutcome.OPEN, created_at=created_at
        )
        self._next_batch_id += 1
        self._batches[batch.id] = batch
        for row in waiting:
            row.batch_id = batch.id
        return Batch(batch.id, chat, tuple(row.stored() for row in waiting))

    async def close_batch(
        self,
        batch_id: int,
        outcome: BatchOutcome,
        *,
        now: datetime,
        replies: Sequence[PlannedReply] = (),
        error: str | None = None,
    ) -> list[OutboxItem]:
        """Record how a batch ended and, with it, queue its replies.

        Raise ``StorageError`` if the batch is not open (closing twice is a bug).
        """
        if outcome is BatchOutcome.OPEN:
            msg = "a batch cannot be closed as 'open'"
            raise ValueError(msg)
        finished_at = unix(now, "now")
        due = [unix(reply.due_at, "due_at") for reply in replies]
        contents = [clean(reply.content) for reply in replies]  # all that can raise, first
        self._check_open()
        batch = self._batches.get(batch_id)
        if batch is None or batch.state is not BatchOutcome.OPEN:
            msg = f"batch {batch_id} is not open: it was closed already or never existed"
            raise StorageError(msg)
        batch.state, batch.finished_at, batch.error = outcome, finished_at, error
        queued: list[OutboxItem] = []
        for seq, (reply, content, due_at) in enumerate(zip(replies, contents, due, strict=True)):
            row = OutboxRow(
                id=self._next_outbox_id,
                chat=batch.chat,
                batch_id=batch_id,
                seq=seq,
                content=content,
                reply_to=reply.reply_to,
                due_at=due_at,
                state=OutboxState.SCHEDULED,
                updated_at=finished_at,
            )
            self._next_outbox_id += 1
            self._outbox[row.id] = row
            queued.append(row.item())
        return queued

    async def abandon_open_batches(self, *, now: datetime) -> int:
        """Mark batches left open by a crash abandoned; their messages wait again."""
        finished_at = unix(now, "now")
        self._check_open()
        stale = {batch.id for batch in self._batches.values() if batch.state is BatchOutcome.OPEN}
        for row in self._messages.values():
            if not row.from_bot and row.batch_id in stale:
                row.batch_id = None
        for batch_id in stale:
            self._batches[batch_id].state = BatchOutcome.ABANDONED
            self._batches[batch_id].finished_at = finished_at
        return len(stale)

    async def unsaid_replies(self, chat: ChatKey, *, before_batch: int) -> list[str]:
        """Return the cancelled replies of the chat's last answered batch before this one."""
        self._check_open()
        answered = [
            batch.id
            for batch in self._batches.values()
            if batch.chat == chat
            and batch.state is BatchOutcome.ANSWERED
            and batch.id < before_batch
        ]
        if not answered:
            return []
        last = max(answered)
        cancelled = [
            row
            for row in self._outbox.values()
            if row.batch_id == last and row.state is OutboxState.CANCELLED
        ]
        return [row.content for row in sorted(cancelled, key=lambda row: row.seq)]

    async def failed_batches_since(self, since: datetime) -> int:
        """Count batches that failed since ``since``."""
        since_s = unix(since, "since")
        self._check_open()
        return sum(
            1
            for batch in self._batches.values()
            if batch.state is BatchOutcome.FAILED
            and batch.finished_at is not None
            and batch.finished_at >= since_s
        )

    # -- outbox --------------------------------------------------------------------------

    async def next_scheduled(self, chat: ChatKey) -> OutboxItem | None:
        """Return the chat's earliest scheduled reply, if any."""
        self._check_open()
        scheduled = self._scheduled(chat)
        if not scheduled:
            return None
        return min(scheduled, key=lambda row: (row.due_at, row.batch_id, row.seq)).item()

    async def claim_for_sending(self, item_id: int, *, now: datetime) -> bool:
        """Move a reply from scheduled to sending; ``False`` if it is no longer scheduled."""
        return self._move(item_id, OutboxState.SCHEDULED, OutboxState.SENDING, now)

    async def mark_sent(
        self, item_id: int, *, platform_message_id: str, sender_name: str, now: datetime
    ) -> None:
        """Record a reply as sent and keep it as a bot message in the chat's history.

        Raise ``StorageError`` if the reply is not being sent (a bug in the caller).
        """
        sent_at = unix(now, "now")
        name = clean(sender_name)  # before any change: a failed call changes nothing
        self._check_open()
        row = self._outbox.get(item_id)
        if row is None or row.state is not OutboxState.SENDING:
            msg = f"outbox item {item_id} is not being sent"
            raise StorageError(msg)
        row.state, row.platform_message_id, row.updated_at = (
            OutboxState.SENT,
            platform_message_id,
            sent_at,
        )
        key = (row.chat, platform_message_id)
        if key in self._messages:
            return  # the platform id is known already: keep what is stored
        self._messages[key] = MessageRow(
            id=self._take_message_id(),
            chat=row.chat,
            message_id=platform_message_id,
            sender_id=BOT_SENDER_ID,
            sender_name=name,
            text=row.content,
            sent_at=sent_at,
            received_at=sent_at,
            from_bot=True,
            addresses_bot=False,
            reply_to_id=row.reply_to,
            batch_id=row.batch_id,
        )

    async def release(self, item_id: int, *, now: datetime) -> None:
        """Return a reply that was certainly not delivered from sending to scheduled.

        Raise ``StorageError`` if the reply is not being sent (a bug in the caller).
        """
        if not self._move(item_id, OutboxState.SENDING, OutboxState.SCHEDULED, now):
            msg = f"outbox item {item_id} is not being sent"
            raise StorageError(msg)

    async def mark_dropped(self, item_id: int, *, now: datetime, reason: str) -> None:
        """Give up on one reply; a reply already sent, cancelled or dropped stays so."""
        updated_at = unix(now, "now")
        self._check_open()
        row = self._outbox.get(item_id)
        if row is not None and row.state in {OutboxState.SCHEDULED, OutboxState.SENDING}:
            self._drop(row, reason, updated_at)

    async def cancel_scheduled(self, chat: ChatKey, *, now: datetime) -> int:
        """Cancel every scheduled reply of a chat; return how many."""
        updated_at = unix(now, "now")
        self._check_open()
        scheduled = self._scheduled(chat)
        for row in scheduled:
            row.state, row.updated_at = OutboxState.CANCELLED, updated_at
        return len(scheduled)

    async def cancel_replies(self, item_ids: Sequence[int], *, now: datetime) -> int:
        """Cancel those of these replies that are still scheduled; return how many."""
        if not item_ids:
            return 0
        updated_at = unix(now, "now")
        self._check_open()
        wanted = set(item_ids)
        scheduled = [row for row in self._scheduled() if row.id in wanted]
        for row in scheduled:
            row.state, row.updated_at = OutboxState.CANCELLED, updated_at
        return len(scheduled)

    async def drop_scheduled(self, chat: ChatKey, *, now: datetime, reason: str) -> int:
        """Drop every scheduled reply of a chat; return how many."""
        updated_at = unix(now, "now")
        self._check_open()
        scheduled = self._scheduled(chat)
        for row in scheduled:
            self._drop(row, reason, updated_at)
        return len(scheduled)

    async def recover_outbox(self, *, now: datetime, stale_after_s: float) -> list[ChatKey]:
        """After a restart: drop ``sending`` and stale ``scheduled`` replies.

        Return the chats that still have fresh scheduled replies, most overdue first.
        """
        now_s = unix(now, "now")
        self._check_open()
        for row in self._outbox.values():
            # A reply caught mid-send may have arrived: better to miss a line than repeat it.
            if row.state is OutboxState.SENDING:
                self._drop(row, "interrupted while sending", now_s)
            elif row.state is OutboxState.SCHEDULED and row.due_at < now_s - stale_after_s:
                self._drop(row, "stale", now_s)
        earliest: dict[ChatKey, float] = {}
        for row in self._scheduled():
            earliest[row.chat] = min(row.due_at, earliest.get(row.chat, row.due_at))
        return sorted(earliest, key=lambda chat: (earliest[chat], str(chat)))

    async def scheduled_count(self, chat: ChatKey | None = None) -> int:
        """Count scheduled replies, of one chat or of all."""
        self._check_open()
        return len(self._scheduled(chat))

    # -- plumbing ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            msg = "the in-memory store is closed"
            raise StorageError(msg)

    def _take_message_id(self) -> int:
        message_id = self._next_message_id
        self._next_message_id += 1
        return message_id

    def _scheduled(self, chat: ChatKey | None = None) -> list[OutboxRow]:
        return [
            row
            for row in self._outbox.values()
            if row.state is OutboxState.SCHEDULED and chat in (None, row.chat)
        ]

    def _move(self, item_id: int, source: OutboxState, target: OutboxState, now: datetime) -> bool:
        """Move one reply between states if it is in ``source``; tell whether it moved."""
        updated_at = unix(now, "now")
        self._check_open()
        row = self._outbox.get(item_id)
        if row is None or row.state is not source:
            return False
        row.state, row.updated_at = target, updated_at
        return True

    @staticmethod
    def _drop(row: OutboxRow, reason: str, updated_at: float) -> None:
        row.state, row.reason, row.updated_at = OutboxState.DROPPED, reason, updated_at


def _newest(rows: list[MessageRow], limit: int) -> list[StoredMessage]:
    """Keep the ``limit`` newest rows by sent time (then storage order), oldest first.

    As SQLite's ``LIMIT``: a negative limit keeps every row.
    """
    in_order = sorted(rows, key=lambda row: (row.sent_at, row.id))
    newest = in_order if limit < 0 else in_order[len(in_order) - limit :]
    return [row.stored() for row in newest]
