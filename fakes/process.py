"""Config files and starters for tests that run pacebot as a real process against the fakes.

Each config points pacebot at the fakes' URLs and nothing else; a test adds the tables it
needs. Starting ``pacebot run`` and running one command are in :mod:`fakes.harness`
(:func:`~fakes.harness.start_run`, :func:`~fakes.harness.run_pacebot`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import IO

from fakes.bot_api import FakeBotAPI
from fakes.harness import run_pacebot
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer

CHECK_KEY = "sk-check-online-key-123456"
"""The LLM key ``pacebot check --online`` is run with (and the fake LLM server expects)."""


def console_config(
    tmp_path: Path, llm_url: str, *, debounce_s: float = 0.05, bot: str = "", tables: str = ""
) -> Path:
    """Write a config for ``pacebot console`` (and ``run`` once ``tables`` enable a
    platform): ``bot`` lines go into ``[bot]``, ``tables`` after the rest."""
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
{bot}name = "小满"
data_dir = "data"

[pacing]
debounce_min_s = {debounce_s}
debounce_max_s = {debounce_s}
max_delay_s = 0.2

[llm]
base_url = "{llm_url}"
max_retries = 0
timeout_s = 5.0
{tables}""",
        encoding="utf-8",
    )
    return path


async def start_console(
    config: Path, env: dict[str, str], *, stdin: int | IO[bytes] = asyncio.subprocess.PIPE
) -> asyncio.subprocess.Process:
    """Start ``pacebot console -c config`` with exactly ``env``, its output piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "console",
        "-c",
        str(config),
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


def telegram_run_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, *, more: str = ""
) -> Path:
    """Write a config for ``pacebot run`` with Telegram on, against the fake Bot API;
    ``more`` is TOML for further tables."""
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05
max_delay_s = 5.0

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[telegram]
enabled = true
api_base_url = "{api.base_url}"
{more}""",
        encoding="utf-8",
    )
    return path


def check_config(
    tmp_path: Path,
    llm: FakeLLMServer,
    api: FakeBotAPI | None = None,
    *,
    json_mode: bool = True,
    more: str = "",
) -> Path:
    """Write a config for ``pacebot check``; ``more`` is TOML for further tables."""
    telegram = f'[telegram]\nenabled = true\napi_base_url = "{api.base_url}"\n' if api else ""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[llm]\nbase_url = "{llm.base_url}"\njson_mode = {str(json_mode).lower()}\n'
        f"{telegram}{more}",
        encoding="utf-8",
    )
    return path


async def check_online(
    config: Path, *, key: str = CHECK_KEY, token: str = "", env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``pacebot check --online -c config``; return its exit code, output and errors."""
    secrets = {"PACEBOT_LLM_API_KEY": key, "TELEGRAM_BOT_TOKEN": token, **(env or {})}
    return await run_pacebot("check", "--online", "-c", str(config), env=secrets)


async def connected_onebot(port: int, *, self_id: int = 10001) -> FakeOneBot:
    """Return a OneBot client connected to the ``pacebot run`` listening on ``port``."""
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=self_id)
    await onebot.connect_when_listening()
    return onebot
