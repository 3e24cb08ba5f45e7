"""Whether a batch asks something, so that staying silent would be rude (pure, no I/O)."""

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
