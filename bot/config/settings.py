"""The configuration the bot runs with now: one object, swapped whole by a reload.

Every room reads its settings through :class:`Settings` when it needs a value, never from
a copy taken at start-up, so a reload (``pacebot reload``, SIGHUP, the dashboard's Save)
applies from the next batch and nothing that waits is rebuilt or lost. What a chat runs
with, its profile applied, is :meth:`Settings.for_chat`.

Some keys are read once, when a part is built: a platform's switch and address, tokens'
variables, the data directory, the LLM client, the dashboard's server. A reload keeps
their running values and names them as needing a restart (:data:`RESTART_ONLY`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.config.errors import describe, toml_value
from bot.config.groups import BudgetConfig, GroupsConfig, GroupSettings
from bot.config.model import (
    BotConfig,
    Config,
    InitiativeConfig,
    LLMConfig,
    MemoryConfig,
    PacingConfig,
    QQConfig,
    ReactionsConfig,
    StickersConfig,
    TelegramConfig,
    VoiceConfig,
    WebConfig,
)
from bot.config.profiles import PROFILES_KEY, AccessConfig, Profile, matches
from bot.config.tools import ToolsConfig
from bot.days import ChatDays
from bot.errors import ConfigError
from bot.models import ChatKey
from bot.texts import Language

RESTART_ONLY: tuple[str, ...] = (
    "bot.name",
    "bot.aliases",
    "bot.timezone",
    "bot.data_dir",
    "bot.log_level",
    "pacing.stale_after_s",
    "memory.day_boundary",
    "memory.embeddings",
    "llm.base_url",
    "llm.api_key_env",
    "llm.model",
    "llm.temperature",
    "llm.timeout_s",
    "llm.max_retries",
    "llm.max_output_tokens",
    "llm.splitter",
    "telegram",
    "qq.enabled",
    "qq.host",
    "qq.port",
    "qq.access_token_env",
    "qq.allow_private_image_hosts",
    "qq.backfill",
    "qq_official",
    "web",
    "stickers.enabled",
    "voice.enabled",
    "voice.transcribe",
    "voice.base_url",
    "voice.api_key_env",
    "voice.stt_model",
    "voice.tts_model",
    "tools.enabled",
    "tools.mcp",
    "tools.web_search",
    "plugins",
)
"""Keys read once when a part is built: a reload keeps their running values. A table's
name stands for every key in it."""


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """What one chat runs with: the base config, its profile applied, its group's
    override on top."""

    profile: str  # the profile's name; "" when none matches the chat
    persona: str
    language: Language
    pacing: PacingConfig
    groups: GroupSettings
    speak: bool  # voice.speak
    initiative: InitiativeConfig
    chat_daily_tokens: int  # budget.chat_daily_tokens
    tools: tuple[str, ...] | None  # the tools allow-list; ``None``: all that [tools] offers


@dataclass(frozen=True, slots=True)
class ResolvedProfile:
    """A profile applied to the base config: every table whole, checked."""

    name: str
    chats: tuple[str, ...]
    persona: str | None  # inline; ``None``: the file's, or the base persona
    language: Language
    pacing: PacingConfig
    groups: GroupsConfig
    speak: bool
    initiative: InitiativeConfig
    chat_daily_tokens: int
    tools: tuple[str, ...] | None

    def applies_to(self, chat: ChatKey) -> bool:
        """Tell whether one of the profile's patterns names ``chat``."""
        return any(matches(pattern, chat) for pattern in self.chats)


def resolve_profiles(config: Config) -> tuple[ResolvedProfile, ...]:
    """Apply each profile to the base config; raise ``ConfigError`` naming every bad key
    of every profile, in TOML's words, by its item and name."""
    resolved: list[ResolvedProfile] = []
    problems: list[str] = []
    for number, profile in enumerate(config.profiles, start=1):
        where = f"{PROFILES_KEY} (item {number}, name {toml_value(profile.name)})"
        tables: dict[str, Any] = {}
        for table, base, model in (
            ("pacing", config.pacing, PacingConfig),
            ("groups", config.groups, GroupSettings),
            ("initiative", config.initiative, InitiativeConfig),
        ):
            given: Mapping[str, Any] = getattr(profile, table)
            tables[table] = _merged(base, model, given, where=f"{where}: {table}", into=problems)
        if problems:
            continue
        groups = config.groups.model_copy(update=tables["groups"].model_dump())
        resolved.append(_resolved(config, profile, tables, groups))
    if problems:
        msg = "invalid configuration:\n" + "\n".join(f"  - {problem}" for problem in problems)
        raise ConfigError(msg)
    return tuple(resolved)


def _merged(
    base: BaseModel,
    model: type[BaseModel],
    given: Mapping[str, Any],
    *,
    where: str,
    into: list[str],
) -> BaseModel:
    """Return ``base`` with the ``given`` keys of a profile's table, checked by ``model``."""
    shared = set(model.model_fields)
    try:
        return model.model_validate({**base.model_dump(include=shared), **given})
    except ValidationError as exc:
        for error in exc.errors():
            words = describe(error, model=model)
            into.append(f"{where}.{words}" if error["loc"] else f"{where}: {words}")
        return base


def _resolved(
    config: Config, profile: Profile, tables: Mapping[str, Any], groups: GroupsConfig
) -> ResolvedProfile:
    speak = profile.voice.speak
    cap = profile.budget.chat_daily_tokens
    return ResolvedProfile(
        name=profile.name,
        chats=profile.chats,
        persona=profile.persona,
        language=profile.language or config.bot.language,
        pacing=tables["pacing"],
        groups=groups,
        speak=config.voice.speak if speak is None else speak,
        initiative=tables["initiative"],
        chat_daily_tokens=config.budget.chat_daily_tokens if cap is None else cap,
        tools=profile.tools,
    )


@dataclass(frozen=True, slots=True)
class Reloaded:
    """What a reload did: the keys whose new values apply from the next batch, and those
    that keep their running values until a restart."""

    applied: tuple[str, ...]
    restart_needed: tuple[str, ...]


class Settings:
    """The running configuration and the persona texts read with it; swapped whole."""

    def __init__(
        self,
        config: Config,
        *,
        persona: str | None = None,
        personas: Mapping[str, str] | None = None,
    ) -> None:
        """Run ``config``; ``persona`` is the base persona's text and ``personas`` those of
        the profiles that read theirs from a file, by name (the composition root reads the
        files). Raise ``ConfigError`` when a profile's table breaks its rules."""
        self._config = config
        self._persona = config.bot.persona if persona is None else persona
        self._personas = dict(personas or {})
        self._profiles = resolve_profiles(config)

    @property
    def current(self) -> Config:
        """Return the whole configuration running now."""
        return self._config

    @property
    def profiles_cap_chats(self) -> bool:
        """Tell whether a profile sets a chat's daily token cap."""
        return any(profile.chat_daily_tokens for profile in self._profiles)

    @property
    def profiles(self) -> tuple[ResolvedProfile, ...]:
        """Return the profiles, in the order they are tried."""
        return self._profiles

    def profile_of(self, chat: ChatKey) -> ResolvedProfile | None:
        """Return the first profile whose pattern names ``chat``; ``None`` if none does."""
        return next((p for p in self._profiles if p.applies_to(chat)), None)

    @property
    def persona(self) -> str:
        """Return the base persona's text (``bot.persona`` or its file)."""
        return self._persona

    def for_chat(self, chat: ChatKey) -> ChatSettings:
        """Return what ``chat`` runs with now: its profile, else the base config."""
        config, profile = self._config, self.profile_of(chat)
        if profile is None:
            return ChatSettings(
                profile="",
                persona=self._persona,
                language=config.bot.language,
                pacing=config.pacing,
                groups=config.groups.for_chat(chat),
                speak=config.voice.speak,
                initiative=config.initiative,
                chat_daily_tokens=config.budget.chat_daily_tokens,
                tools=None,
            )
        return ChatSettings(
            profile=profile.name,
            persona=self.persona_of(profile),
            language=profile.language,
            pacing=profile.pacing,
            groups=profile.groups.for_chat(chat),
            speak=profile.speak,
            initiative=profile.initiative,
            chat_daily_tokens=profile.chat_daily_tokens,
            tools=profile.tools,
        )

    def is_admin(self, chat: ChatKey, sender_id: str) -> bool:
        """Tell whether ``sender_id`` writing in ``chat`` is one of ``bot.admins`` (named by
        numeric platform id); the console user always is one."""
        platform = chat.platform
        return platform == "console" or f"{platform}:{sender_id}" in self._config.bot.admins

    def initiatives(self) -> tuple[InitiativeConfig, ...]:
        """Return the base ``[initiative]`` and each profile's, in the order tried."""
        return (self._config.initiative, *(p.initiative for p in self._profiles))

    def persona_of(self, profile: ResolvedProfile) -> str:
        """Return a profile's persona: written in it, read from its file, else the base."""
        if profile.persona is not None:
            return profile.persona
        return self._personas.get(profile.name, self._persona)

    def reload(
        self, config: Config, *, persona: str, personas: Mapping[str, str] | None = None
    ) -> Reloaded:
        """Swap in ``config`` (validated by ``parse_config``), keeping the running value of
        every key that needs a restart; return what changed. A profile that breaks its
        table's rules raises ``ConfigError`` and nothing changes."""
        profiles = resolve_profiles(config)
        old, new = _flat(self._config.model_dump()), _flat(config.model_dump())
        changed = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
        kept = [key for key in changed if restart_only(key)]
        if kept:
            merged = config.model_dump()
            for key in kept:
                _put(merged, key, old.get(key))
            config = Config.model_validate(merged)
        if persona != self._persona and "bot.persona" not in changed:
            changed.append("bot.persona")
        if dict(personas or {}) != self._personas and "profiles" not in changed:
            changed.append("profiles")
        self._config, self._profiles = config, profiles
        self._persona, self._personas = persona, dict(personas or {})
        return Reloaded(tuple(key for key in changed if not restart_only(key)), tuple(kept))

    # -- the tables, as they are now ---------------------------------------------------

    @property
    def bot(self) -> BotConfig:
        return self._config.bot

    @property
    def pacing(self) -> PacingConfig:
        return self._config.pacing

    @property
    def groups(self) -> GroupsConfig:
        return self._config.groups

    @property
    def llm(self) -> LLMConfig:
        return self._config.llm

    @property
    def memory(self) -> MemoryConfig:
        return self._config.memory

    @property
    def telegram(self) -> TelegramConfig:
        return self._config.telegram

    @property
    def qq(self) -> QQConfig:
        return self._config.qq

    @property
    def web(self) -> WebConfig:
        return self._config.web

    @property
    def reactions(self) -> ReactionsConfig:
        return self._config.reactions

    @property
    def stickers(self) -> StickersConfig:
        return self._config.stickers

    @property
    def voice(self) -> VoiceConfig:
        return self._config.voice

    @property
    def initiative(self) -> InitiativeConfig:
        return self._config.initiative

    @property
    def budget(self) -> BudgetConfig:
        return self._config.budget

    @property
    def access(self) -> AccessConfig:
        return self._config.access

    @property
    def tools(self) -> ToolsConfig:
        return self._config.tools

    @property
    def database_path(self) -> Path:
        return self._config.database_path

    @property
    def stickers_dir(self) -> Path:
        return self._config.stickers_dir

    def chat_days(self, now: Callable[[], datetime]) -> ChatDays:
        """Return the chat days of the running zone and day boundary, on ``now``."""
        return self._config.chat_days(now)


def restart_only(key: str) -> bool:
    """Whether ``key`` (a dotted config key) keeps its running value until a restart."""
    return any(key == prefix or key.startswith(f"{prefix}.") for prefix in RESTART_ONLY)


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return ``data``'s values by dotted key; a list of tables stays one value."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def _put(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``data``'s value at a dotted key."""
    *tables, key = dotted.split(".")
    for table in tables:
        data = data[table]
    data[key] = value
