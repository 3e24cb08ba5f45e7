"""What a batch can be answered with: one item per element of ``replies``.

An item is exactly one of a text (``content``), a reaction on a message (``react`` with
``to``), a sticker of the chat's collection (``sticker``), a voice note (``voice``) or a
promise to come back later (``later``). The first four go through the outbox to the
platform as :data:`Outgoing`; a ``later`` is never sent, it is kept. In the outbox each
outgoing item is its kind and two values: ``content`` (the text, the emoji, the sticker's
id, the words to speak) and ``reply_to`` (the message a text quotes, the message a
reaction lands on). A :class:`Reply` is an item as the plan gave it, with its delay; a
:class:`PlannedReply` one with its due time; an :class:`OutboxItem` one in the outbox.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, TypeAlias

from bot.models import ChatKey


class ItemKind(enum.StrEnum):
    """The kinds of item, named by the key that gives an item its kind."""

    CONTENT = "content"
    REACT = "react"
    STICKER = "sticker"
    VOICE = "voice"
    LATER = "later"


@dataclass(frozen=True, slots=True)
class Text:
    """A text message, quoting ``reply_to`` if given."""

    kind: ClassVar[ItemKind] = ItemKind.CONTENT
    content: str
    reply_to: str | None = None


@dataclass(frozen=True, slots=True)
class Reaction:
    """An emoji reaction on the message ``to``."""

    kind: ClassVar[ItemKind] = ItemKind.REACT
    emoji: str
    to: str


@dataclass(frozen=True, slots=True)
class Sticker:
    """A sticker of the chat's collection, by its id there (``s7``).

    ``file_ref`` is filled in just before it is sent: what the platform sends it by.
    """

    kind: ClassVar[ItemKind] = ItemKind.STICKER
    sticker_id: str
    file_ref: str = ""


@dataclass(frozen=True, slots=True)
class Voice:
    """Words to be spoken as a voice note.

    ``audio`` (in the format the platform sends) and its length are filled in just before
    it is sent; the outbox keeps only the words.
    """

    kind: ClassVar[ItemKind] = ItemKind.VOICE
    text: str
    audio: bytes = field(default=b"", repr=False, compare=False)
    duration_s: float | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Later:
    """A promise to come back to the chat: at a local time or after some seconds."""

    kind: ClassVar[ItemKind] = ItemKind.LATER
    note: str
    purpose: str = "remind"  # its "kind" in the plan: "remind" (always kept) or "followup"
    at: str | None = None  # "YYYY-MM-DD HH:MM" in bot.timezone
    in_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """An item of a reply plan that was not sent, and why."""

    kind: str  # "content", "react", …; "?" when it had none
    reason: str


Outgoing: TypeAlias = Text | Reaction | Sticker | Voice
"""An item that goes through the outbox to a platform."""
Item: TypeAlias = Outgoing | Later
"""Any item of a reply plan."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One item of the LLM's reply plan and the wait before it."""

    item: Item
    send_delay_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class PlannedReply:
    """An item ready for the outbox, when it is due (wall clock) and, where the platform
    wants replies to name it (:class:`~bot.ports.RepliesWithin`), the message it answers."""

    item: Outgoing
    due_at: datetime
    answers: str | None = None


class OutboxState(enum.StrEnum):
    """The life of a reply: ``scheduled → sending → sent | cancelled | dropped``."""

    SCHEDULED = "scheduled"
    SENDING = "sending"
    SENT = "sent"
    CANCELLED = "cancelled"
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """An item in the durable outbox."""

    id: int
    chat: ChatKey
    batch_id: int
    seq: int
    item: Outgoing
    due_at: datetime
    state: OutboxState
    answers: str | None = None  # the message it answers, on a platform that wants it named


def to_row(item: Outgoing) -> tuple[ItemKind, str, str | None]:
    """Return how the outbox keeps ``item``: its kind, its content and what it refers to."""
    match item:
        case Text(content, reply_to):
            return ItemKind.CONTENT, content, reply_to
        case Reaction(emoji, to):
            return ItemKind.REACT, emoji, to
        case Sticker(sticker_id, _):
            return ItemKind.STICKER, sticker_id, None
        case Voice(text, _, _):
            return ItemKind.VOICE, text, None


def from_row(kind: str, content: str, reply_to: str | None) -> Outgoing:
    """Rebuild an outgoing item from its outbox row (see :func:`to_row`)."""
    match ItemKind(kind):
        case ItemKind.CONTENT:
            return Text(content, reply_to)
        case ItemKind.REACT:
            return Reaction(content, reply_to or "")
        case ItemKind.STICKER:
            return Sticker(content)
        case ItemKind.VOICE:
            return Voice(content)
        case ItemKind.LATER:
            msg = "a later item is never in the outbox"
            raise ValueError(msg)


def said(item: Outgoing) -> str | None:
    """Return what the chat's history keeps of ``item`` once sent; ``None`` for a reaction,
    which is no message of its own."""
    match item:
        case Text(content) | Voice(content, _, _):
            return content
        case Sticker(sticker_id, _):
            return f"[sticker {sticker_id}]"
        case Reaction():
            return None
