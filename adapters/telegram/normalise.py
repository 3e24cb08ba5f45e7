"""Turn PTB's ``Message`` into pacebot's own :class:`~bot.models.IncomingMessage`.

Pure functions, no I/O: the core never sees a library type. Non-text content becomes a
short placeholder, a forwarded message is marked as such, and a group message counts as
addressed to the bot when it mentions it, quotes it, names it or an alias, or carries a
command meant for it.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

from telegram import Audio, Message, MessageEntity, PhotoSize, Voice
from telegram.constants import ChatType

from bot.addressing import BotNames
from bot.models import (
    ChatKey,
    ChatKind,
    IncomingMessage,
    Picture,
    StickerSeen,
    VoiceNote,
    voice_label,
)

PLATFORM_NAME: Final = "telegram"

UNSUPPORTED: Final = "[unsupported message]"
FORWARDED_PREFIX: Final = "[forwarded] "

# The model sees pictures at most this large on their long side: a photo's smallest size
# that still covers it is downloaded, not the original.
WANTED_LONG_SIDE_PX: Final = 1024
# Documents the model can look at; an animation (a GIF sent as video) is not one.
_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif", "image/bmp"})

# A command addressed to one bot in particular: ``/status@some_bot args``.
_ADDRESSED_COMMAND = re.compile(r"^(/[A-Za-z0-9_]+)@([A-Za-z0-9_]+)(?=\s|$)")

# Fields that only service messages carry (joins, pins, title changes, payments, ...).
# A message with none of these and no content we understand is shown as unsupported.
_SERVICE_FIELDS: Final = frozenset(
    {
        "new_chat_members",
        "left_chat_member",
        "new_chat_title",
        "new_chat_photo",
        "delete_chat_photo",
        "group_chat_created",
        "supergroup_chat_created",
        "channel_chat_created",
        "message_auto_delete_timer_changed",
        "migrate_to_chat_id",
        "migrate_from_chat_id",
        "pinned_message",
        "successful_payment",
        "refunded_payment",
        "users_shared",
        "chat_shared",
        "connected_website",
        "write_access_allowed",
        "passport_data",
        "proximity_alert_triggered",
        "boost_added",
        "chat_background_set",
        "chat_owner_changed",
        "chat_owner_left",
        "checklist_tasks_done",
        "checklist_tasks_added",
        "direct_message_price_changed",
        "forum_topic_created",
        "forum_topic_edited",
        "forum_topic_closed",
        "forum_topic_reopened",
        "general_forum_topic_hidden",
        "general_forum_topic_unhidden",
        "gift",
        "gift_upgrade_sent",
        "unique_gift",
        "giveaway_created",
        "giveaway_completed",
        "managed_bot_created",
        "paid_message_price_changed",
        "poll_option_added",
        "poll_option_deleted",
        "suggested_post_approved",
        "suggested_post_approval_failed",
        "suggested_post_declined",
        "suggested_post_paid",
        "suggested_post_refunded",
        "video_chat_scheduled",
        "video_chat_started",
        "video_chat_ended",
        "video_chat_participants_invited",
        "web_app_data",
    }
)


def chat_key_of(message: Message) -> ChatKey | None:
    """Return the chat key of a message; ``None`` for channels and unknown chat types.

    A message in a forum topic belongs to that topic's chat. Only ``is_topic_message``
    says so: outside topics (the General topic, groups without topics) Telegram still
    sets ``message_thread_id`` on replies, to a thread no message can be sent to.
    """
    chat = message.chat
    thread = message.message_thread_id if message.is_topic_message else None
    topic = "" if thread is None else str(thread)
    if chat.type == ChatType.PRIVATE:
        return ChatKey(PLATFORM_NAME, ChatKind.PRIVATE, str(chat.id), topic)
    if chat.type in (ChatType.GROUP, ChatType.SUPERGROUP):
        return ChatKey(PLATFORM_NAME, ChatKind.GROUP, str(chat.id), topic)
    return None


def _placeholder(message: Message) -> str | None:
    """Describe non-text content in a few words; ``None`` if there is none we know."""
    # Order matters: an animation also carries a document, a venue also a location.
    if message.photo:
        return "[photo]"
    if message.sticker:
        emoji = message.sticker.emoji
        return f"[sticker {emoji}]" if emoji else "[sticker]"
    if message.voice:
        return voice_label(_seconds(message.voice))
    if message.audio:
        title = " – ".join(p for p in (message.audio.performer, message.audio.title) if p)
        return f"[audio: {title}]" if title else "[audio]"
    if message.animation:
        return "[GIF]"
    if message.video:
        return "[video]"
    if message.video_note:
        return "[video message]"
    if message.document:
        name = message.document.file_name
        return f"[file {name}]" if name else "[file]"
    if message.venue:
        return f"[venue: {message.venue.title}]"
    if message.location:
        return "[location]"
    if message.contact:
        name = " ".join(p for p in (message.contact.first_name, message.contact.last_name) if p)
        return f"[contact: {name}]" if name else "[contact]"
    if message.poll:
        return f"[poll: {message.poll.question}]"
    if message.dice:
        return f"[dice {message.dice.emoji} {message.dice.value}]"
    return None


def _best_size(sizes: tuple[PhotoSize, ...]) -> PhotoSize:
    """Return the smallest size of a photo that covers what the model sees, else the largest."""
    covering = [s for s in sizes if max(s.width, s.height) >= WANTED_LONG_SIDE_PX]
    if covering:
        return min(covering, key=lambda s: s.width * s.height)
    return max(sizes, key=lambda s: s.width * s.height)


def _pictures(message: Message, placeholder: str) -> tuple[Picture, ...]:
    """Return the picture the model could look at: a photo, a static sticker, an image file.

    Only the ``file_id`` is kept: the picture is fetched when the batch is answered, and
    only if ``llm.vision`` is on.
    """
    if message.photo:
        return (Picture(_best_size(message.photo).file_id, placeholder),)
    sticker = message.sticker
    if sticker is not None and not sticker.is_animated and not sticker.is_video:
        return (Picture(sticker.file_id, placeholder),)
    document = message.document
    is_image = document is not None and (document.mime_type or "").lower() in _IMAGE_TYPES
    if message.animation is None and document is not None and is_image:
        return (Picture(document.file_id, placeholder),)
    return ()


def _seconds(file: Voice | Audio) -> float | None:
    """Return a voice note's or audio file's length in seconds (PTB gives a ``timedelta``
    once opted into, an ``int`` before)."""
    duration: object = file.duration
    if isinstance(duration, timedelta):
        return duration.total_seconds()
    return float(duration) if isinstance(duration, int | float) else None


def _voice(message: Message, placeholder: str) -> VoiceNote | None:
    """Return the voice note (or audio file) a message is, kept by its ``file_id``."""
    file = message.voice or message.audio
    if file is None:
        return None
    return VoiceNote(file.file_id, placeholder, _seconds(file), size_bytes=file.file_size)


def _sticker(message: Message) -> StickerSeen | None:
    """Return the sticker a message is, kept by ``file_unique_id`` and sent by ``file_id``
    (an animated or video one with its thumbnail, for the dashboard to draw)."""
    sticker = message.sticker
    if sticker is None:
        return None
    drawn_from_thumbnail = sticker.is_animated or sticker.is_video
    thumbnail = sticker.thumbnail if drawn_from_thumbnail else None
    return StickerSeen(
        key=sticker.file_unique_id,
        ref=sticker.file_id,
        emoji=sticker.emoji or "",
        set_name=sticker.set_name or "",
        thumb_ref=thumbnail.file_id if thumbnail is not None else "",
    )


def _is_service(message: Message) -> bool:
    """Tell whether a message is a service message (someone joined, a pin, a new title)."""
    fields = message.to_dict()  # includes fields PTB does not know yet (api_kwargs)
    return any(fields.get(name) for name in _SERVICE_FIELDS)


def _sender(message: Message) -> tuple[str, str] | None:
    """Return ``(sender_id, sender_name)``; ``None`` for bots and messages without a sender.

    An anonymous group admin or a message posted "as a channel" comes from a helper bot
    account with ``sender_chat`` set: the chat is the real sender, so it is kept.
    """
    if message.sender_chat is not None:
        title = message.sender_chat.title or message.sender_chat.username
        return str(message.sender_chat.id), title or str(message.sender_chat.id)
    user = message.from_user
    if user is None or user.is_bot:
        return None
    name = (user.full_name or "").strip() or user.username or str(user.id)
    return str(user.id), name


def _mentions_bot(message: Message, *, bot_id: int | None, bot_username: str | None) -> bool:
    """Tell whether an entity of the text or caption names the bot."""
    types: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]
    entities = {**message.parse_entities(types), **message.parse_caption_entities(types)}
    handle = f"@{bot_username}".casefold() if bot_username else None
    for entity, text in entities.items():
        if entity.type == MessageEntity.MENTION and handle and text.casefold() == handle:
            return True
        if (
            entity.type == MessageEntity.TEXT_MENTION
            and entity.user is not None
            and bot_id is not None
            and entity.user.id == bot_id
        ):
            return True
    return False


def _replied_to(message: Message) -> Message | None:
    """Return the message this one quotes, ignoring the implicit forum-topic root."""
    parent = message.reply_to_message
    if parent is None or parent.forum_topic_created is not None:
        return None
    return parent


def normalise(
    message: Message,
    *,
    bot_id: int | None,
    bot_username: str | None,
    names: BotNames,
) -> IncomingMessage | None:
    """Turn a Telegram message into an ``IncomingMessage``; ``None`` if the bot ignores it.

    Ignored: channels, bots (the bot itself included), service messages and commands
    meant for another bot (``/cmd@otherbot``).
    """
    chat = chat_key_of(message)
    if chat is None:
        return None
    sender = _sender(message)
    if sender is None:
        return None

    original = message.text or message.caption or ""
    addressed_by_command = False
    pictures: tuple[Picture, ...] = ()
    voice: VoiceNote | None = None
    if message.text:
        text = message.text
        command = _ADDRESSED_COMMAND.match(text)
        if command is not None:
            if bot_username is None or command.group(2).casefold() != bot_username.casefold():
                return None
            text = command.group(1) + text[command.end() :]
            addressed_by_command = True
    else:
        placeholder = _placeholder(message)
        if placeholder is None:
            if _is_service(message):
                return None
            placeholder = UNSUPPORTED
        pictures = _pictures(message, placeholder)
        voice = _voice(message, placeholder)
        text = f"{placeholder} {message.caption}" if message.caption else placeholder
    if message.forward_origin is not None:
        text = FORWARDED_PREFIX + text

    parent = _replied_to(message)
    if chat.kind is ChatKind.PRIVATE:
        addresses_bot = True
    else:
        addresses_bot = (
            addressed_by_command
            or _mentions_bot(message, bot_id=bot_id, bot_username=bot_username)
            or (
                parent is not None
                and parent.from_user is not None
                and bot_id is not None
                and parent.from_user.id == bot_id
            )
            or names.said_in(original)
        )

    sender_id, sender_name = sender
    return IncomingMessage(
        chat=chat,
        message_id=str(message.message_id),
        sender_id=sender_id,
        sender_name=sender_name,
        text=text,
        sent_at=message.date,
        addresses_bot=addresses_bot,
        reply_to_id=str(parent.message_id) if parent is not None else None,
        chat_title=message.chat.title,
        pictures=pictures,
        sticker=_sticker(message),
        voice=voice,
    )
