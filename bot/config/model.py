"""Load, validate and freeze ``config.toml``.

Secrets never live in the file: it names the environment variables that hold them.
Every error names the key, the bad value and the form that was expected.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from datetime import datetime, time
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from zoneinfo import ZoneInfo

from pydantic import Field, ValidationError, model_validator

from bot.config.errors import describe, toml_error, toml_value
from bot.config.groups import BudgetConfig, GroupsConfig, describe_override
from bot.config.plugins import PluginsConfig
from bot.config.profiles import PROFILES_KEY, AccessConfig, Profile, describe_profile
from bot.config.qq_official import QQOfficialConfig
from bot.config.tools import ToolsConfig, describe_server
from bot.config.values import (
    AdminIds,
    ClockTime,
    EnvName,
    EnvNameOrEmpty,
    Hours,
    IanaZone,
    LogLevel,
    NonNegativeSeconds,
    PositiveSeconds,
    Section,
    http_url,
    is_loopback,
)
from bot.days import ChatDays
from bot.errors import ConfigError
from bot.hours import Window, window_minutes
from bot.texts import Language


class BotConfig(Section):
    name: str = Field(default="小满", min_length=1)
    """Display name; writing it in a group counts as addressing the bot."""
    aliases: tuple[str, ...] = ()
    """More names that count as addressing the bot."""
    timezone: IanaZone = "Asia/Shanghai"
    """IANA zone for dates in prompts and the chat day."""
    data_dir: Path = Path("data")
    """Where ``pacebot.sqlite3`` and ``logs/`` live (relative to the config file)."""
    persona: str = "你是小满，一个说话自然、简短、有点俏皮的朋友。"
    """The initial persona."""
    persona_file: Path | None = None
    """Read the initial persona from this file instead (relative to the config file)."""
    admins: AdminIds = ()
    """Admins by numeric platform id: ``telegram:123``, ``qq:10001``; ``qqbot:<openid>``."""
    log_level: LogLevel = "INFO"
    """Log level: TRACE, DEBUG, INFO, SUCCESS, WARNING or ERROR (``--log-level`` and
    ``PACEBOT_LOG_LEVEL`` override it)."""
    language: Language = "en"
    """The language of command answers, refusals and the console's own lines: en or zh."""

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class PacingConfig(Section):
    debounce_min_s: NonNegativeSeconds = 5.0
    """Shortest wait after the latest message before answering, in seconds."""
    debounce_max_s: NonNegativeSeconds = 15.0
    """Longest such wait, in seconds; each message draws a fresh wait in between."""
    max_wait_s: PositiveSeconds = 60.0
    """Answer at the latest this many seconds after the first waiting message."""
    max_batch: int = Field(default=30, ge=1)
    """Answer at once when this many messages are waiting."""
    max_delay_s: NonNegativeSeconds = 10.0
    """Upper clamp for ``send_delay_seconds`` between two replies, in seconds."""
    typing_chars_per_s: float = Field(default=6.0, gt=0)
    """Typing speed used for the delays of fallback-split replies, in characters/second."""
    on_new_message: Literal["cancel", "finish"] = "cancel"
    """What to do with unsent replies when the person answered writes again."""
    stale_after_s: PositiveSeconds = 300.0
    """A reply not sent this many seconds after it was due is dropped."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.debounce_min_s > self.debounce_max_s:
            msg = (
                f"pacing.debounce_min_s = {self.debounce_min_s}: must not exceed "
                f"pacing.debounce_max_s ({self.debounce_max_s})"
            )
            raise ValueError(msg)
        return self


class SplitterConfig(Section):
    base_url: str = ""
    """Endpoint of the cheaper splitter model; "" = ``[llm] base_url``."""
    api_key_env: EnvNameOrEmpty = ""
    """Environment variable with its key; "" = ``[llm] api_key_env``."""
    model: str = ""
    """Model name; "" = ``[llm] model``."""


class LLMConfig(Section):
    base_url: Annotated[str, http_url("https://api.openai.com/v1")] = ""
    """OpenAI-compatible endpoint; "" = the SDK default."""
    api_key_env: EnvName = "PACEBOT_LLM_API_KEY"
    """Environment variable that holds the API key."""
    model: str = Field(default="gpt-4o-mini", min_length=1)
    """The chat model's name."""
    temperature: float = Field(default=0.8, ge=0, le=2)
    """Sampling temperature, 0 to 2: higher answers vary more."""
    timeout_s: PositiveSeconds = 45.0
    """Timeout of one request, in seconds."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries of one request on connection errors, 429 and 5xx, with backoff, 0 to 10."""
    json_mode: bool = True
    """Send ``response_format = {"type": "json_object"}``."""
    max_output_tokens: int = Field(default=1024, ge=16)
    """The most the model may write in one answer, in tokens."""
    vision: bool = False
    """Send the batch's pictures to the model (it must accept OpenAI image input)."""
    max_images: int = Field(default=4, ge=1, le=16)
    """The most pictures one batch sends, newest first, 1 to 16."""
    memory_tool: bool = False
    """Offer the model a ``search_memory`` function (at most two calls per batch then)."""
    splitter: SplitterConfig = SplitterConfig()
    """The cheaper model that turns an answer that is not valid JSON into replies."""


class MemoryEmbeddingsConfig(Section):
    base_url: Annotated[str, http_url("https://api.openai.com/v1")] = ""
    """OpenAI-compatible endpoint serving ``/embeddings``; "" = ``[llm] base_url``."""
    api_key_env: EnvNameOrEmpty = ""
    """Environment variable with its key; "" = ``[llm] api_key_env``."""
    model: str = ""
    """Embeddings model, e.g. ``text-embedding-3-small``; "" turns semantic recall off."""

    @property
    def enabled(self) -> bool:
        return bool(self.model.strip())


class MemoryConfig(Section):
    day_boundary: ClockTime = "04:00"
    """When one chat day ends and the next begins, HH:MM in ``bot.timezone``."""
    context_budget_tokens: int = Field(default=6000, ge=500)
    """The most tokens a prompt may hold, counted offline."""
    recall_hits: int = Field(default=3, ge=0)
    """How many keyword (and meaning) matches recall brings into the prompt."""
    catch_up_days: int = Field(default=7, ge=0)
    """How far back start-up summarises the chat days missed while down, in days."""
    summary_concurrency: int = Field(default=4, ge=1)
    """How many chats the nightly job summarises at once."""
    facts_per_person: int = Field(default=20, ge=1, le=200)
    """The most live facts kept about one person in one chat, 1 to 200; the oldest give way."""
    people_share: float = Field(default=0.1, ge=0, le=0.5)
    """The part of ``context_budget_tokens`` the "people here" facts may fill, 0 to 0.5."""
    trace_keep: int = Field(default=50, ge=1, le=10_000)
    """How many of each chat's newest batch traces are kept for /trace."""
    embeddings: MemoryEmbeddingsConfig = MemoryEmbeddingsConfig()
    """Recall by meaning as well as by keywords; off while its ``model`` is ""."""

    @property
    def day_boundary_time(self) -> time:
        return time.fromisoformat(self.day_boundary)


class TelegramConfig(Section):
    enabled: bool = False
    """Run the bot on Telegram (``pacebot run``)."""
    token_env: EnvName = "TELEGRAM_BOT_TOKEN"
    """Environment variable that holds the BotFather token."""
    api_base_url: Annotated[str, http_url("http://127.0.0.1:8081/bot")] = ""
    """A self-hosted Bot API server, e.g. http://127.0.0.1:8081/bot; "" = official."""


class QQConfig(Section):
    enabled: bool = False
    """Run the bot on QQ through a OneBot v11 implementation (``pacebot run``)."""
    host: str = "127.0.0.1"
    """Address the reverse WebSocket listens on."""
    port: int = Field(default=8080, ge=1, le=65535)
    """TCP port the reverse WebSocket listens on."""
    access_token_env: EnvName = "ONEBOT_ACCESS_TOKEN"
    """Environment variable with the OneBot access token; required off loopback."""
    allow_private_image_hosts: bool = False
    """Fetch picture URLs on loopback/private addresses (a OneBot implementation nearby)."""
    backfill: bool = True
    """On each OneBot connect, fetch back recent messages of active chats that were missed."""
    backfill_days: float = Field(default=2.0, gt=0, le=365)
    """Chats with a message in the last this many days are asked, in days (fractions allowed)."""
    backfill_chats: int = Field(default=50, ge=1, le=1000)
    """At most this many chats are asked on one connect, the most recently active first."""
    backfill_count: int = Field(default=30, ge=1, le=500)
    """Each chat is asked for this many of its newest messages."""
    strip_urls: bool = False
    """Replace links in the bot's QQ texts with ``[link]`` (links draw Tencent's risk control)."""

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)


class ReactionsConfig(Section):
    enabled: bool = True
    """Let the bot answer with an emoji reaction on a message, where the platform has them."""


class StickersConfig(Section):
    enabled: bool = False
    """Collect the stickers people send, and let the bot send them back by id."""
    scope: Literal["chat", "global"] = "chat"
    """``chat``: each chat has its own collection; ``global``: one per platform for the bot."""
    max_per_chat: int = Field(default=64, ge=1, le=10_000)
    """How many stickers a collection keeps; the least recently seen or sent go first."""
    in_prompt: int = Field(default=12, ge=0, le=200)
    """How many stickers the prompt offers (most sent and newest first); 0 = none."""


class VoiceConfig(Section):
    transcribe: bool = False
    """Hear voice notes: speech to text before the batch is answered."""
    speak: bool = False
    """Let the model answer with voice items, spoken by the speech endpoint."""
    base_url: Annotated[str, http_url("https://api.openai.com/v1")] = ""
    """OpenAI-compatible endpoint of ``/audio/transcriptions`` and ``/audio/speech``;
    "" = ``[llm] base_url``."""
    api_key_env: EnvNameOrEmpty = ""
    """Environment variable with its key; "" = ``[llm] api_key_env``."""
    stt_model: str = Field(default="whisper-1", min_length=1)
    """The transcription model."""
    tts_model: str = Field(default="tts-1", min_length=1)
    """The speech model."""
    tts_voice: str = Field(default="alloy", min_length=1)
    """The voice the speech model speaks with."""
    max_seconds: float = Field(default=120.0, gt=0, le=3600)
    """Longer voice notes are not transcribed, in seconds."""
    max_chars: int = Field(default=200, ge=1, le=4096)
    """Longer voice items are sent as text, in characters."""

    @property
    def enabled(self) -> bool:
        """Whether any voice endpoint is used (and so its key is needed)."""
        return self.transcribe or self.speak


class InitiativeConfig(Section):
    later: bool = True
    """Let the model promise to come back later: reminders and follow-ups (``later`` items)."""
    max_pending_per_chat: int = Field(default=5, ge=1, le=1000)
    """The most later items one chat may hold waiting; more are refused."""
    max_days_ahead: int = Field(default=30, ge=1, le=3660)
    """How far ahead, in days, a later item may be due."""
    openers: bool = False
    """Speak first in a chat that has gone quiet (private chats; groups too with the next)."""
    openers_in_groups: bool = False
    """Openers in groups as well as private chats."""
    after_silence_s: PositiveSeconds = 28800.0
    """How long the chat must be without a message before an opener may come, in seconds."""
    active_within_s: PositiveSeconds = 259200.0
    """Openers only where someone talked with the bot within this time, in seconds."""
    hours: Hours = "09:00-22:00"
    """Local time (``bot.timezone``) in which the bot may speak first, ``HH:MM-HH:MM``."""
    max_openers_per_day: int = Field(default=1, ge=0, le=24)
    """The most opener batches per chat and chat day; 0 = none."""

    @property
    def window(self) -> Window:
        """``hours`` as minutes of the local day: (start, end), the end maybe past midnight."""
        minutes = window_minutes(self.hours)
        assert minutes is not None  # validated
        return minutes

    @model_validator(mode="after")
    def _active_outlasts_silence(self) -> Self:
        if self.active_within_s < self.after_silence_s:
            msg = (
                f"initiative.active_within_s = {self.active_within_s:g}: must be at least "
                f"initiative.after_silence_s ({self.after_silence_s:g}), or no chat is ever "
                "both silent and active"
            )
            raise ValueError(msg)
        return self


WEB_TOKEN_CHARS_MIN = 16
"""The shortest dashboard token accepted: it guards a page that can change memory."""


class WebConfig(Section):
    enabled: bool = False
    """Serve the dashboard from ``pacebot run``."""
    host: str = "127.0.0.1"
    """Address the dashboard listens on; put TLS in front of anything but loopback."""
    port: int = Field(default=8090, ge=1, le=65535)
    """TCP port the dashboard listens on."""
    token_env: EnvName = "PACEBOT_WEB_TOKEN"
    """Environment variable with the dashboard token; required when enabled."""

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def url(self) -> str:
        """The address to open in a browser once ``pacebot run`` serves the dashboard."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"


class Config(Section):
    """The whole validated configuration."""

    bot: BotConfig = BotConfig()
    """Who the bot is, where it keeps its data, and who may command it."""
    pacing: PacingConfig = PacingConfig()
    """How long the bot waits before it answers, and how it paces its replies."""
    groups: GroupsConfig = GroupsConfig()
    """How the bot answers in groups, and when it joins the talk unaddressed."""
    llm: LLMConfig = LLMConfig()
    """The chat model and how it is called."""
    memory: MemoryConfig = MemoryConfig()
    """Chat days, summaries, recall and how much a prompt may hold."""
    telegram: TelegramConfig = TelegramConfig()
    """The Telegram bot."""
    qq: QQConfig = QQConfig()
    """QQ, through a OneBot v11 implementation connecting to a reverse WebSocket."""
    qq_official: QQOfficialConfig = QQOfficialConfig()
    """QQ as an official bot of the QQ Open Platform (AppID and AppSecret)."""
    web: WebConfig = WebConfig()
    """The dashboard, served by ``pacebot run``."""
    reactions: ReactionsConfig = ReactionsConfig()
    """Emoji reactions on messages."""
    stickers: StickersConfig = StickersConfig()
    """The stickers the bot collects and sends."""
    voice: VoiceConfig = VoiceConfig()
    """Voice notes heard and spoken through OpenAI-compatible audio endpoints."""
    initiative: InitiativeConfig = InitiativeConfig()
    """What the bot does on its own: reminders, follow-ups and openers."""
    budget: BudgetConfig = BudgetConfig()
    """What the LLM calls may spend, and what they cost."""
    tools: ToolsConfig = ToolsConfig()
    """The tools the model may call while it answers: MCP servers and web search."""
    plugins: PluginsConfig = PluginsConfig()
    """nonebot2 plugins hosted beside pacebot on QQ."""
    access: AccessConfig = AccessConfig()
    """Which chats and people the bot serves at all."""
    profiles: tuple[Profile, ...] = ()
    """What the chats matching a profile's patterns run with: ``[[profiles]]`` tables."""

    @model_validator(mode="after")
    def _profiles_named_once(self) -> Self:
        seen: set[str] = set()
        for number, profile in enumerate(self.profiles, start=1):
            where = f"{PROFILES_KEY} (item {number})"
            if profile.name in seen:
                msg = f"{where}: name = {toml_value(profile.name)} is taken; name each once"
                raise ValueError(msg)
            if profile.persona is not None and profile.persona_file is not None:
                msg = f"{where}: set persona or persona_file, not both"
                raise ValueError(msg)
            seen.add(profile.name)
        return self

    @property
    def database_path(self) -> Path:
        return self.bot.data_dir / "pacebot.sqlite3"

    @property
    def log_dir(self) -> Path:
        return self.bot.data_dir / "logs"

    @property
    def stickers_dir(self) -> Path:
        """Where the stickers collected on QQ are kept, as files."""
        return self.bot.data_dir / "stickers"

    def chat_days(self, now: Callable[[], datetime]) -> ChatDays:
        """Return the chat days of ``bot.timezone`` and ``memory.day_boundary``, on ``now``."""
        return ChatDays(self.bot.zone, self.memory.day_boundary_time, now)


def parse_config(data: Mapping[str, Any], *, base_dir: Path) -> Config:
    """Validate a parsed TOML document; resolve paths relative to ``base_dir``."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = "\n".join(f"  - {_described(e, data)}" for e in _reported(exc.errors()))
        msg = f"invalid configuration:\n{problems}"
        raise ConfigError(msg) from None
    bot = config.bot
    data_dir = bot.data_dir if bot.data_dir.is_absolute() else base_dir / bot.data_dir
    persona_file = bot.persona_file
    if persona_file is not None and not persona_file.is_absolute():
        persona_file = base_dir / persona_file
    profiles = tuple(
        profile.model_copy(update={"persona_file": base_dir / profile.persona_file})
        if profile.persona_file is not None and not profile.persona_file.is_absolute()
        else profile
        for profile in config.profiles
    )
    bot = bot.model_copy(update={"data_dir": data_dir, "persona_file": persona_file})
    return config.model_copy(update={"bot": bot, "profiles": profiles})


def _described(error: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    return (
        describe_override(error, data)
        or describe_profile(error, data)
        or describe_server(error, data)
        or describe(error, model=Config)
    )


def _reported(errors: list[Any]) -> list[Any]:
    """Drop the follow-on error of a pattern list whose items were refused already."""
    refused = {tuple(e["loc"][:-1]) for e in errors if e["loc"] and isinstance(e["loc"][-1], int)}
    return [e for e in errors if not (e["type"] == "too_short" and tuple(e["loc"]) in refused)]


def load_config(path: Path) -> Config:
    """Read and validate a config file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read config file {path}: {exc.strerror}"
        raise ConfigError(msg) from None
    except UnicodeDecodeError as exc:
        msg = f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8"
        raise ConfigError(msg) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = toml_error(path, text, exc)
        raise ConfigError(msg) from None
    return parse_config(data, base_dir=path.resolve().parent)


def enabled_platforms(config: Config) -> list[str]:
    """Name the platforms ``pacebot run`` would start."""
    switches = (
        ("telegram", config.telegram.enabled),
        ("qq", config.qq.enabled),
        ("qqbot", config.qq_official.enabled),
    )
    return [name for name, on in switches if on]
