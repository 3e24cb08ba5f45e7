"""Which QQ face stands for an emoji the model chose (pure, no I/O).

OneBot implementations react with a QQ face id: NapCat's ``set_msg_emoji_like`` and
Lagrange's ``set_group_reaction`` read an id of three digits or fewer as a QQ system face
and a longer one as a Unicode code point. Ids are strings: face 0 sent as a number is
falsy to NapCat. An emoji without a QQ id here is not sent.
"""

from __future__ import annotations

from typing import Final

_VARIATION_SELECTOR: Final = "\ufe0f"
QQ_FACES: Final = {
    "👍": "76",  # /赞
    "❤": "66",  # /爱心
    "😂": "182",  # /笑哭
    "🤣": "182",
    "😭": "9",  # /大哭
    "😢": "5",  # /流泪
    "😮": "0",  # /惊讶
    "😱": "26",  # /惊恐
    "🎉": "320",  # /庆祝
    "👏": "99",  # /鼓掌
    "🙏": "118",  # /抱拳
    "🔥": "128293",  # 🔥, a code point: QQ's own fire face is animated
    "😅": "97",  # /擦汗
}
"""Each emoji the contract names (and a few near ones) with its QQ face id."""


def qq_face(emoji: str) -> str | None:
    """Return the QQ face id for ``emoji``, or ``None`` if QQ has none for it."""
    emoji = emoji.strip()
    return QQ_FACES.get(emoji) or QQ_FACES.get(emoji.replace(_VARIATION_SELECTOR, ""))
