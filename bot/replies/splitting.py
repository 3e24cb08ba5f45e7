"""Split prose into chat-sized messages, and one reply to a platform's limit.

:func:`split_text` is the last tier of the fallback chain (docs/reply-contract.md): it
cuts the prose on paragraph and sentence boundaries with typing-speed delays.
:func:`split_to_limit` cuts one reply that is longer than a platform allows. Everything
here is pure.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

from bot.replies.items import Reply, Text
from bot.replies.parse import URL_RE, salvage_replies, strip_reasoning

# --- splitting prose into chat messages -------------------------------------------------

_BREAK_PARAGRAPH = 3
_BREAK_LINE = 2
_BREAK_SENTENCE = 1

_MERGE_PENALTY = {_BREAK_SENTENCE: 0, _BREAK_LINE: 1_000, _BREAK_PARAGRAPH: 100_000}

_CLOSERS = "\"'”’」』》）)\\]】"
_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n\s*")
_LINE_RE = re.compile(r"\n\s*")
_CJK_END_RE = re.compile(rf"[。！？…]+[{_CLOSERS}]*")
# ASCII ! and ? end a sentence before a space, the end, or non-ASCII text ("好吗?我"),
# never inside "?q=1" or "a!b".
_ASCII_END_RE = re.compile(rf"[!?]+[{_CLOSERS}]*(?=\s|$|[^\x00-\x7f])")
# "." ends a sentence only before whitespace and something that can start one, or at the
# end; so "3.14", "example.com/x" and "e.g. this" stay whole.
_PERIOD_END_RE = re.compile(
    rf"(?<!\.)\.[{_CLOSERS}]*(?=\s+[A-Z0-9\"'“‘(\[\u0080-\uffff]|\s*$)", re.MULTILINE
)
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "no", "fig"}
)
_CODE_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


def _protected_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _CODE_FENCE_RE.finditer(text)]
    spans += [m.span() for m in URL_RE.finditer(text)]
    return spans


def _inside(pos: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start < pos < end for start, end in spans)


def _is_abbreviation(text: str, period: int) -> bool:
    """Tell whether the period at ``period`` ends "e.g", "Mr", "U.S" or a "1." list marker."""
    line_start = text.rfind("\n", 0, period) + 1
    if re.fullmatch(r"\s*(?:\d{1,3}|[A-Za-z])", text[line_start:period]):
        return True
    words = text[max(line_start, period - 12) : period].split()
    if not words:
        return False
    word = words[-1].lstrip(_CLOSERS + "(").lower()
    return word in _ABBREVIATIONS or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))


def _breaks(text: str) -> dict[int, int]:
    """Map each place the text may be cut to how strong a boundary it is."""
    protected = _protected_spans(text)
    found: dict[int, int] = {}

    def add(pos: int, strength: int) -> None:
        if 0 < pos < len(text) and not _inside(pos, protected):
            found[pos] = max(found.get(pos, 0), strength)

    for m in _PARAGRAPH_RE.finditer(text):
        add(m.end(), _BREAK_PARAGRAPH)
    for m in _LINE_RE.finditer(text):
        add(m.end(), _BREAK_LINE)
    for m in _CJK_END_RE.finditer(text):
        add(m.end(), _BREAK_SENTENCE)
    for m in _ASCII_END_RE.finditer(text):
        add(m.end(), _BREAK_SENTENCE)
    for m in _PERIOD_END_RE.finditer(text):
        if not _is_abbreviation(text, m.start()):
            add(m.end(), _BREAK_SENTENCE)
    return found


def _typing_delay(content: str, *, chars_per_s: float, max_delay_s: float) -> float:
    if chars_per_s <= 0:
        return float(max_delay_s)
    return float(min(len(content) / chars_per_s, max_delay_s))


def split_text(
    text: str, *, chars_per_s: float, max_delay_s: float, max_parts: int = 4
) -> list[Reply]:
    """Cut prose into at most ``max_parts`` chat messages with typing-speed delays.

    The last resort when neither the LLM nor the splitter gave a reply plan. Cuts fall on
    paragraph, line and sentence boundaries, never inside a URL or a code block; the
    smallest neighbours are merged first, sentences before lines before paragraphs.
    Text that is a broken JSON plan yields only its complete ``content`` strings
    (:func:`salvage_replies`), so a chatter never sees JSON.
    """
    salvaged = salvage_replies(text)
    text = "\n\n".join(salvaged) if salvaged is not None else strip_reasoning(text).strip()
    if not text:
        return []
    breaks = _breaks(text)
    cuts = sorted(breaks)
    bounds = [0, *cuts, len(text)]
    # pieces[i] = [start, end]; joins[i] = strength of the boundary before pieces[i + 1]
    pieces = [[a, b] for a, b in itertools.pairwise(bounds) if text[a:b].strip()]
    joins = [breaks.get(piece[0], _BREAK_SENTENCE) for piece in pieces[1:]]
    limit = max(1, max_parts)
    while len(pieces) > limit:
        costs = [
            (pieces[i + 1][1] - pieces[i][0]) + _MERGE_PENALTY[joins[i]] for i in range(len(joins))
        ]
        i = costs.index(min(costs))
        pieces[i][1] = pieces[i + 1][1]
        del pieces[i + 1]
        del joins[i]
    replies: list[Reply] = []
    for start, end in pieces:
        content = text[start:end].strip()
        delay = (
            0.0
            if not replies
            else _typing_delay(content, chars_per_s=chars_per_s, max_delay_s=max_delay_s)
        )
        replies.append(Reply(Text(content), delay))
    return replies


# --- splitting one reply to a platform's limit ------------------------------------------

_LIMIT_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n"),  # paragraph
    re.compile(r"\n"),  # line
    re.compile(r"(?:[。！？…]+|[.!?]+(?=\s))[\"'”’」』）)\]】]*"),  # sentence
    re.compile(r"[，、；：,;:](?=\s|[^\x00-\x7f])|\s"),  # clause or word
)
_JOINERS = frozenset({"\u200d", "\ufe0e", "\ufe0f"})


def _splits_grapheme(text: str, pos: int) -> bool:
    after, before = text[pos], text[pos - 1]
    return (
        unicodedata.combining(after) != 0
        or after in _JOINERS
        or before == "\u200d"
        or "\U0001f3fb" <= after <= "\U0001f3ff"  # skin-tone modifier
        or ("\U0001f1e6" <= before <= "\U0001f1ff" and "\U0001f1e6" <= after <= "\U0001f1ff")
    )


def _cut_at(rest: str, limit: int) -> int:
    """Return where to end the next piece of ``rest``: at most ``limit``, at least 1."""
    window = rest[:limit]
    floor = max(1, limit // 3)
    for boundary in _LIMIT_BOUNDARIES:
        last = None
        for m in boundary.finditer(window, floor):
            last = m
        if last is not None:
            return last.end()
    cut = limit
    for _ in range(8):  # back off a few code points rather than tear an emoji apart
        if cut <= 1 or not _splits_grapheme(rest, cut):
            break
        cut -= 1
    return cut if cut > 1 else limit


def split_to_limit(text: str, limit: int) -> list[str]:
    """Cut one message into pieces of at most ``limit`` characters.

    Prefer paragraph, then line, then sentence, clause or word boundaries; cut hard only
    when a window holds none. Text within the limit comes back unchanged.
    """
    if limit < 1:
        msg = f"limit must be at least 1, not {limit}"
        raise ValueError(msg)
    if not text.strip():
        return []
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_at(rest, limit)
        piece = rest[:cut].rstrip()
        if piece:
            pieces.append(piece)
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces
