"""Turn a message event of the QQ Open Platform into :class:`~bot.models.IncomingMessage`.

Pure functions of the event's raw ``d`` payload, as the gateway sent it: read here rather
than through the adapter's models, which drop a message whose author lacks a field they
require (``bot``, ``member_role``) and a voice note's ``voice_wav_url``.

- ``GROUP_AT_MESSAGE_CREATE`` (an @ of the bot) and ``GROUP_MESSAGE_CREATE`` (every
  message of a group whose owner granted it) are ``qqbot:group:<group_openid>``; the
  sender is the ``member_openid``. A group message addresses the bot when it is an @,
  when one of its ``mentions`` ``is_you``, or when it names the bot.
- ``C2C_MESSAGE_CREATE`` is ``qqbot:private:<user_openid>``.
- A sender is named by the ``username`` the event carries, else ``member 3f2a`` (the
  head of their openid). Other bots' messages are ignored.
- Mentions written into the text (``<@id>``) become ``@name`` (the bot's own at either
  end is addressing and dropped), QQ faces ``[face]``; pictures and voice notes are kept
  by URL and shown as ``[image]`` and ``[voice]``, other files as ``[file name]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from bot.addressing import BotNames
from bot.models import ChatKey, ChatKind, IncomingMessage, Picture, VoiceNote

PLATFORM_NAME: Final = "qqbot"
GROUP_AT: Final = "GROUP_AT_MESSAGE_CREATE"
GROUP_MESSAGE: Final = "GROUP_MESSAGE_CREATE"
C2C_MESSAGE: Final = "C2C_MESSAGE_CREATE"
MESSAGE_EVENTS: Final = frozenset({GROUP_AT, GROUP_MESSAGE, C2C_MESSAGE})
_MENTION = re.compile(r"<@!?([A-Za-z0-9_-]{1,64})>")
_FACE = re.compile(r"<faceType=[^>]{0,300}>")
_HEAD_CHARS: Final = 4  # of an openid, in the name of someone who gave none


def chat_key_of(event_type: str, data: Mapping[str, Any]) -> ChatKey | None:
    """Return the chat of a message event: the group, or the person in C2C."""
    if event_type in (GROUP_AT, GROUP_MESSAGE):
        group = data.get("group_openid") or data.get("group_id")
        return ChatKey(PLATFORM_NAME, ChatKind.GROUP, str(group)) if _word(group) else None
    if event_type == C2C_MESSAGE:
        person = _author(data).get("user_openid") or _author(data).get("id")
        return ChatKey(PLATFORM_NAME, ChatKind.PRIVATE, str(person)) if _word(person) else None
    return None


def sender_of(event_type: str, data: Mapping[str, Any]) -> str | None:
    """Return who wrote a message event: their ``member_openid`` in a group, their
    ``user_openid`` in C2C."""
    author = _author(data)
    key = "user_openid" if event_type == C2C_MESSAGE else "member_openid"
    sender = author.get(key) or author.get("id")
    return str(sender) if _word(sender) else None


def name_of(author: Mapping[str, Any], openid: str) -> str:
    """Name a sender: their ``username`` if the event carries one, else ``member 3f2a``."""
    username = author.get("username")
    if isinstance(username, str) and username.strip():
        return " ".join(username.split())[:60]
    return f"member {openid[:_HEAD_CHARS].lower()}"


def normalise(
    event_type: str,
    data: Mapping[str, Any],
    *,
    names: BotNames,
    all_group_messages: bool = True,
) -> IncomingMessage | None:
    """Turn a message event into an ``IncomingMessage``; ``None`` if it is ignored.

    Ignored: events that are not messages, other bots' messages, and (without
    ``all_group_messages``) a group's messages that do not address the bot.
    """
    chat = chat_key_of(event_type, data)
    sender = sender_of(event_type, data)
    message_id = data.get("id")
    if chat is None or sender is None or not isinstance(message_id, str) or not message_id:
        return None
    author = _author(data)
    if author.get("bot") is True:
        return None
    mentions = _mentions(data)
    text, named_me = _text(data, mentions)
    pictures, voice, shown = _attachments(data)
    text = " ".join(part for part in (text, *shown) if part)
    if chat.is_group:
        addresses = event_type == GROUP_AT or named_me or names.said_in(text)
        if not addresses and not all_group_messages:
            return None
    else:
        addresses = True
    return IncomingMessage(
        chat=chat,
        message_id=message_id,
        sender_id=sender,
        sender_name=name_of(author, sender),
        text=text or ("@" + names.name if addresses and chat.is_group else ""),
        sent_at=_sent_at(data.get("timestamp")),
        addresses_bot=addresses,
        pictures=pictures,
        voice=voice,
    )


def _author(data: Mapping[str, Any]) -> Mapping[str, Any]:
    author = data.get("author")
    return author if isinstance(author, Mapping) else {}


def _word(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_]{1,64}", value) is not None


def _mentions(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    mentions = data.get("mentions")
    if not isinstance(mentions, list):
        return []
    return [mention for mention in mentions if isinstance(mention, Mapping)]


def _text(data: Mapping[str, Any], mentions: list[Mapping[str, Any]]) -> tuple[str, bool]:
    """Return the words of a message and whether one of its mentions is of the bot."""
    content = data.get("content")
    words = content if isinstance(content, str) else ""
    mine = {
        str(mention.get(key))
        for mention in mentions
        if mention.get("is_you") is True
        for key in ("id", "member_openid")
        if mention.get(key)
    }
    named = {
        str(mention.get(key)): str(mention.get("username") or "")
        for mention in mentions
        for key in ("id", "member_openid")
        if mention.get(key)
    }
    words = _FACE.sub("[face]", words).strip()
    # The bot's own @ at either end is addressing, not words.
    for _ in range(2):
        leading = _MENTION.match(words)
        if leading is not None and leading.group(1) in mine:
            words = words[leading.end() :].strip()
        trailing = re.search(_MENTION.pattern + r"\s*$", words)
        if trailing is not None and trailing.group(1) in mine:
            words = words[: trailing.start()].strip()

    def shown(match: re.Match[str]) -> str:
        who = named.get(match.group(1)) or "someone"
        return f"@{' '.join(who.split())[:60]}"

    return _MENTION.sub(shown, words), bool(mine)


def _attachments(
    data: Mapping[str, Any],
) -> tuple[tuple[Picture, ...], VoiceNote | None, list[str]]:
    """Return a message's pictures, its voice note and how the text shows each file."""
    attachments = data.get("attachments")
    if not isinstance(attachments, list):
        return (), None, []
    pictures: list[Picture] = []
    voice: VoiceNote | None = None
    shown: list[str] = []
    for attachment in attachments:
        if not isinstance(attachment, Mapping):
            continue
        kind = str(attachment.get("content_type") or "")
        url = _web_url(attachment.get("url"))
        if kind.startswith("image/"):
            shown.append("[image]")
            if url:
                pictures.append(Picture(url, "[image]"))
        elif kind == "voice":
            shown.append("[voice]")
            wav = _web_url(attachment.get("voice_wav_url"))
            if voice is None and (url or wav):
                size = attachment.get("size")
                voice = VoiceNote(
                    ref=url or wav,
                    placeholder="[voice]",
                    url=wav or url,
                    size_bytes=size if isinstance(size, int) and size >= 0 else None,
                )
        elif kind.startswith("video/"):
            shown.append("[video]")
        else:
            name = attachment.get("filename")
            named = isinstance(name, str) and name.strip()
            shown.append(f"[file {' '.join(str(name).split())[:60]}]" if named else "[file]")
    return tuple(pictures), voice, shown


def _web_url(value: object) -> str:
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return value.strip()
    return ""


def _sent_at(value: object) -> datetime:
    """Read the platform's RFC 3339 time (``2026-11-28T20:15:03+08:00``); now if absent."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    return datetime.now(UTC)
