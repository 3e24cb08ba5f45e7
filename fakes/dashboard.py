"""The dashboard of a running core, for the tests that talk to it over HTTP.

:func:`running_web` runs the real core (SQLite, the ``openai`` SDK against the fake LLM)
with a recording platform, and the dashboard on its own uvicorn server exactly as
``pacebot run`` wires it; :class:`Web` holds it with an httpx client pointed at it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from adapters.app import opened_parts, running_core, serving_dashboard
from adapters.config_file import RunningConfig
from bot.config.model import Config
from bot.ports import Platform
from bot.replies.items import ItemKind
from bot.secrets import Secrets
from fakes.harness import TEST_KEY, Harness, RecordingPlatform, free_port, make_config
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

TOKEN = "web-token-for-tests-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Web:
    """The running bot, its store and an HTTP client pointed at its dashboard."""

    bot: Harness
    store: SqliteStore
    client: httpx.AsyncClient
    config: Config

    async def login(self) -> str:
        """Log the client in through the form; return the page's CSRF token."""
        return await log_in(self.client, TOKEN, page="/chats/test:private:42")


async def log_in(client: httpx.AsyncClient, token: str, *, page: str) -> str:
    """Log ``client`` in through the form with ``token``; return the CSRF token ``page``
    holds for its session."""
    response = await client.post("/login", data={"token": token})
    assert response.status_code == 303
    shown = await client.get(page)
    found = re.search(r'name="csrf" value="([^"]+)"', shown.text)
    assert found is not None, shown.text
    return found.group(1)


@contextlib.asynccontextmanager
async def running_web(
    tmp_path: Path, llm: FakeLLMServer, sections: Mapping[str, Any]
) -> AsyncIterator[Web]:
    """Run the core with a long debounce (tests answer by draining) and the dashboard.

    ``sections`` adds to the config's tables; ``platform = "telegram"`` names the
    recording platform so, which then speaks the voice items of ``[voice] speak`` as
    Telegram would.
    """
    config = make_config(
        tmp_path,
        llm.base_url,
        pacing={
            "debounce_min_s": 30.0,
            "debounce_max_s": 30.0,
            "max_wait_s": 60.0,
            **sections.get("pacing", {}),
        },
        web={"enabled": True, "port": free_port()},
        llm=sections.get("llm", {}),
        bot=sections.get("bot", {}),
        budget=sections.get("budget", {}),
        groups=sections.get("groups", {}),
        voice=sections.get("voice", {}),
        profiles=sections.get("profiles", []),
        access=sections.get("access", {}),
    )
    name = sections.get("platform", "test")
    voice_key = TEST_KEY if config.voice.enabled else None
    secrets = Secrets(
        TEST_KEY,
        TEST_KEY,
        web_token=TOKEN,
        voice_api_key=voice_key,
        telegram_token="not-used" if name == "telegram" else None,
    )
    platform = RecordingPlatform(name=name, delivers=frozenset(ItemKind))
    platforms: dict[str, Platform] = {platform.name: platform}
    async with (
        opened_parts(config, secrets) as parts,
        running_core(config, secrets, platforms, nightly=False, parts=parts) as core,
        serving_dashboard(
            config, secrets, core.ops, config_file=RunningConfig(parts.settings)
        ) as url,
    ):
        assert url is not None
        async with httpx.AsyncClient(base_url=url, timeout=5.0) as client:
            yield Web(Harness(config, core, platform, llm), parts.store, client, config)
