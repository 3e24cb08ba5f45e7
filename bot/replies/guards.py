"""What the bot must not send, whatever the model planned (pure, no I/O).

- **Repeats**: a text equal to one of the bot's last ``REPEATS_REMEMBERED`` words in the
  chat (spaces aside) is dropped: a model stuck on one line, or talking to another bot,
  says it once.
- **Links on QQ**: with ``qq.strip_urls``, every link in an outgoing text becomes
  ``[link]``; links are a frequent cause of Tencent's risk control.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.replies.items import DroppedItem, Reply, Text

REPEATS_REMEMBERED = 3
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
