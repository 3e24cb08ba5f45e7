"""Which Telegram reaction stands for an emoji the model chose (pure, no I/O).

A bot may set only the emoji of ``telegram.constants.ReactionEmoji``. Models write the
heart with U+FE0F (``❤️``) where Telegram's is the bare ``❤``, and pick faces Telegram
does not have (😂 😮 😅): those are mapped to the nearest one it has. Matching is a
lookup, never a blanket removal of U+FE0F: ``❤️‍🔥`` and the shrugs keep theirs.
"""

from __future__ import annotations

from typing import Final

from telegram.constants import ReactionEmoji

_ALLOWED: Final = frozenset(emoji.value for emoji in ReactionEmoji)
_VARIATION_SELECTOR: Final = "\ufe0f"
_NEAREST: Final = {
    "😂": "🤣",
    "😆": "😁",
    "😄": "😁",
    "😅": "😁",
    "😊": "🥰",
    "😮": "😱",
    "😲": "😱",
    "😳": "😱",
    "✅": "👌",
    "👋": "🤝",
    "💖": "❤",
    "💕": "❤",
    "🥲": "😢",
}


def telegram_reaction(emoji: str) -> str | None:
    """Return the reaction Telegram accepts for ``emoji``, or ``None`` if none is near."""
    emoji = emoji.strip()
    for candidate in (emoji, emoji.replace(_VARIATION_SELECTOR, "")):
        if candidate in _ALLOWED:
            return candidate
        near = _NEAREST.get(candidate)
        if near is not None:
            return near
    return None
