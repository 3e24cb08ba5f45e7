"""A running core with its dashboard serving a real ``config.toml``: the settings and
personas pages and the config API change that file (:class:`adapters.config_file.ConfigFile`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

import fakes.dashboard
from adapters.app import opened_parts, running_core, serving_dashboard, utc_now
from adapters.config_file import ConfigFile
from adapters.reload import Reloader
from bot.config.model import load_config
from bot.ports import Platform
from bot.secrets import Secrets
from fakes.harness import TEST_KEY, Harness, RecordingPlatform, free_port
from fakes.openai_api import FakeLLMServer

TOKEN = "web-config-token-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Web:
    bot: Harness
    client: httpx.AsyncClient
    path: Path


def config_text(tmp_path: Path, llm: FakeLLMServer) -> str:
    return f"""# pacebot for the hiking group: the operator's own notes stay
[bot]
name = "小满"
data_dir = "data"
persona = "CANARY-OLD 你是小满。"   # who it is

[pacing]
debounce_min_s = 0.05  # quick, for the test
debounce_max_s = 0.05

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[web]
enabled = true
port = {free_port()}
"""


@contextlib.asynccontextmanager
async def dashboard(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[Web]:
    path = tmp_path / "config.toml"
    path.write_text(config_text(tmp_path, llm), encoding="utf-8")
    config = load_config(path)
    secrets = Secrets(TEST_KEY, TEST_KEY, web_token=TOKEN)
    platform = RecordingPlatform()
    platforms: dict[str, Platform] = {platform.name: platform}
    async with (
        opened_parts(config, secrets) as parts,
        running_core(config, secrets, platforms, nightly=False, parts=parts) as core,
    ):
        edited = ConfigFile(path, parts.settings, Reloader(path, parts.settings), now=utc_now)
        async with serving_dashboard(config, secrets, core.ops, config_file=edited) as url:
            assert url is not None
            async with httpx.AsyncClient(base_url=url, timeout=5.0) as client:
                yield Web(Harness(config, core, platform, llm), client, path)


async def log_in(web: Web) -> str:
    """Log the client in through the form; return the CSRF token of its session."""
    return await fakes.dashboard.log_in(web.client, TOKEN, page="/settings")
