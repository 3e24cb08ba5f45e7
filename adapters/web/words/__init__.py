"""The dashboard's own words in each ``bot.language``: its pages, notices and script.

One frozen mapping per language (:mod:`.en`, :mod:`.zh`), keyed by name, each text a
``str.format`` template, as :mod:`bot.texts` keeps the bot's: ``tests/test_web_words.py``
checks that both languages name the same words with the same fields. A trace is shown in
:mod:`bot.texts`' words, as ``/trace`` shows it; the words its README section names
(``answered``, ``sent``, ``json``…) stay as they are in every language, so they can be
looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from adapters.web.words.en import EN
from adapters.web.words.zh import ZH
from bot.texts import Language

HTML_LANG: Mapping[Language, str] = MappingProxyType({"en": "en", "zh": "zh-CN"})
"""What ``<html lang>`` says for each ``bot.language`` (a CJK font is chosen by it)."""

WORDS: Mapping[Language, Mapping[str, str]] = MappingProxyType({"en": EN, "zh": ZH})
SCRIPT_WORDS = (
    "phase_idle",
    "phase_waiting",
    "phase_thinking",
    "phase_sending",
    "platform_up",
    "platform_down",
    "platform_unknown",
    "no_chat_yet",
    "live_at",
    "live_logged_out",
    "live_unreachable",
    "profile_base",
    "preview_tokens",
)
"""The words ``static/dashboard.js`` draws itself (its pages hand them over as data)."""


class Words:
    """The dashboard's words in one language: ``words("popped", day=…, who=…)``."""

    def __init__(self, language: Language) -> None:
        self.language = language
        self.html_lang = HTML_LANG[language]
        self._words = WORDS[language]

    def __call__(self, name: str, /, **fields: object) -> str:
        """Return the word ``name`` with ``fields`` filled in (never formatted again)."""
        return self._words[name].format(**fields)

    def for_script(self) -> dict[str, str]:
        """Return the words the page's script draws, unfilled."""
        return {name: self._words[name] for name in SCRIPT_WORDS}
