"""Turn a OneBot v11 message event into pacebot's :class:`~bot.models.IncomingMessage`.

Pure functions of the event: the raw segments are read here, not through nonebot's
matchers. An @bot anywhere, the bot's name or an alias anywhere, or a quote of a message
this process sent addresses the bot (the quote is resolved later, by the pipeline).
Non-text segments become short placeholders such as ``[image]`` or ``[card: title]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from html import unescape
from typing import Any, Final

from nonebot.adapters.onebot.v11 import (
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
    PrivateMessageEvent,
)

from bot.addressing import BotNames
from bot.models import ChatKey, ChatKind, IncomingMessage, Picture, StickerSeen, VoiceNote

PLATFORM_NAME: Final = "qq"
UNSUPPORTED: Final = "[unsupported message]"
NAME_LIMIT: Final = 60  # characters of a file name or card title shown in a placeholder
_CARD_PARSE_LIMIT: Final = 64_000  # larger card payloads are not parsed for a title
_XML_BRIEF = re.compile(r'\bbrief="([^"]{1,200})"')


def chat_key_of(event: MessageEvent) -> ChatKey | None:
    """Return the chat of a message: the group, not nonebot's per-user session."""
    if isinstance(event, GroupMessageEvent):
        return ChatKey(PLATFORM_NAME, ChatKind.GROUP, str(event.group_id))
    if isinstance(event, PrivateMessageEvent):
        return ChatKey(PLATFORM_NAME, ChatKind.PRIVATE, str(event.user_id))
    return None


def one_line(text: str, limit: int = NAME_LIMIT) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _card_title(payload: object) -> str | None:
    """Return the summary line of a QQ ``json`` card (its ``prompt``), if it has one."""
    if not isinstance(payload, str) or len(payload) > _CARD_PARSE_LIMIT:
        return None
    try:
        card = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(card, dict):
        return None
    prompt = card.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return one_line(prompt)
    return None


def _xml_title(payload: object) -> str | None:
    """Return the ``brief`` of a QQ ``xml`` card without parsing the XML."""
    if not isinstance(payload, str):
        return None
    found = _XML_BRIEF.search(payload[:_CARD_PARSE_LIMIT])
    if found is None:
        return None
    title = one_line(unescape(found.group(1)))
    return title or None


def _file_name(data: dict[str, Any]) -> str | None:
    for key in ("name", "file"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and "://" not in value:
            return one_line(value.replace("\\", "/").rsplit("/", 1)[-1])
    return None


def placeholder(segment: MessageSegment) -> str:
    """Describe a non-text segment in a few words; never fails."""
    kind, data = segment.type, segment.data if isinstance(segment.data, dict) else {}
    simple = {
        "face": "[face]",
        "record": "[voice]",  # its length is known once it is fetched
        "video": "[video]",
        "forward": "[forwarded messages]",
        "node": "[forwarded messages]",
        "poke": "[poke]",
        "shake": "[poke]",
        "rps": "[rock paper scissors]",
        "music": "[music]",
        "contact": "[contact]",
        "mface": "[sticker]",
        "location": "[location]",
    }
    if kind == "image":
        return "[sticker]" if is_sticker(segment) else "[image]"
    if kind == "dice":
        result = data.get("result")
        return f"[dice {result}]" if isinstance(result, (int, str)) and str(result) else "[dice]"
    if kind == "file":
        name = _file_name(data)
        return f"[file {name}]" if name else "[file]"
    if kind == "share":
        title = data.get("title")
        return (
            f"[link: {one_line(title)}]" if isinstance(title, str) and title.strip() else "[link]"
        )
    if kind in ("json", "xml"):
        title = _card_title(data.get("data")) if kind == "json" else _xml_title(data.get("data"))
        return f"[card: {title}]" if title else "[card]"
    return simple.get(kind, UNSUPPORTED)


@dataclass(frozen=True, slots=True)
class Rendered:
    """A message as text, with what the text alone no longer tells."""

    text: str  # what the chatter sees, placeholders included
    spoken: str  # only the typed words, for finding the bot's name
    mentions_bot: bool
    reply_to_id: str | None
    pictures: tuple[Picture, ...] = ()  # by URL, fetched only when a batch is answered


def picture_of(segment: MessageSegment) -> Picture | None:
    """Return an image segment's picture by its http(s) URL; ``None`` if it has none."""
    data = segment.data if isinstance(segment.data, dict) else {}
    if segment.type != "image":
        return None
    for key in ("url", "file"):
        value = data.get(key)
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            return Picture(value.strip(), placeholder(segment))
    return None


def voice_of(message: Message) -> VoiceNote | None:
    """Return the voice note of a message (its first ``record``): by the ``file`` that
    ``get_record`` takes, with the segment's http(s) URL to download it otherwise."""
    for segment in message:
        data = segment.data if isinstance(segment.data, dict) else {}
        if segment.type != "record":
            continue
        ref = data.get("file")
        url = data.get("url")
        size = data.get("file_size")
        web = isinstance(url, str) and url.startswith(("http://", "https://"))
        return VoiceNote(
            ref=ref if isinstance(ref, str) else "",
            placeholder=placeholder(segment),
            url=url.strip() if web and isinstance(url, str) else "",
            size_bytes=int(size) if isinstance(size, (int, str)) and str(size).isdigit() else None,
        )
    return None


def is_sticker(segment: MessageSegment) -> bool:
    """Tell whether a segment is a sticker: an image marked as one (``sub_type`` 1, or
    Lagrange's and go-cqhttp's ``subType`` 1), a market face (NapCat's image carrying an
    ``emoji_id``), or an ``mface``."""
    data = segment.data if isinstance(segment.data, dict) else {}
    if segment.type == "mface":
        return True
    marked = str(data.get("sub_type", data.get("subType", "0"))) == "1"
    return segment.type == "image" and (marked or "emoji_id" in data)


def sticker_of(message: Message) -> StickerSeen | None:
    """Return the first sticker of a message, by the URL its picture is fetched from."""
    for segment in message:
        data = segment.data if isinstance(segment.data, dict) else {}
        url = data.get("url")
        if is_sticker(segment) and isinstance(url, str) and url.startswith(("http://", "https://")):
            summary = data.get("summary")
            named = one_line(summary) if isinstance(summary, str) and summary.strip() else ""
            return StickerSeen(key="", ref=url.strip(), summary=named or "[动画表情]")
    return None


def render(message: Message, *, self_id: str, bot_name: str) -> Rendered:
    """Turn a segment array into text; drop an @bot that opens or closes the message.

    Leading and trailing @bot are addressing, not words (and ``@bot /status`` must still
    read as the command ``/status``); one in the middle of a sentence stays as ``@name``.
    """
    parts: list[tuple[str, str]] = []  # (kind, text); kind is "text", "at_bot" or "other"
    spoken: list[str] = []
    mentions_bot = False
    reply_to_id: str | None = None
    pictures: list[Picture] = []
    for segment in message:
        data = segment.data if isinstance(segment.data, dict) else {}
        if segment.type == "text":
            words = data.get("text")
            if isinstance(words, str) and words:
                parts.append(("text", words))
                spoken.append(words)
        elif segment.type == "reply":
            if reply_to_id is None and data.get("id") is not None:
                reply_to_id = str(data["id"])
        elif segment.type == "at":
            target = str(data.get("qq", ""))
            if target == self_id:
                mentions_bot = True
                parts.append(("at_bot", f"@{bot_name}"))
            elif target == "all":
                parts.append(("other", "@all"))
            else:
                name = data.get("name")
                shown = name.strip() if isinstance(name, str) and name.strip() else target
                parts.append(("other", f"@{one_line(shown)}"))
        else:
            parts.append(("other", placeholder(segment)))
            picture = picture_of(segment)
            if picture is not None:
                pictures.append(picture)

    def trim(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        while items and (items[0][0] == "at_bot" or not items[0][1].strip()):
            items = items[1:]
        return items

    trimmed = trim(parts)
    trimmed = list(reversed(trim(list(reversed(trimmed)))))
    pieces: list[str] = []
    previous_kind = "text"
    for kind, value in trimmed:
        touching = pieces and not pieces[-1][-1:].isspace() and not value[:1].isspace()
        if touching and (kind != "text" or previous_kind != "text"):
            pieces.append(" ")
        pieces.append(value)
        previous_kind = kind
    text = "".join(pieces).strip()
    if not text and mentions_bot:
        text = f"@{bot_name}"  # a bare "@bot": keep something the model can read
    return Rendered(text, "".join(spoken), mentions_bot, reply_to_id, tuple(pictures))


def _sender_is_bot(event: MessageEvent) -> bool:
    """Tell whether the event marks its sender as a bot (some implementations do)."""
    extra = event.sender.model_extra or {}
    return extra.get("is_robot") is True or extra.get("is_bot") is True


def _sender_name(event: MessageEvent) -> str:
    if isinstance(event, GroupMessageEvent) and event.anonymous is not None:
        return event.anonymous.name or "anonymous"
    for name in (event.sender.card, event.sender.nickname):
        if name and name.strip():
            return name.strip()
    return str(event.user_id)


def normalise(
    event: MessageEvent,
    *,
    names: BotNames,
) -> IncomingMessage | None:
    """Turn a OneBot message event into an ``IncomingMessage``; ``None`` if it is ignored.

    Ignored: the bot's own messages, senders the event marks as bots, group system
    notices and chats other than groups and private chats. A quote carries only the
    quoted id here; whether it quotes the bot, the pipeline looks up in the store.
    """
    chat = chat_key_of(event)
    if chat is None or event.user_id == event.self_id or _sender_is_bot(event):
        return None
    if isinstance(event, GroupMessageEvent) and event.sub_type == "notice":
        return None
    rendered = render(event.message, self_id=str(event.self_id), bot_name=names.name)
    title: str | None = None
    if chat.is_group:
        addresses_bot = rendered.mentions_bot or names.said_in(rendered.spoken)
        group_name = (event.model_extra or {}).get("group_name")
        title = group_name if isinstance(group_name, str) and group_name.strip() else None
    else:
        addresses_bot = True
    return IncomingMessage(
        chat=chat,
        message_id=str(event.message_id),
        sender_id=str(event.user_id),
        sender_name=_sender_name(event),
        text=rendered.text,
        sent_at=datetime.fromtimestamp(event.time, tz=UTC),
        addresses_bot=addresses_bot,
        reply_to_id=rendered.reply_to_id,
        chat_title=title,
        pictures=rendered.pictures,
        sticker=sticker_of(event.message),
        voice=voice_of(event.message),
    )
