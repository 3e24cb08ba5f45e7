"""Mend the usual slips of a model's JSON, so that they do not cost a second LLM call.

A model that means to answer with JSON slips in a few well-known ways: a trailing comma,
full-width quotes, colons or commas around its keys (“ ” ： ，), single-quoted or bare
keys, a quote inside a text left unescaped, a raw line break in a string. The
``json_repair`` library mends those. It also completes whatever was cut off, which must
not happen here: a plan cut off half-way would pass for a shorter one. So only an object
that closes is mended (:func:`closing_end`), and what comes out is read by the same rules
as any answer. Everything here is pure: no I/O, no event loop.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# A whole string, a quote that opens a string never closed, or a bracket.
_QUOTED_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|(?P<open>")|[{}\[\]]', re.DOTALL)
_BRACKET_RE = re.compile(r"[{}\[\]]")
# Full-width punctuation where JSON syntax stands: the colon after a key, the comma
# between a value and the next key or item. Inside a text it is left alone.
_KEY = r"[\"“'][^\"“”'\n]*[\"”']"
_FULL_WIDTH_COLON_RE = re.compile(rf"([{{,，]\s*{_KEY}\s*)：")
_FULL_WIDTH_COMMA_RE = re.compile(
    rf"([\"”'\d}}\]]|true|false|null)(\s*)，(?=\s*(?:{{|{_KEY}\s*[:：]))"
)


def closing_end(text: str, start: int) -> int | None:
    """Return where the bracket opened at ``text[start]`` closes; ``None`` if it never does.

    Brackets inside strings do not count; when the strings themselves are broken (an
    unescaped quote inside a text), every bracket counts. Either way, an object the text
    ends inside of was cut off.
    """
    return _balanced(_QUOTED_TOKEN_RE.finditer(text, start)) or _balanced(
        _BRACKET_RE.finditer(text, start)
    )


def _balanced(tokens: Iterator[re.Match[str]]) -> int | None:
    depth = 0
    for token in tokens:
        bracket = token.group()
        if token.lastgroup == "open":
            return None  # a string the text ends inside of
        if bracket[0] == '"':
            continue
        depth += 1 if bracket in "{[" else -1
        if depth == 0:
            return token.end()
    return None


def repaired(span: str) -> Any:
    """Return the value ``json_repair`` reads from a closed object with the usual slips.

    The library is imported on the first slip (about 50 ms, argparse included): most
    answers never need it, and start-up should not pay for it.
    """
    from json_repair import repair_json

    span = _FULL_WIDTH_COLON_RE.sub(r"\1:", span)
    span = _FULL_WIDTH_COMMA_RE.sub(r"\1\2,", span)
    return repair_json(span, return_objects=True, skip_json_loads=True)
