"""The small interfaces the core owns and the outside implements.

Adapters implement :class:`Platform` (deliver an item, show typing), :class:`History`
(fetch a chat's newest messages back), :class:`PictureSource` (fetch a picture),
:class:`LLM` (complete) and :class:`Embedder`; ``storage/`` implements
:class:`MessageLog`, :class:`Batches`, :class:`Outbox` and ``InitiativeStore``
(together, with ``close``, the :class:`Store`) and :class:`TraceLog`; the memory's
stores are in :mod:`bot.memory.ports`.
Adapters hand what they receive to a :class:`MessageSink`, which the pipeline implements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.initiative.occasion import OccasionKind
from bot.initiative.promises import Promise
from bot.initiative.store import InitiativeStore
from bot.models import (
    Batch,
    BatchOutcome,
    ChatActivity,
    ChatKey,
    ChatMessage,
    Completion,
    IncomingMessage,
    Jpeg,
    Picture,
    StoredMessage,
    ToolSpec,
)
from bot.replies.items import ItemKind, OutboxItem, Outgoing, PlannedReply
from bot.trace import ShownTrace, Trace


@dataclass(frozen=True, slots=True)
class PacingLimits:
    """How fast a platform lets a bot post."""

    chat_interval_s: float  # at least this long between two messages to one chat
    group_per_minute: int  # at most this many messages to one group in any 60 s
    overall_per_s: float  # at most this many messages per second in all


class Platform(Protocol):
    """A chat platform the bot can post to."""

    @property
    def name(self) -> str:
        """The platform part of chat keys, e.g. ``telegram``."""
        ...

    @property
    def text_limit(self) -> int:
        """The most characters one message may hold."""
        ...

    @property
    def typing_refresh_s(self) -> float | None:
        """How often to repeat the typing indicator; ``None`` if the platform has none."""
        ...

    @property
    def limits(self) -> PacingLimits:
        """The posting rate the platform tolerates."""
        ...

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """The kinds of item the platform can deliver in ``chat`` (a text always)."""
        ...

    async def send(self, chat: ChatKey, item: Outgoing) -> str | None:
        """Deliver one item; return the platform id of the message it made, if it made one.

        A :class:`~bot.replies.items.Text` is posted, quoting its ``reply_to`` if given.
        A kind the platform cannot deliver raises ``MessageRefused``; otherwise raises
        ``SendFailed``, ``RateLimited`` or ``ChatUnavailable``.
        """
        ...

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show once that an item of ``kind`` is being made ready: typing, or recording
        for a voice note where the platform shows that. Failures are swallowed."""
        ...


@runtime_checkable
class History(Protocol):
    """A platform that can fetch a chat's newest messages back (QQ's OneBot history).

    Messages a platform cannot deliver again (OneBot has no redelivery) are fetched back
    after a restart or a reconnect, and stored if they were missed.
    """

    @property
    def name(self) -> str:
        """The platform part of chat keys."""
        ...

    async def latest_messages(self, chat: ChatKey, *, count: int) -> list[IncomingMessage]:
        """Return up to ``count`` newest messages of ``chat``, oldest first, read as if
        they had just been received; the bot's own are left out.

        Raise ``HistoryUnavailable`` when the platform cannot fetch history at all, and
        ``PlatformError`` when this fetch failed (e.g. the connection dropped).
        """
        ...


class PictureSource(Protocol):
    """Where one platform's pictures are fetched from when a batch is answered."""

    async def fetch(self, picture: Picture) -> Jpeg:
        """Fetch ``picture`` and make it ready for the model (JPEG, ≤ 1024 px).

        Raise ``PictureUnavailable`` when it cannot be fetched, is too big or does not
        decode; the message then keeps its placeholder.
        """
        ...


class LLM(Protocol):
    """An OpenAI-compatible chat model."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Return the model's answer; raise ``LLMUnavailable`` when it cannot be reached.

        ``tools`` are offered to the model (``tool_choice`` ``"auto"`` or ``"none"``); a
        model that refuses them is asked again without, and its answer has no tool calls.
        """
        ...


class Embedder(Protocol):
    """An OpenAI-compatible embeddings endpoint."""

    @property
    def model(self) -> str:
        """The embeddings model; vectors of different models are never compared."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one vector per text, in order, from one request.

        Raise ``LLMUnavailable`` when the endpoint cannot be reached, ``BadLLMReply`` when
        its answer holds no usable vectors.
        """
        ...


class MessageSink(Protocol):
    """Where adapters deliver what chatters write."""

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        """Take new messages that arrived together, in order (stored before this returns).

        One read of the wire (a getUpdates page, the OneBot frames that came in together)
        is one call, so the store writes them in one transaction.
        """
        ...

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        """Take the new text of an edited message; never starts a second answer."""
        ...

    def platform_ready(self, platform: str) -> None:
        """Hear that ``platform`` can post again (it reconnected): retry what waits now."""
        ...


class MessageLog(Protocol):
    """A chat's messages: what chatters wrote, what the bot sent and what it left unsaid."""

    async def add_message(self, message: IncomingMessage, *, received_at: datetime) -> bool:
        """Store a chatter's message once; return ``False`` if it was already stored."""
        ...

    async def add_messages(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages all or none; say for each whether it is new (not stored before)."""
        ...

    async def add_context(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages as context only, all or none; say for each whether it is new.

        A new one never waits for an answer: it is in the chat's history at once.
        """
        ...

    async def edit_message(self, chat: ChatKey, message_id: str, text: str) -> bool:
        """Replace a stored message's text; return ``False`` if it is unknown."""
        ...

    async def is_bot_message(self, chat: ChatKey, message_id: str) -> bool:
        """Tell whether ``message_id`` in ``chat`` is a message the bot sent."""
        ...

    async def add_image_notes(self, chat: ChatKey, notes: Mapping[str, str]) -> int:
        """Keep what the model saw in these messages' pictures; return how many were kept.

        Only chatters' messages that carry pictures take a note; other ids are ignored.
        """
        ...

    async def waiting_counts(self, chat: ChatKey | None = None) -> dict[ChatKey, int]:
        """Count, per chat (or for ``chat`` only), the messages no batch has taken yet."""
        ...

    async def recent_history(
        self, chat: ChatKey, *, exclude_batch: int, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` newest answered-or-sent messages, oldest first."""
        ...

    async def unsaid_replies(self, chat: ChatKey, *, before_batch: int) -> list[str]:
        """Return the cancelled replies of the chat's last answered batch before this one."""
        ...

    async def chats_active_since(
        self, platform: str, since: datetime, *, limit: int
    ) -> list[ChatKey]:
        """Return up to ``limit`` chats of ``platform`` where a chatter wrote at or after
        ``since``, the most recently active first."""
        ...

    async def chat_activity(self, *, search: str = "", limit: int) -> list[ChatActivity]:
        """Return up to ``limit`` chats, the most recently active first.

        With ``search``, only chats whose key, title or one of whose senders' names holds
        it (ASCII letters in any case).
        """
        ...

    async def chat_names(self, chats: Sequence[ChatKey]) -> dict[ChatKey, str]:
        """Return the name to show beside each chat's key, for those that have one: a
        group's newest title, a private chat's newest sender name."""
        ...


class Batches(Protocol):
    """Batches: waiting messages taken together for one LLM call, and how each call ended."""

    async def open_batch(self, chat: ChatKey, *, limit: int, now: datetime) -> Batch | None:
        """Take up to ``limit`` oldest waiting messages of a chat into a new open batch."""
        ...

    async def open_initiative_batch(
        self, chat: ChatKey, occasion: OccasionKind, *, later_id: int | None, now: datetime
    ) -> Batch | None:
        """Open a batch for ``occasion`` that takes no messages; ``None`` if its later item
        is no longer running."""
        ...

    async def close_batch(
        self,
        batch_id: int,
        outcome: BatchOutcome,
        *,
        now: datetime,
        replies: Sequence[PlannedReply] = (),
        error: str | None = None,
        promises: Sequence[Promise] = (),
    ) -> list[OutboxItem]:
        """Record how a batch ended and, in the same transaction, queue its replies, keep
        the later items it promised and mark done the later item it ran."""
        ...

    async def abandon_open_batches(self, *, now: datetime) -> int:
        """Mark batches left open by a crash abandoned; their messages wait again."""
        ...

    async def failed_batches_since(self, since: datetime) -> int:
        """Count batches that failed since ``since``."""
        ...


class Outbox(Protocol):
    """The outbox: replies waiting for their time, being sent, sent or given up."""

    async def next_scheduled(self, chat: ChatKey) -> OutboxItem | None:
        """Return the chat's earliest scheduled reply, if any."""
        ...

    async def claim_for_sending(self, item_id: int, *, now: datetime) -> bool:
        """Move a reply from scheduled to sending; ``False`` if it is no longer scheduled."""
        ...

    async def mark_sent(
        self,
        item_id: int,
        *,
        platform_message_id: str | None,
        said: str | None,
        sender_name: str,
        now: datetime,
        sent_as: ItemKind | None = None,
    ) -> None:
        """Record an item as sent, ``sent_as`` the kind it went out as (a voice note's
        words may go as text); keep ``said`` as a bot message in the chat's history under
        the platform's id (neither is given for a reaction, which is no message)."""
        ...

    async def release(self, item_id: int, *, now: datetime) -> None:
        """Return a reply that was certainly not delivered from sending to scheduled."""
        ...

    async def mark_dropped(self, item_id: int, *, now: datetime, reason: str) -> None:
        """Give up on one reply."""
        ...

    async def cancel_scheduled(self, chat: ChatKey, *, now: datetime) -> int:
        """Cancel every scheduled reply of a chat; return how many."""
        ...

    async def cancel_replies(self, item_ids: Sequence[int], *, now: datetime) -> int:
        """Cancel those of these replies that are still scheduled; return how many."""
        ...

    async def drop_scheduled(self, chat: ChatKey, *, now: datetime, reason: str) -> int:
        """Drop every scheduled reply of a chat; return how many."""
        ...

    async def recover_outbox(self, *, now: datetime, stale_after_s: float) -> list[ChatKey]:
        """After a restart: drop ``sending`` and stale ``scheduled`` replies.

        Return the chats that still have fresh scheduled replies.
        """
        ...

    async def scheduled_count(self, chat: ChatKey | None = None) -> int:
        """Count scheduled replies, of one chat or of all."""
        ...

    async def sent_counts(self, chat: ChatKey | None = None, *, since: datetime) -> dict[str, int]:
        """Count the items sent since ``since`` by kind, of one chat or of all."""
        ...


class Store(MessageLog, Batches, Outbox, InitiativeStore, Protocol):
    """Durable state: messages, batches, the outbox and the promises kept, as one object
    with one lifetime."""

    async def close(self) -> None:
        """Commit and close the database."""
        ...


class TraceLog(Protocol):
    """The traces of answered batches, the newest few per chat."""

    async def keep_trace(self, trace: Trace, *, keep: int) -> None:
        """Store a batch's trace; keep only the chat's ``keep`` newest."""
        ...

    async def recent_traces(self, chat: ChatKey, *, count: int) -> list[ShownTrace]:
        """Return up to ``count`` newest traces of ``chat``, newest first, with reply fates
        and the names their messages were written under."""
        ...
