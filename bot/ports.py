"""The interfaces between the core and the world outside it: platforms and models.

Adapters implement :class:`Platform` (deliver an item, show typing), :class:`History`
(fetch a chat's newest messages back), :class:`RepliesWithin` (a platform whose replies
each name the message they answer, within a window), :class:`PictureSource` (fetch a picture),
:class:`LLM` (complete) and :class:`Embedder`, and hand what they receive to a
:class:`MessageSink`, which the inbox implements. Only value types are imported here.

The store's ports sit beside the room that uses them, each holding the few methods that
room calls (:class:`bot.keeping.KeptMessages`, :class:`bot.batches.Batches`,
:class:`bot.sender.Outbox`, :class:`bot.trace.TraceLog`, …); ``storage/`` implements them
all, and only the composition root (``adapters/wiring.py``) knows the whole store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.models import (
    ChatKey,
    ChatMessage,
    Completion,
    IncomingMessage,
    Jpeg,
    Picture,
    ToolSpec,
)
from bot.replies.items import ItemKind, Outgoing
from bot.replies.window import ReplyWindow


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

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        """Deliver one item; return the platform id of the message it made, if it made one.

        ``answers`` is the message the item answers, for a platform whose replies must
        name one (:class:`RepliesWithin`; others need not look at it); ``None``: the item
        answers nothing (a reminder, an opener). A :class:`~bot.replies.items.Text` is
        posted, quoting its ``reply_to`` if given.
        A kind the platform cannot deliver raises ``MessageRefused``; otherwise raises
        ``SendFailed``, ``RateLimited`` or ``ChatUnavailable``.
        """
        ...

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show once that an item of ``kind`` is being made ready: typing, or recording
        for a voice note where the platform shows that. Failures are swallowed."""
        ...


@runtime_checkable
class RepliesWithin(Protocol):
    """A platform whose every reply names the message it answers, within that message's
    :class:`ReplyWindow` (the official QQ bot's passive replies).

    A reply plan for such a platform is planned to fit the window of the message it
    answers; what answers no message goes out as one message, since the platform counts
    each of those against a small quota.
    """

    def reply_window(self, chat: ChatKey) -> ReplyWindow:
        """Return how a message of ``chat`` may be answered."""
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
