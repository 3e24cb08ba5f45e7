"""``[[profiles]]``: what the chats matching some patterns run with, and ``[access]``:
which chats and people the bot serves at all.

A profile names the chats it applies to by chat-key patterns (``*`` a wildcard) and sets
any of: a persona, the language, pacing, the ``[groups]`` keys, ``voice.speak``,
initiative keys, a chat's daily token cap and a tools allow-list. What it leaves out is
the base config's. The first profile whose pattern matches a chat wins; a group's
``[[groups.override]]`` still applies on top of its profile's groups keys. Each partial
table is checked against its table's own rules with the base values filled in
(``bot.config.settings.resolve_profiles``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from bot.config.errors import describe, toml_value
from bot.config.values import Section, Tokens
from bot.models import ChatKey
from bot.texts import Language

PROFILES_KEY = "profiles"
_PATTERN = re.compile(r"[^:\s]+:(private|group|\*):[^:\s]+(:[^:\s]+)?")
_PATTERN_FORM = 'platform:kind:id, "*" a wildcard, e.g. "telegram:group:*" or "qq:group:123456"'


def _chat_pattern(value: str) -> str:
    if not _PATTERN.fullmatch(value):
        msg = f"must be a chat key pattern, {_PATTERN_FORM}"
        raise ValueError(msg)
    return value


ChatPattern = Annotated[str, AfterValidator(_chat_pattern)]
"""A chat key with ``*`` wildcards: ``"telegram:group:*"``, ``"qqbot:private:*"``."""


def matches(pattern: str, chat: ChatKey) -> bool:
    """Tell whether ``pattern`` names ``chat`` (a forum topic also by its group's key)."""
    return fnmatch.fnmatchcase(str(chat), pattern) or fnmatch.fnmatchcase(str(chat.room), pattern)


class ProfileBudget(Section):
    """A profile's ``budget`` table."""

    chat_daily_tokens: Tokens | None = None
    """Soft cap on tokens per chat and chat day in this profile's chats; 0 = none."""


class ProfileVoice(Section):
    """A profile's ``voice`` table."""

    speak: bool | None = None
    """Let the model answer with voice items in this profile's chats."""


class Profile(Section):
    """One ``[[profiles]]``."""

    name: str = Field(min_length=1, max_length=64)
    """The profile's name, shown on /status, in traces and on the dashboard."""
    chats: tuple[ChatPattern, ...] = Field(min_length=1)
    """The chats it applies to, by chat key, ``*`` a wildcard: ``["telegram:group:*"]``."""
    persona: str | None = None
    """The persona of its chats (their summaries sit on it); unset = ``bot.persona``."""
    persona_file: Path | None = None
    """Read the persona from this file instead (relative to the config file)."""
    language: Language | None = None
    """The language of command answers in its chats; unset = ``bot.language``."""
    pacing: dict[str, Any] = Field(default_factory=dict)
    """Any ``[pacing]`` keys, for its chats."""
    groups: dict[str, Any] = Field(default_factory=dict)
    """Any ``[groups]`` key but ``store_unaddressed`` and ``override``, for its groups."""
    voice: ProfileVoice = ProfileVoice()
    """``voice.speak`` for its chats."""
    initiative: dict[str, Any] = Field(default_factory=dict)
    """Any ``[initiative]`` keys, for its chats."""
    budget: ProfileBudget = ProfileBudget()
    """``budget.chat_daily_tokens`` for its chats."""
    tools: tuple[str, ...] | None = None
    """The tools its chats are offered, among those ``[tools]`` offers; unset = all."""


class AccessConfig(Section):
    """``[access]``: which chats and people the bot serves at all."""

    groups: Literal["open", "allow"] = "open"
    """"open": every group the bot is in; "allow": only groups matching ``allow``."""
    allow: tuple[ChatPattern, ...] = ()
    """Chat-key patterns of the groups served when ``groups = "allow"``."""
    deny: tuple[ChatPattern, ...] = ()
    """Chat-key patterns never served, private chats too; checked first."""
    blocked: tuple[str, ...] = ()
    """People never stored nor answered anywhere: ``telegram:123``, ``qq:456``."""


def describe_profile(error: Mapping[str, Any], data: Mapping[str, Any]) -> str | None:
    """Describe a validation error of ``[[profiles]]``, naming the profile by its item and
    name; ``None`` for an error elsewhere."""
    loc = tuple(error["loc"])
    if loc == (PROFILES_KEY,) and error["type"] in {"tuple_type", "list_type"}:
        return f"{PROFILES_KEY}: write each profile as [[{PROFILES_KEY}]] (double brackets)"
    if loc[:1] != (PROFILES_KEY,) or len(loc) < 3 or not isinstance(loc[1], int):
        return None
    where = f"{PROFILES_KEY} (item {loc[1] + 1}"
    name = _profile_name(data, loc[1])
    if loc[2] != "name" and isinstance(name, str):
        where += f", name {toml_value(name)}"
    if loc[2] == "chats":
        value = error.get("input")
        if len(loc) > 3 and isinstance(value, str):
            return f"{where}): chats: {toml_value(value)} {_pattern_reason(error)}"
        if isinstance(value, list | tuple) and not value:
            return f"{where}): chats = []: name at least one chat, {_PATTERN_FORM}"
    return f"{where}): {describe({**error, 'loc': loc[2:]}, model=Profile)}"


def _pattern_reason(error: Mapping[str, Any]) -> str:
    return (
        f"must be a chat key pattern, {_PATTERN_FORM}"
        if error["type"] == "value_error"
        else ("must be a string in double quotes")
    )


def _profile_name(data: Mapping[str, Any], index: int) -> object:
    """Return the ``name`` a profile of the raw document gives, if it gives one."""
    profiles = data.get(PROFILES_KEY)
    if isinstance(profiles, list) and index < len(profiles):
        item = profiles[index]
        return item.get("name") if isinstance(item, Mapping) else None
    return None
