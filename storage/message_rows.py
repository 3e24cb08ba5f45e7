"""How a ``messages`` row reads and writes: its columns, and the JSON of its pictures and
voice note.

:mod:`storage.messages` keeps the log with these; :mod:`storage.batches` reads a batch's
messages back through :func:`stored_message`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from bot.models import ChatKey, IncomingMessage, Picture, StoredMessage, VoiceNote
from storage.values import aware, clean, unix

MESSAGE_COLUMNS = (
    "chat_key, message_id, sender_id, sender_name, text, sent_at, from_bot, "
    "addresses_bot, reply_to_id, pictures, image_note, voice, transcript"
)
"""The ``messages`` columns :func:`stored_message` reads."""


def _pictures_json(pictures: Sequence[Picture]) -> str | None:
    """Return a message's pictures as the ``pictures`` column holds them; ``None`` if none."""
    if not pictures:
        return None
    return json.dumps(
        [{"ref": clean(p.ref), "placeholder": clean(p.placeholder)} for p in pictures],
        ensure_ascii=False,
    )


def _pictures_of(column: str | None) -> tuple[Picture, ...]:
    """Read the ``pictures`` column back; a row written before pictures has none."""
    if not column:
        return ()
    return tuple(Picture(item["ref"], item["placeholder"]) for item in json.loads(column))


def voice_json(note: VoiceNote | None) -> str | None:
    """Return a message's voice note as the ``voice`` column holds it; ``None`` if none."""
    if note is None:
        return None
    return json.dumps(
        {
            "ref": clean(note.ref),
            "placeholder": clean(note.placeholder),
            "duration_s": note.duration_s,
            "url": clean(note.url),
            "size_bytes": note.size_bytes,
        },
        ensure_ascii=False,
    )


def _voice_of(column: str | None) -> VoiceNote | None:
    """Read the ``voice`` column back; a row written before voice has none."""
    if not column:
        return None
    note = json.loads(column)
    return VoiceNote(
        note["ref"], note["placeholder"], note["duration_s"], note["url"], note["size_bytes"]
    )


def stored_message(row: sqlite3.Row, chat: ChatKey) -> StoredMessage:
    """Build a message of ``chat`` from a row of :data:`MESSAGE_COLUMNS`."""
    return StoredMessage(
        chat=chat,
        message_id=row["message_id"],
        sender_id=row["sender_id"],
        sender_name=row["sender_name"],
        text=row["text"],
        sent_at=aware(row["sent_at"]),
        from_bot=bool(row["from_bot"]),
        addresses_bot=bool(row["addresses_bot"]),
        reply_to_id=row["reply_to_id"],
        pictures=_pictures_of(row["pictures"]),
        image_note=row["image_note"],
        voice=_voice_of(row["voice"]),
        transcript=row["transcript"],
    )


INSERTED_COLUMNS = (
    "chat_key, message_id, sender_id, sender_name, text, sent_at, received_at, from_bot,"
    " addresses_bot, reply_to_id, pictures, voice"
)
ROW_PLACEHOLDERS = "(?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)"
# Rows per INSERT: a whole page (getUpdates gives 100, a QQ hand-over 500) in one round
# trip. 5,500 parameters: RETURNING needs SQLite 3.35, whose limit is 32,766.
INSERT_ROWS = 500


def inserted_row(message: IncomingMessage, received_at_s: float) -> tuple[object, ...]:
    """Return the values of :data:`ROW_PLACEHOLDERS` for a chatter's message."""
    return (
        str(message.chat),
        message.message_id,
        message.sender_id,
        clean(message.sender_name),
        clean(message.text),
        unix(message.sent_at, "sent_at"),
        received_at_s,
        message.addresses_bot,
        message.reply_to_id,
        _pictures_json(message.pictures),
        voice_json(message.voice),
    )
