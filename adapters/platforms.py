"""Which platforms a config enables, building them (importing only their libraries), and
which of them missed messages are fetched back from.

A platform's library (python-telegram-bot; nonebot, FastAPI and uvicorn) is imported
inside the function that builds it, so a command loads only what its config enables.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.backfill import BackfillSettings
from bot.commands.menu import menu
from bot.config.model import Config, enabled_platforms
from bot.ports import History, MessageSink, Platform
from bot.secrets import Secrets
from bot.texts import Texts

if TYPE_CHECKING:
    from adapters.qqbot.ledger import Ledger

# The module that holds each platform; importing it loads that platform's libraries.
PLATFORM_MODULES = {
    "telegram": "adapters.telegram.platform",
    "qq": "adapters.qq.platform",
    "qqbot": "adapters.qqbot.platform",
}

PlatformMap = Mapping[str, Platform]


class PlatformAdapter(Platform, Protocol):
    """A platform that receives on its own once started."""

    async def start(self, sink: MessageSink) -> None: ...

    async def stop(self) -> None: ...


def admin_ids(config: Config, platform: str) -> list[int]:
    """Return the numeric ids of the admins on ``platform``."""
    prefix = f"{platform}:"
    return [int(a.removeprefix(prefix)) for a in config.bot.admins if a.startswith(prefix)]


@runtime_checkable
class GivesUp(Protocol):
    """A platform whose background start may give up for good (Telegram's on a bad token,
    the official QQ bot's on a refused AppID or AppSecret)."""

    async def wait_ready(self) -> None: ...


def load_platform_modules(config: Config) -> None:
    """Import the enabled platforms' modules; call it before logging is set up.

    Importing nonebot calls ``loguru.logger.remove()``, which would drop every sink
    added before it: with QQ on, pacebot's own log file and stderr sink would go silent.
    """
    for name in enabled_platforms(config):
        _load(name)


def _load(platform: str) -> None:
    """Import ``platform``'s module; the official QQ bot's adapter without the library it
    would sign webhook calls with (:mod:`adapters.qqbot.signing`)."""
    if platform != "qqbot":
        importlib.import_module(PLATFORM_MODULES[platform])
        return
    from adapters.qqbot.signing import without_webhook_signing

    with without_webhook_signing():
        importlib.import_module(PLATFORM_MODULES[platform])


def _build_telegram(config: Config, token: str, *, poll_timeout_s: float) -> PlatformAdapter:
    from adapters.telegram.platform import TelegramPlatform

    return TelegramPlatform(
        token=token,
        api_base_url=config.telegram.api_base_url,
        bot_name=config.bot.name,
        aliases=config.bot.aliases,
        poll_timeout_s=poll_timeout_s,
        menu=menu(Texts(config.bot.language), admin=True),
        menu_chat_ids=admin_ids(config, "telegram"),
    )


def _build_qq(config: Config, access_token: str | None) -> PlatformAdapter:
    from adapters.qq.platform import QQPlatform

    return QQPlatform(
        host=config.qq.host,
        port=config.qq.port,
        access_token=access_token,
        bot_name=config.bot.name,
        aliases=config.bot.aliases,
        stickers_dir=config.stickers_dir,
    )


def _build_qqbot(config: Config, secret: str, ledger: Ledger) -> PlatformAdapter:
    _load("qqbot")
    from adapters.qqbot.platform import QQBotPlatform

    return QQBotPlatform(
        config.qq_official,
        secret=secret,
        ledger=ledger,
        bot_name=config.bot.name,
        aliases=config.bot.aliases,
        stickers_dir=config.stickers_dir,
    )


def build_platforms(
    config: Config,
    secrets: Secrets,
    *,
    ledger: Ledger | None = None,
    telegram_poll_timeout_s: float = 10.0,
) -> dict[str, PlatformAdapter]:
    """Build (not start) every enabled platform, importing only their libraries.

    The official QQ bot keeps its reply numbers and gateway session in ``ledger``, the
    store: without one it is not built.
    """
    platforms: dict[str, PlatformAdapter] = {}
    if secrets.telegram_token is not None:
        platforms["telegram"] = _build_telegram(
            config, secrets.telegram_token, poll_timeout_s=telegram_poll_timeout_s
        )
    if config.qq.enabled:
        platforms["qq"] = _build_qq(config, secrets.onebot_access_token)
    if secrets.qq_official_secret is not None and ledger is not None:
        platforms["qqbot"] = _build_qqbot(config, secrets.qq_official_secret, ledger)
    return platforms


def history_sources(
    config: Config, platforms: Mapping[str, Platform]
) -> dict[str, tuple[History, BackfillSettings]]:
    """Return the platforms to fetch missed messages back from on each connect: QQ's."""
    qq: object = platforms.get("qq")  # checked below for what it can do
    if not config.qq.backfill or not isinstance(qq, History):
        return {}
    settings = BackfillSettings(
        active_within=timedelta(days=config.qq.backfill_days),
        chats=config.qq.backfill_chats,
        count=config.qq.backfill_count,
    )
    return {"qq": (qq, settings)}
