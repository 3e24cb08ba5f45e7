"""The dashboard's own words: both languages name the same words with the same fields, and
every word a page or its script asks for exists."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from adapters.web.words import EN, SCRIPT_WORDS, WORDS

WEB = Path(__file__).resolve().parent.parent / "adapters" / "web"


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@pytest.mark.parametrize("language", sorted(WORDS))
def test_every_language_has_the_same_words_with_the_same_fields(language: str) -> None:
    """A word missing in one language, or with another field, fails here, not on a page."""
    words = WORDS[language]  # type: ignore[index]
    assert sorted(words) == sorted(EN)
    assert {name: fields(t) for name, t in words.items()} == {
        name: fields(t) for name, t in EN.items()
    }


def test_every_word_the_pages_and_the_script_ask_for_exists() -> None:
    """Each t("…") of a template or a route, each word of the overview's script, each phase,
    reply mode and platform state (asked for as "phase_" + its name) is in the catalogue."""
    asked = set(SCRIPT_WORDS) | {f"phase_{p}" for p in ("idle", "waiting", "thinking", "sending")}
    asked |= {f"reply_{mode}" for mode in ("mention", "always", "smart")}
    asked |= {f"platform_{state}" for state in ("up", "down", "unknown")}
    for template in (WEB / "templates").glob("*.html"):
        asked |= set(re.findall(r"""\bt\(\s*["'](\w+)["']""", template.read_text("utf-8")))
    for module in WEB.glob("*.py"):
        asked |= set(re.findall(r"""\b(?:t|say)\(\s*["'](\w+)["']""", module.read_text("utf-8")))
    script = (WEB / "static" / "dashboard.js").read_text("utf-8")
    asked |= set(re.findall(r'say\("(\w+)"', script))
    named = {name for name in asked if not name.endswith("_")}  # "phase_" + …: added above
    assert sorted(named - set(EN)) == []
