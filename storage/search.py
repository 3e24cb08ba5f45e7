"""Turn summaries and questions into search terms for the knowledge index.

Chinese has no spaces, so Han runs are cut into words with rjieba (jieba-rs, jieba's
algorithm and dictionary in Rust; ``cut_for_search``, which also yields the shorter words
inside long ones); every other run of letters or digits is one word. The same cut is used
for what is indexed and for what is asked, so both sides agree on the words.

rjieba cuts exactly as jieba 0.42 did (every one of 8,482 Han runs of the corpus in
docs/benchmarks.md, word for word), so an index written by an older pacebot is read as it
is. It holds its dictionary in about 33 MiB instead of jieba's 81, is ready in 0.1 s
instead of 0.5–0.8 s, and cuts some 25 times faster. Everything here is pure and
synchronous: call it from a worker thread, since the first cut loads the dictionary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence

QUERY_CHARS_MAX = 2000  # a longer question is cut here: its tail only costs time
QUERY_TERMS_MAX = 32  # distinct terms of one question that are searched for
FALLBACK_TERMS_MAX = 8  # terms looked for as substrings when no indexed word matched
SHORT_HAN_CHARS_MAX = 2  # a Han question this short is looked for as a substring

# The Han range jieba's segmenter handles; other Han characters count as letters.
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


@functools.cache
def _cut_for_search() -> Callable[[str], list[str]]:
    """Return rjieba's search-mode cut, importing it (which builds its dictionary) once.

    Imported here, not at the top: the dictionary (33 MiB, 0.1 s) loads with the first
    summary or question cut, in the worker thread that cuts it, so a bot that has not
    answered anything yet, and ``pacebot trace``, never hold it.
    """
    import rjieba

    return rjieba.cut_for_search


def index_text(parts: Sequence[str]) -> str:
    """Return the words of ``parts``, lower-cased and joined by spaces, for the FTS index."""
    return " ".join(_words("\n".join(parts)))


def word_set(text: str) -> frozenset[str]:
    """Return the distinct lower-cased words of ``text``, cut as the index cuts them."""
    return frozenset(_words(text))


def load_dictionary() -> None:
    """Load the segmenter's dictionary now (0.1 s): call it from a worker thread."""
    _cut_for_search()


def query_terms(query: str) -> list[str]:
    """Return the distinct words of a question worth searching for, in order.

    Punctuation, emoji and stop words are dropped; only the first ``QUERY_CHARS_MAX``
    characters and ``QUERY_TERMS_MAX`` terms count.
    """
    terms: list[str] = []
    for word in _words(query[:QUERY_CHARS_MAX]):
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

    A short Latin term such as ``ai`` would match inside unrelated words (``said``).
    """
    kept = [term for term in terms if _HAN_RUN.search(term) or len(term) >= 3]
    return kept[:FALLBACK_TERMS_MAX]


def _words(text: str) -> Iterator[str]:
    """Yield the lower-cased words of ``text``: rjieba for Han runs, letters/digits else."""
    # Only letters and digits form words, so no quote, NUL or lone surrogate gets through.
    cut = _cut_for_search()
    for han, other in _RUNS.findall(text.lower()):
        if other:
            yield other
            continue
        yield from cut(han)
