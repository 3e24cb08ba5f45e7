"""Whether a message asks something (pure, no I/O).

Two questions, two answers. :func:`looks_like_question` asks whether an empty reply to a
private batch would be rude, and errs towards yes. :func:`asks_the_room` asks whether a
group message puts a question to everyone there, a reason for the group gate to let the
bot speak unaddressed; it errs towards no, since every yes may cost an LLM call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.replies.parse import URL_RE

_QUESTION_WORDS = frozenset(
    {
        "what", "why", "how", "when", "where", "who", "whom", "whose", "which",
        "can", "could", "would", "will", "should", "shall", "may", "might",
        "do", "does", "did", "is", "are", "was", "were", "am", "have", "has",
        "any", "anyone", "anybody", "anything",
    }
)  # fmt: skip
_ZH_PARTICLE_RE = re.compile(r"[吗嘛么呢][\s~～。.!！…\"'”’)）]*(?:[，,；;\n]|$)")
_ZH_QUESTION_RE = re.compile(
    r"为什么|为啥|怎么|什么|啥|哪|谁|几[点个时天号岁次]|多少|多久|([^\W不没])[不没]\1"
)
_SENTENCE_START_RE = re.compile(r"(?:^|[.!;:\n。！；]\s*)([A-Za-z]+)")
_ENDS_ASKING_RE = re.compile(r"[?？][\s~～?？!！.。…)）\"'”’]*$")
_ROOM_ZH_RE = re.compile(
    r"(?:有人|有没有人|有谁|谁|大家|各位|群友|请问)[^，,。.！!]{0,6}"
    r"(?:知道|懂|会|用过|试过|去过|看过|玩过|听过|推荐|了解|遇到过|有没有)"
)
_ROOM_EN_RE = re.compile(
    r"\b(?:any ?(?:one|body)|does (?:any ?one|any ?body)|who (?:knows|has|here))\b"
    r"|\b(?:can|could) (?:some ?one|some ?body|any ?one)\b",
    re.IGNORECASE,
)


def looks_like_question(texts: Sequence[str]) -> bool:
    """Tell whether any message asks something, so an empty reply list would be rude.

    Errs towards yes: answering a statement is harmless, ignoring a question is not.
    """
    for raw in texts:
        text = URL_RE.sub(" ", raw).strip()
        if not text:
            continue
        if "?" in text or "？" in text:
            return True
        if _ZH_PARTICLE_RE.search(text) or _ZH_QUESTION_RE.search(text):
            return True
        for m in _SENTENCE_START_RE.finditer(text):
            if m.group(1).lower() in _QUESTION_WORDS:
                return True
    return False


def asks_the_room(text: str) -> bool:
    """Tell whether a group message asks the room: it ends in ``?``/``？``, or asks whether
    anyone knows, has tried, can recommend ("有人知道…吗", "anyone know…")."""
    text = URL_RE.sub(" ", text).strip()
    if not text:
        return False
    return bool(
        _ENDS_ASKING_RE.search(text) or _ROOM_ZH_RE.search(text) or _ROOM_EN_RE.search(text)
    )
