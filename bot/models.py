"""Platform-neutral values that flow through the pipeline.

Adapters turn library types (a PTB ``Update``, a OneBot event, a console line) into these
frozen dataclasses at the edge; the core never sees anything else.
"""

from __future__ import annotations

import base64
import enum
import re
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.errors import ConfigError

PLATFORM_ID = r"-?[A-Za-z0-9_]{1,64}"
"""A platform's id of a chat or a person as it may be written: a number or a word, nothing a
path or SQL could abuse."""


class ChatKind(enum.StrEnum):
    """Whether a chat is one person or many."""

    PRIVATE = "private"
    GROUP = "group"


_KINDS = "|".join(ChatKind)
_CHAT_KEY = re.compile(
    rf"(?P<platform>[a-z][a-z0-9_]{{0,31}}):(?P<kind>{_KINDS}):(?P<id>{PLATFORM_ID})"
    r"(?::(?P<topic>[0-9]{1,20}))?"
)
_MEANT_AS_CHAT_KEY = re.compile(rf"[^:]*:(?:{_KINDS})(?::|$)", re.IGNORECASE)
_SHOWN_CHARS_MAX = 80  # of a bad key, in an error: an argument may be kilobytes long


@dataclass(frozen=True, slots=True)
class ChatKey:
    """Identify one chat on one platform, e.g. ``telegram:group:-100123``.

    A topic of a Telegram forum is a chat of its own, ``telegram:group:-100123:7``: its
    own conversation, answered in its own thread. ``room`` is the whole group it belongs
    to, for what belongs to the group rather than one topic (its people, its stickers, the
    platform's send limits).
    """

    platform: str
    kind: ChatKind
    id: str
    topic: str = ""

    def __str__(self) -> str:
        key = f"{self.platform}:{self.kind}:{self.id}"
        return f"{key}:{self.topic}" if self.topic else key

    @property
    def is_group(self) -> bool:
        return self.kind is ChatKind.GROUP

    @property
    def room(self) -> ChatKey:
        """Return the chat this one is a topic of; itself if it is no topic."""
        return ChatKey(self.platform, self.kind, self.id) if self.topic else self

    @classmethod
    def named(cls, text: str) -> ChatKey | None:
        """Tell whether ``text`` names a chat, and which: the grammar of a chat key as a
        person writes it, shared by the commands, the dashboard and the command line.

        A chat key is ``platform:kind:id[:topic]``: a lowercase platform, ``private`` or
        ``group``, the platform's id (a number or a word), and a forum topic's number.
        Text that is no chat key (a date, a number, a time, a word) names none: ``None``.
        Text meant as one, its second part ``private`` or ``group``, that breaks the
        grammar raises ``ConfigError`` naming the expected form.
        """
        match = _CHAT_KEY.fullmatch(text)
        if match is not None:
            kind = ChatKind(match["kind"])
            return cls(match["platform"], kind, match["id"], match["topic"] or "")
        if _MEANT_AS_CHAT_KEY.match(text):
            raise ConfigError(_not_a_chat_key(text))
        return None

    @classmethod
    def from_text(cls, text: str) -> ChatKey:
        """Return the chat ``text`` names (see :meth:`named`); raise ``ConfigError``
        naming the expected form if it names none."""
        chat = cls.named(text)
        if chat is None:
            raise ConfigError(_not_a_chat_key(text))
        return chat

    @classmethod
    def parse(cls, text: str) -> ChatKey:
        """Read a chat key back as ``str()`` wrote it (the store, the config), whatever its
        id; raise ``ConfigError`` naming the expected form if it has not four parts."""
        platform, _, rest = text.partition(":")
        kind, _, rest = rest.partition(":")
        chat_id, colon, topic = rest.partition(":")
        valid_topic = not colon or (topic and ":" not in topic)
        if not platform or not chat_id or kind not in set(ChatKind) or not valid_topic:
            raise ConfigError(_not_a_chat_key(text))
        return cls(platform, ChatKind(kind), chat_id, topic)


def _not_a_chat_key(text: str) -> str:
    shown = text if len(text) <= _SHOWN_CHARS_MAX else text[:_SHOWN_CHARS_MAX] + "…"
    return (
        f"chat key {shown!r} is not of the form platform:kind:id "
        "(e.g. telegram:private:123, qq:group:456, telegram:group:-100123:7 for a topic)"
    )


@dataclass(frozen=True, slots=True)
class Picture:
    """A picture a message carries, kept by reference and fetched only to answer it.

    ``ref`` is what the platform needs to fetch it again (a Telegram ``file_id``, a QQ
    image URL), never a URL that holds a secret; ``placeholder`` is how the message text
    shows it (``[photo]``), so a note about it can take that place later.
    """

    ref: str
    placeholder: str


def voice_label(duration_s: float | None) -> str:
    """Return how a message's text shows a voice note: ``[voice 0:07]``, or ``[voice]``
    while its length is unknown (a QQ record says none until it is fetched)."""
    if duration_s is None:
        return "[voice]"
    minutes, seconds = divmod(max(0, round(duration_s)), 60)
    return f"[voice {minutes}:{seconds:02d}]"


@dataclass(frozen=True, slots=True)
class VoiceNote:
    """A voice note a message carries, kept by reference and fetched only to be heard.

    ``ref`` is what the platform fetches it by (a Telegram ``file_id``, the ``file`` of a
    QQ record for ``get_record``), never a URL that holds a secret; ``url`` is where a QQ
    record can be downloaded instead ("" if none). ``duration_s`` is what the platform
    says (``None`` when it says nothing); ``placeholder`` is how the text shows it until
    it is heard (:func:`voice_label`).
    """

    ref: str
    placeholder: str
    duration_s: float | None = None
    url: str = ""
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class StickerSeen:
    """A sticker a message carries, as its platform gave it.

    ``key`` tells the sticker apart wherever it is sent again (Telegram's
    ``file_unique_id``; empty where only its bytes can tell, as on QQ); ``ref`` is how to
    fetch or send it again (a Telegram ``file_id``, a QQ image URL). The rest is what a
    caption can be made of before the model has seen it.
    """

    key: str
    ref: str
    emoji: str = ""
    set_name: str = ""
    summary: str = ""
    thumb_ref: str = ""  # a picture standing for one that cannot be drawn (Telegram's
    # thumbnail of an animated or video sticker); "" = the sticker itself


@dataclass(frozen=True, slots=True)
class StickerRecord:
    """A sticker of a collection: what the prompt offers as ``s<id>`` and sends again."""

    id: int
    collection: str  # a chat key, or "global:<platform>"
    platform: str
    file_ref: str  # Telegram: a file_id; QQ: the file name of its bytes
    caption: str
    times_sent: int
    last_seen_at: datetime
    banned: bool = False
    thumb_ref: str = ""  # what the dashboard draws instead of ``file_ref``, if not ""

    @property
    def label(self) -> str:
        """The id the model and the admins use: ``s7``."""
        return f"s{self.id}"


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
    pictures: tuple[Picture, ...] = ()
    sticker: StickerSeen | None = None
    voice: VoiceNote | None = None


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
    pictures: tuple[Picture, ...] = ()
    image_note: str | None = None  # what the model saw in the pictures, once it saw them
    voice: VoiceNote | None = None
    transcript: str | None = None  # None: not heard yet; "": could not be heard

    @property
    def shown_text(self) -> str:
        """Return the text with its picture described as the model saw it, if it did.

        The note takes the place of the first picture's placeholder: ``[photo: 一只橘猫]``.
        """
        if not self.image_note or not self.pictures:
            return self.text
        seen = f"[photo: {self.image_note}]"
        placeholder = self.pictures[0].placeholder
        if placeholder in self.text:
            return self.text.replace(placeholder, seen, 1)
        return f"{seen} {self.text}"


@dataclass(frozen=True, slots=True)
class GatewaySession:
    """Where a platform's event stream stood, to resume it after a restart: the session,
    the sequence of the last event stored, and the bot's identity it was opened as."""

    session_id: str
    seq: int
    bot_id: str
    bot_name: str


@dataclass(frozen=True, slots=True)
class ChatActivity:
    """How much a chat has said and when it last did: a line of the dashboard's chat list."""

    chat: ChatKey
    message_count: int  # chatters' and the bot's
    last_message_at: datetime


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
class Jpeg:
    """A picture made ready for the model: a JPEG no larger than 1024 px on its long side."""

    data: bytes
    width: int
    height: int

    @property
    def data_url(self) -> str:
        """Return the picture inlined as a ``data:image/jpeg;base64,...`` URL."""
        return "data:image/jpeg;base64," + base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True, slots=True)
class ImageInput:
    """A picture given to the model, and the message it came in."""

    message_id: str
    jpeg: Jpeg

    @property
    def label(self) -> str:
        """Say which message the picture belongs to, so the model can write a note on it."""
        return f"Picture in message #{self.message_id}:"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asking to run one function, with its arguments as the JSON it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of an LLM request.

    A ``user`` message may carry pictures after its text; an ``assistant`` message may
    carry the ``tool_calls`` the model made; a ``tool`` message answers one of them by its
    ``tool_call_id``.
    """

    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    images: tuple[ImageInput, ...] = ()
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
class DaySummary:
    """What the LLM wrote down about one chat day."""

    summary: str  # absolute dates written in, never "today" or "tomorrow"
    topics: tuple[str, ...] = ()
    key_points: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EmbeddingSource:
    """A stored row whose text is to be embedded: what it is, which row, whose, what it says.

    ``kind`` names the table the row lives in: ``summary`` or ``fact``.
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
    partial: bool = False  # of a chat day not yet ended; the whole day's summary replaces it


@dataclass(frozen=True, slots=True)
class PersonNote:
    """What one day's summary learned about one person who wrote that day."""

    user_id: str  # the platform's sender id
    name: str  # the display name they wrote under that day
    facts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact about a person, kept in the one chat it was learned in."""

    id: int
    chat: ChatKey
    user_id: str
    user_name: str
    text: str
    source_day: date
    created_at: datetime
    is_deleted: bool = False
    deleted_at: datetime | None = None
    deleted_by: str | None = None


@dataclass(frozen=True, slots=True)
class KnownPerson:
    """A person of a chat with live facts, as ``/people`` lists them."""

    user_id: str
    user_name: str  # the name under their newest fact
    fact_count: int


@dataclass(frozen=True, slots=True)
class Usage:
    """What one LLM call cost in tokens: as its provider reported, or counted offline."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False  # the provider did not report it: counted offline


@dataclass(frozen=True, slots=True)
class TokenCount:
    """The tokens of some calls together, and how many of those calls were estimated."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenCount) -> TokenCount:
        return TokenCount(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated_calls + other.estimated_calls,
        )


@dataclass(frozen=True, slots=True)
class UsageRow:
    """The calls of one kind made for one chat on one chat day, and their tokens."""

    day: date
    chat: ChatKey
    kind: str  # "reply", "reply+memory", "nudge", "splitter", "summary"
    tokens: TokenCount
