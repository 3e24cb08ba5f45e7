"""Platform-neutral values that flow through the pipeline.

Adapters turn library types (a PTB ``Update``, a OneBot event, a console line) into these
frozen dataclasses at the edge; the core never sees anything else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.errors import ConfigError


class ChatKind(enum.StrEnum):
    """Whether a chat is one person or many."""

    PRIVATE = "private"
    GROUP = "group"


@dataclass(frozen=True, slots=True)
class ChatKey:
    """Identify one chat on one platform, e.g. ``telegram:group:-100123``."""

    platform: str
    kind: ChatKind
    id: str

    def __str__(self) -> str:
        return f"{self.platform}:{self.kind}:{self.id}"

    @property
    def is_group(self) -> bool:
        return self.kind is ChatKind.GROUP

    @classmethod
    def parse(cls, text: str) -> ChatKey:
        """Parse ``platform:kind:id``; raise ``ConfigError`` naming the expected form."""
        platform, _, rest = text.partition(":")
        kind, _, chat_id = rest.partition(":")
        if not platform or not chat_id or kind not in {k.value for k in ChatKind}:
            msg = (
                f"chat key {text!r} is not of the form platform:kind:id "
                "(e.g. telegram:private:123, qq:group:456)"
            )
            raise ConfigError(msg)
        return cls(platform, ChatKind(kind), chat_id)


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message from a chatter, normalised by its adapter.

    ``sent_at`` is the platform's own timestamp (timezone-aware); the message belongs to
    the chat day of that moment, not of the moment it was received.
    """

    chat: ChatKey
    message_id: str
    sender_id: str
    sender_name: str
    text: str
    sent_at: datetime
    addresses_bot: bool = False
    reply_to_id: str | None = None
    chat_title: str | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as the store keeps it: a chatter's or one the bot sent."""

    chat: ChatKey
    message_id: str
    sender_id: str
    sender_name: str
    text: str
    sent_at: datetime
    from_bot: bool
    addresses_bot: bool = False
    reply_to_id: str | None = None


@dataclass(frozen=True, slots=True)
class Batch:
    """The waiting messages of one chat taken together for one answer."""

    id: int
    chat: ChatKey
    messages: tuple[StoredMessage, ...]


class BatchOutcome(enum.StrEnum):
    """How a batch ended; ``open`` batches are still being answered."""

    OPEN = "open"
    ANSWERED = "answered"  # replies went to the outbox
    SILENT = "silent"  # the LLM chose to say nothing
    SKIPPED = "skipped"  # not addressed in a group with reply_mode = "mention"
    FAILED = "failed"  # the LLM was unavailable or its output unusable
    ABANDONED = "abandoned"  # the process stopped mid-answer; its messages wait again


@dataclass(frozen=True, slots=True)
class Reply:
    """One message the bot means to send, as the LLM planned it."""

    content: str
    send_delay_seconds: float = 0.0
    reply_to: str | None = None


class OutboxState(enum.StrEnum):
    """The life of a reply: ``scheduled → sending → sent | cancelled | dropped``."""

    SCHEDULED = "scheduled"
    SENDING = "sending"
    SENT = "sent"
    CANCELLED = "cancelled"
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True)
class PlannedReply:
    """A reply ready for the outbox: its text and when it is due (wall clock)."""

    content: str
    due_at: datetime
    reply_to: str | None = None


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A reply in the durable outbox."""

    id: int
    chat: ChatKey
    batch_id: int
    seq: int
    content: str
    due_at: datetime
    state: OutboxState
    reply_to: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asking to run one function, with its arguments as the JSON it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of an LLM request.

    An ``assistant`` message may carry the ``tool_calls`` the model made; a ``tool``
    message answers one of them by its ``tool_call_id``.
    """

    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: its name, what it does, its JSON-schema parameters."""

    name: str
    description: str
    parameters: str  # a JSON schema object, as JSON text: frozen values stay hashable


@dataclass(frozen=True, slots=True)
class Completion:
    """What an LLM returned: its text, why it stopped, and what the call cost.

    ``model``, ``latency_ms`` and the token counts (``None`` when the provider does not
    report them) let a trace show each call later; they describe the call, not the
    answer, so two completions with the same answer compare equal.
    """

    text: str
    finish_reason: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = field(default="", compare=False)
    latency_ms: float = field(default=0.0, compare=False)
    prompt_tokens: int | None = field(default=None, compare=False)
    completion_tokens: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class LLMCallRecord:
    """One chat-completion call an answer made, as a trace shows it."""

    kind: str  # "reply", "reply+memory", "nudge" or "splitter"
    model: str
    latency_ms: float
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @classmethod
    def of(cls, kind: str, completion: Completion) -> LLMCallRecord:
        """Describe the call that returned ``completion``."""
        return cls(
            kind,
            completion.model,
            completion.latency_ms,
            completion.finish_reason,
            completion.prompt_tokens,
            completion.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class DaySummary:
    """What the LLM wrote down about one chat day."""

    summary: str  # absolute dates written in, never "today" or "tomorrow"
    topics: tuple[str, ...] = ()
    key_points: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EmbeddingSource:
    """A stored row whose text is to be embedded: what it is, which row, whose, what it says.

    ``kind`` names the table the row lives in (``summary``; facts become one more kind).
    """

    kind: str
    row_id: int
    chat: ChatKey
    text: str


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """A summary pushed onto a chat's prompt stack, with its knowledge-index data."""

    id: int
    chat: ChatKey
    day: date
    content: DaySummary
    added_prompt: str  # the text the summary adds to the persona
    message_count: int
    created_at: datetime
    is_deleted: bool = False
    deleted_at: datetime | None = None
    deleted_by: str | None = None
