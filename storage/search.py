"""Turn summaries and questions into search terms for the knowledge index, without a dictionary.

Chinese has no spaces, and a segmenter needs a dictionary (jieba's took 33 MiB even held
in Rust). Instead a Han run is cut into overlapping pairs of characters, as Lucene's CJK
analyzer does ("火锅店" → 火锅 锅店), after it is split at the words that only carry
grammar: the stop words of two or more characters and the particles (的 了 吗 …). Each
of those is a word of its own, and so is one character left alone between two of them
("我家的猫了" → 我家 的 猫 了). A question's word of two or more characters is thus
found wherever it stands, inside longer words too; a question also offers each character
beside a grammar word as a word, so a one-character word glued to its neighbour ("上次聊
的猫后来怎么样了": 猫) still finds the summaries where it stands alone. Every other run of
letters or digits is one word.

The group gate cuts interests and messages as questions (:func:`word_set`): a
one-character interest is found where it stands alone or beside a grammar word (我家的猫
又…), not inside a word (熊猫), and not glued to a neighbour either (我想养猫), which jieba
would have cut. The summaries keep the index cut in ``knowledge_index.search_text``;
migration 0016 cut the rows an older pacebot had cut with jieba again. Everything here
is pure, synchronous and fast (microseconds a sentence): call it inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

QUERY_CHARS_MAX = 2000  # a longer question is cut here: its tail only costs time
QUERY_TERMS_MAX = 32  # distinct terms of one question that are searched for
FALLBACK_TERMS_MAX = 8  # terms looked for as substrings when no indexed word matched
SHORT_HAN_CHARS_MAX = 2  # a Han question this short is looked for as a substring

# The common Han range (jieba's); other Han characters count as letters.
_HAN = "\u4e00-\u9fd5"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_RUNS = re.compile(f"([{_HAN}]+)|([^\\W_{_HAN}]+)")

# Words that say how a question is asked, not what it is about.
_STOP_WORDS_ZH = (
    "的 地 得 了 着 过 是 在 有 和 与 跟 及 也 都 就 还 又 才 很 太 吗 呢 吧 啊 呀 哦 嗯 么 "
    "我 你 您 他 她 它 我们 你们 他们 她们 咱们 大家 自己 这 那 这个 那个 这些 那些 这里 那里 "
    "什么 怎么 怎么样 为什么 哪 哪里 哪儿 哪个 哪些 谁 多少 几 时候 上次 之前 以前 最近 那天 "
    "一个 一下 一些 一起 有没有 没有 没 不 说 说过 聊 聊过 聊天 讨论 提到 提过 记得 知道 还记得"
)
_STOP_WORDS_EN = (
    "a an the and or but of to in on at for with about from by as into "
    "is are was were be been am do does did done have has had will would can could "
    "i me my we us our you your he him his she her they them their it its "
    "what when where who whom which why how that this these those there "
    "talk talked talking discuss discussed say said tell told remember"
)
STOP_WORDS = frozenset(_STOP_WORDS_ZH.split(" ") + _STOP_WORDS_EN.split(" "))

# Where a Han run is split: its stop words of two or more characters and the particles,
# which stand alone almost wherever they occur. The other one-character stop words
# (在 都 有 和 …) also begin or end common words (现在 成都 没有 和平), so they do not split.
_PARTICLES = "的了吗呢吧啊呀哦嗯么"
_GRAMMAR_WORDS = sorted(
    (w for w in STOP_WORDS if _HAN_RUN.fullmatch(w) and (len(w) > 1 or w in _PARTICLES)),
    key=lambda word: (-len(word), word),  # the longest first: 怎么样 before 怎么
)
_GRAMMAR = re.compile("(" + "|".join(map(re.escape, _GRAMMAR_WORDS)) + ")")


def index_text(parts: Sequence[str]) -> str:
    """Return the words of ``parts``, lower-cased and joined by spaces, for the FTS index."""
    return " ".join(_words("\n".join(parts), asked=False))


def word_set(text: str) -> frozenset[str]:
    """Return the distinct lower-cased words of ``text``, cut as a question is cut."""
    return frozenset(_words(text, asked=True))


def query_terms(query: str) -> list[str]:
    """Return the distinct words of a question worth searching for, in order.

    Punctuation, emoji and stop words are dropped; only the first ``QUERY_CHARS_MAX``
    characters and ``QUERY_TERMS_MAX`` terms count.
    """
    terms: list[str] = []
    for word in _words(query[:QUERY_CHARS_MAX], asked=True):
        if word not in STOP_WORDS and word not in terms:
            terms.append(word)
            if len(terms) == QUERY_TERMS_MAX:
                break
    return terms


def quote(text: str) -> str:
    """Return ``text`` as one FTS5 string, any ``"`` inside doubled.

    FTS5 operators in it (``AND``, ``NEAR(``, ``*``, ``:``, ``^``) become plain words.
    """
    return '"' + text.replace('"', '""') + '"'


def any_of(terms: Sequence[str]) -> str:
    """Return an FTS5 expression matching any of ``terms``."""
    return " OR ".join(quote(term) for term in terms)


def is_short_han(terms: Sequence[str]) -> bool:
    """Tell whether the terms are one or two Han characters in all.

    Such a question rarely equals a whole indexed word ("山" inside "爬山"), so it is
    looked for as a substring instead.
    """
    joined = "".join(terms)
    return 0 < len(joined) <= SHORT_HAN_CHARS_MAX and bool(_HAN_RUN.fullmatch(joined))


def fallback_terms(terms: Sequence[str]) -> list[str]:
    """Return the terms worth a substring search: Han words, or others of 3+ characters.

    A short Latin term such as ``ai`` would match inside unrelated words (``said``), and
    one Han character a longer question offers beside its grammar words (来 of "猫后来")
    inside most summaries: it is looked for as a substring only when it is the question.
    """
    short = is_short_han(terms)
    kept = [
        term
        for term in terms
        if (_HAN_RUN.search(term) and (len(term) > 1 or short)) or len(term) >= 3
    ]
    return kept[:FALLBACK_TERMS_MAX]


def _words(text: str, *, asked: bool) -> Iterator[str]:
    """Yield the lower-cased words of ``text``: Han runs cut into pairs, letters/digits whole."""
    # Only letters and digits form words, so no quote, NUL or lone surrogate gets through.
    for han, other in _RUNS.findall(text.lower()):
        if other:
            yield other
        else:
            yield from _han_words(han, asked=asked)


def _han_words(run: str, *, asked: bool) -> Iterator[str]:
    """Yield a Han run's words: its grammar words and lone characters, pairs of the rest.

    ``asked``: a question also offers each character next to a grammar word in a longer
    piece ("的猫后来怎么样": 猫, 来), since it may be a one-character word.
    """
    pieces = _GRAMMAR.split(run)  # text, grammar word, text, ..., text
    last = len(pieces) - 1
    for index, piece in enumerate(pieces):
        if index % 2 or len(piece) < 2:
            if piece:
                yield piece
            continue
        yield from (piece[start : start + 2] for start in range(len(piece) - 1))
        if asked and len(piece) > 2:
            if index > 0:
                yield piece[0]
            if index < last:
                yield piece[-1]
