"""Load, validate and freeze ``config.toml``.

Secrets never live in the file: it names the environment variables that hold them.
Every error names the key, the bad value and the form that was expected.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from datetime import time
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bot.config_errors import describe, toml_value
from bot.config_values import (
    AdminIds,
    ClockTime,
    EnvName,
    EnvNameOrEmpty,
    GroupChatKey,
    IanaZone,
    Interests,
    LogLevel,
    NonNegativeSeconds,
    PositiveSeconds,
    Price,
    QuietHours,
    Tokens,
    http_url,
    is_loopback,
)
from bot.errors import ConfigError
from bot.models import ChatKey
from bot.texts import Language


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class BotConfig(_Section):
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
    """Admins by numeric platform id: ``telegram:123``, ``qq:10001``."""
    log_level: LogLevel = "INFO"
    language: Language = "en"
    """The language of command answers, refusals and the console's own lines."""

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class PacingConfig(_Section):
    debounce_min_s: NonNegativeSeconds = 5.0
    """Shortest wait after the latest message before answering, in seconds."""
    debounce_max_s: NonNegativeSeconds = 15.0
    """Longest such wait, in seconds; each message draws a fresh wait in between."""
    max_wait_s: PositiveSeconds = 60.0
    """Answer at the latest this many seconds after the first waiting message."""
    max_batch: int = Field(default=30, ge=1)
    """Answer at once when this many messages are waiting."""
    max_delay_s: NonNegativeSeconds = 10.0
    """Upper clamp for ``send_delay_seconds`` between two replies."""
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


ReplyMode = Literal["mention", "always", "smart"]
OVERRIDE_KEY = "groups.override"


class GroupSettings(_Section):
    """What a group's batches are answered by: the keys an override may set per group."""

    reply_mode: ReplyMode = "mention"
    """When a group batch is answered: addressed only, always, or when the gate lets it."""
    interests: Interests = ()
    """Words and phrases the bot cares about: one in a message is a reason to speak."""
    talk_value: float = Field(default=0.3, ge=0, le=1)
    """The chance (0..1) that a batch with a reason to speak goes to the LLM."""
    unaddressed_calls_per_hour: int = Field(default=6, ge=0)
    """The most LLM calls per group in any hour for batches nobody addressed."""
    max_share: float = Field(default=0.25, ge=0, le=1)
    """Stay out while the bot wrote more than this share of the chat's last 40 messages."""
    quiet_hours: QuietHours = ""
    """Local times ``HH:MM-HH:MM`` (``bot.timezone``) without unaddressed replies; "" = none."""

    @property
    def quiet_span(self) -> tuple[time, time] | None:
        """Return ``quiet_hours`` as (start, end) times of day; ``None`` when there are none."""
        if not self.quiet_hours:
            return None
        start, _, end = self.quiet_hours.partition("-")
        return time.fromisoformat(start), time.fromisoformat(end)


class GroupOverride(GroupSettings):
    """One ``[[groups.override]]``: the settings of one group, each key it leaves out
    taken from ``[groups]``."""

    chat: GroupChatKey


class GroupsConfig(GroupSettings):
    store_unaddressed: bool = True
    """Keep unaddressed group messages as context."""
    override: tuple[GroupOverride, ...] = ()
    """Per-group settings, by the group's chat key; they cover every topic of a forum."""

    @model_validator(mode="after")
    def _one_override_per_group(self) -> Self:
        seen: set[str] = set()
        for number, override in enumerate(self.override, start=1):
            if override.chat in seen:
                msg = (
                    f"{OVERRIDE_KEY} (item {number}): chat = {toml_value(override.chat)}"
                    " has an override already; merge the two into one"
                )
                raise ValueError(msg)
            seen.add(override.chat)
        return self

    @functools.cached_property
    def _by_room(self) -> dict[str, GroupSettings]:
        shared = set(GroupSettings.model_fields)
        merged: dict[str, GroupSettings] = {}
        for override in self.override:
            given = {key: getattr(override, key) for key in override.model_fields_set & shared}
            base = GroupSettings.model_validate(self.model_dump(include=shared))
            merged[override.chat] = base.model_copy(update=given)
        return merged

    def for_chat(self, chat: ChatKey) -> GroupSettings:
        """Return the settings of ``chat``'s group: ``[groups]`` with its override applied.

        A forum topic takes its group's override: overrides match the whole group.
        """
        return self._by_room.get(str(chat.room), self)


class BudgetConfig(_Section):
    daily_tokens: Tokens = 0
    """Soft cap: tokens the whole bot may spend per chat day before optional calls stop."""
    hard_daily_tokens: Tokens = 0
    """Hard cap: tokens per chat day after which no call is made until the next chat day."""
    chat_daily_tokens: Tokens = 0
    """Soft cap per chat and chat day."""
    price_in_per_million: Price = 0.0
    """What a million input (prompt) tokens cost, in ``currency``."""
    price_out_per_million: Price = 0.0
    """What a million output (completion) tokens cost, in ``currency``."""
    currency: str = Field(default="USD", min_length=1, max_length=12)
    """The label the cost figures carry, e.g. USD or CNY."""


class SplitterConfig(_Section):
    base_url: str = ""
    """Endpoint of the cheaper splitter model; "" = ``[llm] base_url``."""
    api_key_env: EnvNameOrEmpty = ""
    """Environment variable with its key; "" = ``[llm] api_key_env``."""
    model: str = ""
    """Model name; "" = ``[llm] model``."""


class LLMConfig(_Section):
    base_url: Annotated[str, http_url("https://api.openai.com/v1")] = ""
    """OpenAI-compatible endpoint; "" = the SDK default."""
    api_key_env: EnvName = "PACEBOT_LLM_API_KEY"
    """Environment variable that holds the API key."""
    model: str = Field(default="gpt-4o-mini", min_length=1)
    temperature: float = Field(default=0.8, ge=0, le=2)
    timeout_s: PositiveSeconds = 45.0
    """Timeout of one request, in seconds."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries on connection errors, 429 and 5xx, with backoff."""
    json_mode: bool = True
    """Send ``response_format = {"type": "json_object"}``."""
    max_output_tokens: int = Field(default=1024, ge=16)
    vision: bool = False
    """Send the batch's pictures to the model (it must accept OpenAI image input)."""
    max_images: int = Field(default=4, ge=1, le=16)
    """The most pictures one batch sends, newest first."""
    memory_tool: bool = False
    """Offer the model a ``search_memory`` function (at most two calls per batch then)."""
    splitter: SplitterConfig = SplitterConfig()


class MemoryEmbeddingsConfig(_Section):
    base_url: Annotated[str, http_url("https://api.openai.com/v1")] = ""
    """OpenAI-compatible endpoint serving ``/embeddings``; "" = ``[llm] base_url``."""
    api_key_env: EnvNameOrEmpty = ""
    """Environment variable with its key; "" = ``[llm] api_key_env``."""
    model: str = ""
    """Embeddings model, e.g. ``text-embedding-3-small``; "" turns semantic recall off."""

    @property
    def enabled(self) -> bool:
        return bool(self.model.strip())


class MemoryConfig(_Section):
    day_boundary: ClockTime = "04:00"
    """When one chat day ends and the next begins, HH:MM in ``bot.timezone``."""
    context_budget_tokens: int = Field(default=6000, ge=500)
    """The most tokens a prompt may hold, counted offline."""
    recall_hits: int = Field(default=3, ge=0)
    catch_up_days: int = Field(default=7, ge=0)
    summary_concurrency: int = Field(default=4, ge=1)
    facts_per_person: int = Field(default=20, ge=1, le=200)
    """The most live facts kept about one person in one chat; the oldest give way."""
    people_share: float = Field(default=0.1, ge=0, le=0.5)
    """The part of ``context_budget_tokens`` the "people here" facts may fill."""
    trace_keep: int = Field(default=50, ge=1, le=10_000)
    """How many of each chat's newest batch traces are kept for /trace."""
    embeddings: MemoryEmbeddingsConfig = MemoryEmbeddingsConfig()

    @property
    def day_boundary_time(self) -> time:
        return time.fromisoformat(self.day_boundary)


class TelegramConfig(_Section):
    enabled: bool = False
    token_env: EnvName = "TELEGRAM_BOT_TOKEN"
    """Environment variable that holds the BotFather token."""
    api_base_url: Annotated[str, http_url("http://127.0.0.1:8081/bot")] = ""
    """A self-hosted Bot API server, e.g. http://127.0.0.1:8081/bot; "" = official."""


class QQConfig(_Section):
    enabled: bool = False
    host: str = "127.0.0.1"
    """Address the reverse WebSocket listens on."""
    port: int = Field(default=8080, ge=1, le=65535)
    access_token_env: EnvName = "ONEBOT_ACCESS_TOKEN"
    """Environment variable with the OneBot access token; required off loopback."""
    allow_private_image_hosts: bool = False
    """Fetch picture URLs on loopback/private addresses (a OneBot implementation nearby)."""
    strip_urls: bool = False
    """Replace links in the bot's QQ texts with ``[link]`` (links draw Tencent's risk control)."""

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)


class ReactionsConfig(_Section):
    enabled: bool = True
    """Let the bot answer with an emoji reaction on a message, where the platform has them."""


class StickersConfig(_Section):
    enabled: bool = False
    """Collect the stickers people send, and let the bot send them back by id."""
    scope: Literal["chat", "global"] = "chat"
    """``chat``: each chat has its own collection; ``global``: one per platform for the bot."""
    max_per_chat: int = Field(default=64, ge=1, le=10_000)
    """How many a collection keeps; the least recently seen or sent go first."""
    in_prompt: int = Field(default=12, ge=0, le=200)
    """How many the prompt offers (most sent and newest first)."""


WEB_TOKEN_CHARS_MIN = 16
"""The shortest dashboard token accepted: it guards a page that can change memory."""


class WebConfig(_Section):
    enabled: bool = False
    """Serve the dashboard from ``pacebot run``."""
    host: str = "127.0.0.1"
    """Address the dashboard listens on; put TLS in front of anything but loopback."""
    port: int = Field(default=8090, ge=1, le=65535)
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


class Config(_Section):
    """The whole validated configuration."""

    bot: BotConfig = BotConfig()
    pacing: PacingConfig = PacingConfig()
    groups: GroupsConfig = GroupsConfig()
    llm: LLMConfig = LLMConfig()
    memory: MemoryConfig = MemoryConfig()
    telegram: TelegramConfig = TelegramConfig()
    qq: QQConfig = QQConfig()
    web: WebConfig = WebConfig()
    reactions: ReactionsConfig = ReactionsConfig()
    stickers: StickersConfig = StickersConfig()
    budget: BudgetConfig = BudgetConfig()

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


def parse_config(data: Mapping[str, Any], *, base_dir: Path) -> Config:
    """Validate a parsed TOML document; resolve paths relative to ``base_dir``."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = "\n".join(f"  - {_problem(e, data)}" for e in exc.errors())
        msg = f"invalid configuration:\n{problems}"
        raise ConfigError(msg) from None
    bot = config.bot
    data_dir = bot.data_dir if bot.data_dir.is_absolute() else base_dir / bot.data_dir
    persona_file = bot.persona_file
    if persona_file is not None and not persona_file.is_absolute():
        persona_file = base_dir / persona_file
    return config.model_copy(
        update={"bot": bot.model_copy(update={"data_dir": data_dir, "persona_file": persona_file})}
    )


def _problem(error: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """Describe one validation error; one in an override names its item and its chat."""
    loc = tuple(error["loc"])
    if loc == ("groups", "override") and error["type"] in {"tuple_type", "list_type"}:
        return (
            f"{OVERRIDE_KEY}: write each group's settings as [[{OVERRIDE_KEY}]]"
            ' (double brackets), with chat = "platform:group:id" in it'
        )
    if loc[:2] != ("groups", "override") or len(loc) < 4 or not isinstance(loc[2], int):
        return describe(error, model=Config)
    key = loc[3]
    where = f"{OVERRIDE_KEY} (item {loc[2] + 1}"
    chat = _override_chat(data, loc[2])
    if key != "chat" and chat is not None:
        where += f", chat {toml_value(chat)}"
    if key == "store_unaddressed" and error["type"] == "extra_forbidden":
        return f"{where}): store_unaddressed is set for every group under [groups], not per group"
    return f"{where}): {describe({**error, 'loc': loc[3:]}, model=GroupOverride)}"


def _override_chat(data: Mapping[str, Any], index: int) -> object:
    """Return the ``chat`` an override of the raw document names, if it names one."""
    groups = data.get("groups")
    overrides = groups.get("override") if isinstance(groups, Mapping) else None
    if isinstance(overrides, list) and index < len(overrides):
        item = overrides[index]
        return item.get("chat") if isinstance(item, Mapping) else None
    return None


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
        msg = f"{path} is not valid TOML: {exc}"
        raise ConfigError(msg) from None
    return parse_config(data, base_dir=path.resolve().parent)


def read_persona(config: Config) -> str:
    """Return the initial persona text, from ``persona_file`` when one is set."""
    if config.bot.persona_file is None:
        return config.bot.persona
    try:
        text = config.bot.persona_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        msg = f"bot.persona_file = {toml_value(config.bot.persona_file)}: cannot read it" + (
            f" ({exc.strerror})"
        )
        raise ConfigError(msg) from None
    except UnicodeDecodeError as exc:
        msg = (
            f"bot.persona_file = {toml_value(config.bot.persona_file)}: not UTF-8 text"
            f" (byte {exc.start} cannot be decoded); save it as UTF-8"
        )
        raise ConfigError(msg) from None
    if not text:
        msg = f"bot.persona_file = {toml_value(config.bot.persona_file)}: the file is empty"
        raise ConfigError(msg)
    return text


def enabled_platforms(config: Config) -> list[str]:
    """Name the platforms ``pacebot run`` would start."""
    switches = (("telegram", config.telegram.enabled), ("qq", config.qq.enabled))
    return [name for name, on in switches if on]
