"""pacebot with the official QQ bot, in the test's process, against the platform's fake.

:func:`official_config` points ``[qq_official]`` at a
:class:`~fakes.qq_open_platform.FakeQQOpenPlatform`; :func:`pacebot_on` runs the core
with that platform alone (unpaced, reconnecting at once) and yields once its gateway is
up, after replacing the kept gateway session if a test gives one.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from adapters.app import Core, opened_parts, running_bot
from adapters.qqbot.platform import QQBotPlatform
from bot.config.model import Config
from bot.models import GatewaySession
from bot.ports import PacingLimits
from bot.secrets import Secrets
from fakes.clock import Clock
from fakes.harness import TEST_KEY, UNPACED, make_config
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform


def official_config(
    tmp_path: Path,
    llm: FakeLLMServer,
    platform: FakeQQOpenPlatform,
    *,
    tables: Mapping[str, Any] | None = None,
    **official: Any,
) -> Config:
    """A test config with ``[qq_official]`` on, pointed at ``platform`` (plus ``official``),
    and any other ``tables`` (``{"plugins": {...}}``)."""
    table = {
        "enabled": True,
        "app_id": platform.app_id,
        "api_base": platform.api_base,
        "auth_base": platform.auth_url,
        **official,
    }
    return make_config(tmp_path, llm.base_url, qq_official=table, **(tables or {}))


@contextlib.asynccontextmanager
async def pacebot_on(
    config: Config,
    platform: FakeQQOpenPlatform,
    *,
    stored: GatewaySession | None = None,
    limits: PacingLimits = UNPACED,
    reconnect_s: float = 0.02,
) -> AsyncIterator[tuple[Core, QQBotPlatform]]:
    """Run pacebot with the official QQ bot alone; ``stored`` replaces the kept session
    before it starts. Yield once the gateway is up. Tests run it unpaced, reconnecting at
    once; a benchmark passes the platform's own pace and pause."""
    secrets = Secrets(
        TEST_KEY,
        TEST_KEY,
        qq_official_secret=platform.secret,
        voice_api_key=TEST_KEY if config.voice.enabled else None,
    )
    async with opened_parts(config, secrets) as parts:
        if stored is not None:
            await parts.store.forget_gateway_session("qqbot")
            await parts.store.keep_gateway_session("qqbot", stored, now=Clock().now())
        qqbot = QQBotPlatform(
            config.qq_official,
            secret=platform.secret,
            ledger=parts.store,
            bot_name=config.bot.name,
            aliases=config.bot.aliases,
            stickers_dir=config.stickers_dir,
            limits=limits,
            reconnect_s=reconnect_s,
        )
        async with running_bot(config, secrets, adapters={"qqbot": qqbot}, parts=parts) as core:
            await qqbot.wait_ready()
            yield core, qqbot
