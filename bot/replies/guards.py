"""What the bot must not send, whatever the model planned (pure, no I/O).

- **Repeats**: a text equal to one of the bot's last ``REPEATS_REMEMBERED`` words in the
  chat (spaces aside) is dropped: a model stuck on one line, or talking to another bot,
  says it once.
- **Links on QQ**: with ``qq.strip_urls``, every link in an outgoing text becomes
  ``[link]``; links are a frequent cause of Tencent's risk control.
- **The prompt**, after tool results were read: a text holding a whole line of the system
  prompt (the persona, a summary, the contract) is dropped, whatever a result asked for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.replies.items import DroppedItem, Reply, Text

REPEATS_REMEMBERED = 3
PROMPT_LINE_CHARS_MIN = 16
"""A line of the system prompt this long or longer counts as the prompt if repeated."""
PROMPT_REASON = "repeats a line of the system prompt after reading tool results"
REPEAT_REASON = f"repeats one of the bot's last {REPEATS_REMEMBERED} messages here"
LINK = "[link]"
# A URL's own characters only: the Chinese right after a link is not part of it.
_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]"
_LINK_RE = re.compile(
    rf"(?:https?://|www\.){_URL_CHARS}+"
    rf"|\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:com|cn|net|org|io|me|cc|top|xyz|info|co"
    rf"|tv|gg|app|dev|ai|ly|link|site|edu|gov)\b(?:/{_URL_CHARS}*)?",
    re.IGNORECASE,
)


def _same(text: str) -> str:
    return " ".join(text.split())


def without_repeats(
    replies: Sequence[Reply], bot_said: Sequence[str]
) -> tuple[list[Reply], list[DroppedItem]]:
    """Drop each text equal to one of ``bot_said`` (the bot's latest words, newest last)."""
    recent = {_same(text) for text in bot_said[-REPEATS_REMEMBERED:]}
    kept: list[Reply] = []
    dropped: list[DroppedItem] = []
    for reply in replies:
        item = reply.item
        if isinstance(item, Text) and _same(item.content) in recent:
            dropped.append(DroppedItem(item.kind, REPEAT_REASON))
        else:
            kept.append(reply)
    return kept, dropped


def without_links(replies: Sequence[Reply]) -> tuple[list[Reply], int]:
    """Replace every link in the texts with ``[link]``; return them and how many went."""
    kept: list[Reply] = []
    replaced = 0
    for reply in replies:
        item = reply.item
        if isinstance(item, Text):
            content, count = _LINK_RE.subn(LINK, item.content)
            if count:
                replaced += count
                reply = Reply(Text(content, item.reply_to), reply.send_delay_seconds)
        kept.append(reply)
    return kept, replaced


def prompt_lines(system: str) -> frozenset[str]:
    """Return the lines of a system prompt long enough to tell it by, spaces evened."""
    lines = (_same(line) for line in system.splitlines())
    return frozenset(line for line in lines if len(line) >= PROMPT_LINE_CHARS_MIN)


def repeats_prompt(text: str, lines: frozenset[str]) -> bool:
    """Tell whether ``text`` holds a whole line of the system prompt."""
    flat = _same(text)
    return any(line in flat for line in lines)


def without_prompt(
    replies: Sequence[Reply], lines: frozenset[str]
) -> tuple[list[Reply], list[DroppedItem]]:
    """Drop each text that repeats a line of the system prompt (``prompt_lines``)."""
    kept: list[Reply] = []
    dropped: list[DroppedItem] = []
    for reply in replies:
        item = reply.item
        if isinstance(item, Text) and repeats_prompt(item.content, lines):
            dropped.append(DroppedItem(item.kind, PROMPT_REASON))
        else:
            kept.append(reply)
    return kept, dropped
