"""Build what the LLM sees for one batch, within a token budget counted offline.

The system prompt holds the persona, the current local time, the chat and the output
contract, and is never cut. The user message holds the recent history, trimmed from
its oldest end, and the new batch. User text is only ever concatenated, never used as
a format template, so ``{``, ``}`` and ``%`` in it are harmless.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

from bot.models import ChatKey, ChatMessage, ImageInput, Jpeg, StoredMessage

MESSAGE_CHARS_MAX = 2000  # longest single message shown to the LLM
MESSAGE_CHARS_MIN = 100  # how far an oversized batch may shrink each message
_PER_MESSAGE_TOKENS = 4  # role and separators of one chat message
_LINE_TOKENS_MIN = 6  # the shortest history line, "[#1 01-02 03:04] A: x", and its newline
_TRUNCATED = "…[truncated]"
_WIDE: Final = frozenset({"W", "F"})  # East Asian wide and fullwidth: one token each
_ASCII_RUNS: Final = re.compile(r"[\x00-\x7f]+")


def estimate_tokens(text: str) -> int:
    """Estimate tokens without a tokenizer: one per CJK character, one per 4 others.

    Only the characters outside ASCII are looked up (a prompt is estimated line by line
    on every call, and most of a line's marks and names are ASCII).
    """
    if text.isascii():
        return math.ceil(len(text) / 4)
    others = _ASCII_RUNS.sub("", text)
    wide = sum(map(_WIDE.__contains__, map(unicodedata.east_asian_width, others)))
    return wide + math.ceil((len(text) - wide) / 4)


def estimate_prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    """Estimate the tokens of a whole request."""
    return sum(_PER_MESSAGE_TOKENS + estimate_tokens(m.content) for m in messages)


def image_tokens(jpeg: Jpeg) -> int:
    """Estimate a picture's tokens as OpenAI counts high detail: 85 + 170 per 512 px tile.

    The picture is first scaled so its short side is at most 768 px.
    """
    scale = min(1.0, 768 / min(jpeg.width, jpeg.height))
    width, height = jpeg.width * scale, jpeg.height * scale
    tiles = math.ceil(width / 512) * math.ceil(height / 512)
    return 85 + 170 * tiles


def history_limit(budget_tokens: int) -> int:
    """Return how many history messages could at most fit in ``budget_tokens``.

    Fetching that many lets the recent conversation fill whatever the persona and the
    recalled memory leave of the budget, so a prompt keeps its size as a chat grows old.
    """
    return budget_tokens // _LINE_TOKENS_MIN + 1


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to at most ``limit`` characters, marked as cut if it was."""
    return text if len(text) <= limit else text[: limit - len(_TRUNCATED)] + _TRUNCATED


@dataclass(frozen=True, slots=True)
class PromptInput:
    """Everything one batch's prompt is made of."""

    persona: str
    contract: str
    bot_name: str
    chat: ChatKey
    now: datetime
    zone: ZoneInfo
    budget_tokens: int
    batch: Sequence[StoredMessage]
    chat_title: str | None = None
    history: Sequence[StoredMessage] = ()
    unsaid: Sequence[str] = ()
    recalled: str = ""
    images: tuple[ImageInput, ...] = ()  # the batch's pictures, after the user text
    people: str = ""  # the "people here" part, already within its share of the budget
    stickers: str = ""  # the "stickers you can send" part
    reason: str = ""  # an initiative batch: why the bot writes, in place of new messages


@dataclass(frozen=True, slots=True)
class AssembledPrompt:
    """One batch's request and how many tokens its history and its batch took."""

    messages: list[ChatMessage]
    history_tokens: int
    batch_tokens: int


def describe_now(now: datetime, zone: ZoneInfo) -> str:
    """Say the local date, weekday and time, e.g. ``Sunday 2026-11-22 14:03``."""
    local = now.astimezone(zone)
    return f"{local:%A %Y-%m-%d %H:%M} ({zone.key})"


def _describe_chat(chat: ChatKey, title: str | None) -> str:
    if chat.is_group:
        named = f" called “{title}”" if title else ""
        return f"a {chat.platform} group chat{named}; several people talk, each line names them"
    return f"a private {chat.platform} chat with one person"


def system_prompt(spec: PromptInput) -> str:
    """Return the system prompt: persona, people here, stickers, time, chat, recalled memory,
    contract."""
    parts = [
        spec.persona.strip(),
        *([spec.people.strip()] if spec.people else []),
        *([spec.stickers.strip()] if spec.stickers else []),
        f"Now: {describe_now(spec.now, spec.zone)}.",
        f"This is {_describe_chat(spec.chat, spec.chat_title)}. You are {spec.bot_name}.",
    ]
    if spec.recalled:
        parts.append("What you remember that may help:\n" + spec.recalled.strip())
    parts.append(spec.contract.strip())
    return "\n\n".join(parts)


def _line(message: StoredMessage, *, zone: ZoneInfo, bot_name: str, limit: int) -> str:
    local = message.sent_at.astimezone(zone)
    who = f"{bot_name} (you)" if message.from_bot else message.sender_name
    quote = f" ↩#{message.reply_to_id}" if message.reply_to_id else ""
    text = clip(message.shown_text, limit)
    return f"[#{message.message_id} {local:%m-%d %H:%M}] {who}{quote}: {text}"


REASON_HEADING = "Nobody wrote: you are writing first, for this reason:"


def _batch_block(spec: PromptInput, limit: int) -> str:
    if spec.reason:
        return f"{REASON_HEADING}\n{clip(spec.reason, limit)}"
    lines = [_line(m, zone=spec.zone, bot_name=spec.bot_name, limit=limit) for m in spec.batch]
    return "New messages (answer these):\n" + "\n".join(lines)


def _unsaid_block(unsaid: Sequence[str]) -> str:
    if not unsaid:
        return ""
    said = "\n".join(f"- {text}" for text in unsaid)
    return (
        "You had planned to say the following, but did not send it because they wrote "
        "again; say it now only if it still fits:\n" + said
    )


def assemble_prompt(spec: PromptInput) -> AssembledPrompt:
    """Build the request for one batch and count what its history and batch took."""
    system = ChatMessage("system", system_prompt(spec))
    unsaid_text = _unsaid_block(spec.unsaid)
    remaining = (
        spec.budget_tokens
        - estimate_prompt_tokens([system])
        - _PER_MESSAGE_TOKENS
        - estimate_tokens(unsaid_text)
        - sum(image_tokens(image.jpeg) + estimate_tokens(image.label) for image in spec.images)
    )

    # The batch always goes in; if it alone is too big, shrink each of its messages.
    limit = MESSAGE_CHARS_MAX
    batch_text = _batch_block(spec, limit)
    while estimate_tokens(batch_text) > remaining and limit > MESSAGE_CHARS_MIN:
        limit = max(MESSAGE_CHARS_MIN, limit // 2)
        batch_text = _batch_block(spec, limit)
    batch_tokens = estimate_tokens(batch_text)
    remaining -= batch_tokens

    kept: list[str] = []
    for message in reversed(spec.history):
        line = _line(message, zone=spec.zone, bot_name=spec.bot_name, limit=MESSAGE_CHARS_MAX)
        cost = estimate_tokens(line) + 1
        if cost > remaining:
            break
        kept.append(line)
        remaining -= cost
    kept.reverse()

    sections = []
    if kept:
        sections.append("Recent conversation (oldest first):\n" + "\n".join(kept))
    if unsaid_text:
        sections.append(unsaid_text)
    sections.append(batch_text)
    messages = [system, ChatMessage("user", "\n\n".join(sections), images=spec.images)]
    history_tokens = sum(estimate_tokens(line) + 1 for line in kept)
    return AssembledPrompt(messages, history_tokens, batch_tokens)
