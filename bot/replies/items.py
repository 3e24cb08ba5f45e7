"""What a batch can be answered with: one item per element of ``replies``.

An item is exactly one of a text (``content``), a reaction on a message (``react`` with
``to``), a sticker of the chat's collection (``sticker``), a voice note (``voice``) or a
promise to come back later (``later``). The first four go through the outbox to the
platform as :data:`Outgoing`; a ``later`` is never sent, it is kept. In the outbox each
outgoing item is its kind and two values: ``content`` (the text, the emoji, the sticker's
id, the words to speak) and ``reply_to`` (the message a text quotes, the message a
reaction lands on).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias


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

    content: str
    reply_to: str | None = None

    @property
    def kind(self) -> ItemKind:
        return ItemKind.CONTENT


@dataclass(frozen=True, slots=True)
class Reaction:
    """An emoji reaction on the message ``to``."""

    emoji: str
    to: str

    @property
    def kind(self) -> ItemKind:
        return ItemKind.REACT


@dataclass(frozen=True, slots=True)
class Sticker:
    """A sticker of the chat's collection, by its id there."""

    sticker_id: str

    @property
    def kind(self) -> ItemKind:
        return ItemKind.STICKER


@dataclass(frozen=True, slots=True)
class Voice:
    """Words to be spoken as a voice note."""

    text: str

    @property
    def kind(self) -> ItemKind:
        return ItemKind.VOICE


@dataclass(frozen=True, slots=True)
class Later:
    """A promise to come back to the chat: at a local time or after some seconds."""

    note: str
    purpose: str = "remind"  # its "kind" in the plan: "remind" (always kept) or "followup"
    at: str | None = None  # "YYYY-MM-DD HH:MM" in bot.timezone
    in_seconds: float | None = None

    @property
    def kind(self) -> ItemKind:
        return ItemKind.LATER


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """An item of a reply plan that was not sent, and why."""

    kind: str  # "content", "react", …; "?" when it had none
    reason: str


Outgoing: TypeAlias = Text | Reaction | Sticker | Voice
"""An item that goes through the outbox to a platform."""
Item: TypeAlias = Outgoing | Later
"""Any item of a reply plan."""


def to_row(item: Outgoing) -> tuple[ItemKind, str, str | None]:
    """Return how the outbox keeps ``item``: its kind, its content and what it refers to."""
    match item:
        case Text(content, reply_to):
            return ItemKind.CONTENT, content, reply_to
        case Reaction(emoji, to):
            return ItemKind.REACT, emoji, to
        case Sticker(sticker_id):
            return ItemKind.STICKER, sticker_id, None
        case Voice(text):
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
        case Text(content) | Voice(content):
            return content
        case Sticker(sticker_id):
            return f"[sticker {sticker_id}]"
        case Reaction():
            return None
