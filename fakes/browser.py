"""The dashboard in a real browser, for the browser tests: a ``pacebot run`` process with
Telegram on the fake Bot API and the dashboard on, and Debian's headless Chromium driven
by Playwright (``executable_path``; Playwright's own browser download is never used).

Without Chromium or Playwright the browser tests skip and say so loudly
(:func:`browser_tests`); under ``CI=true`` they must run, and fail instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fakes.bot_api import DEFAULT_USER_ID, FakeBotAPI
from fakes.harness import dashboard_up, free_port, start_run
from fakes.openai_api import FakeLLMServer

if TYPE_CHECKING:
    from playwright.async_api import Browser, Dialog, Page

CHROMIUM = os.environ.get("PACEBOT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LLM_KEY = "sk-browser-test-key-0123456789"
WEB_TOKEN = "browser-test-web-token-abcdef0123456789"
ALICE = DEFAULT_USER_ID  # an admin in the config below
ALICE_KEY = f"telegram:private:{ALICE}"
DOCS = Path(__file__).resolve().parent.parent / "docs"


def why_no_browser() -> str | None:
    """Say why the browser tests cannot run here; ``None`` when they can."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def browser_tests() -> pytest.MarkDecorator:
    """Return the mark of a module of browser tests: skip them, loudly, where no browser
    can run; under ``CI=true`` fail the module instead."""
    missing = why_no_browser()
    if missing is not None:
        if os.environ.get("CI", "").casefold() == "true":  # CI must run them: never skip there
            pytest.fail(f"CI=true but the browser tests cannot run: {missing}", pytrace=False)
        # Loud on purpose: a local run must show that the browser tests did not run, and why.
        print(f"\n!!! BROWSER TESTS SKIPPED: {missing} !!!\n", file=sys.stderr)
    return pytest.mark.skipif(missing is not None, reason=f"BROWSER TESTS SKIPPED: {missing}")


def screenshots_wanted() -> bool:
    """Tell whether this run rewrites the README's screenshots (``PACEBOT_SCREENSHOT=1``)."""
    return os.environ.get("PACEBOT_SCREENSHOT") == "1"


@dataclass
class Running:
    """A ``pacebot run`` process, its fakes, and where its dashboard listens."""

    process: asyncio.subprocess.Process
    api: FakeBotAPI
    llm: FakeLLMServer
    url: str
    data_dir: Path
    config: Path


def write_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, web_port: int, *, language: str = "en"
) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"
timezone = "Asia/Shanghai"
admins = ["telegram:{ALICE}"]
language = "{language}"

[pacing]
debounce_min_s = 0.3
debounce_max_s = 0.3
max_delay_s = 1.0

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[web]
enabled = true
port = {web_port}

[stickers]
enabled = true
""",
        encoding="utf-8",
    )
    return path


@contextlib.asynccontextmanager
async def running_pacebot(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, *, language: str = "en"
) -> AsyncIterator[Running]:
    """Run ``pacebot run`` with the dashboard on, speaking ``language``; stop it with
    SIGTERM and check that it stopped cleanly and logged no secret."""
    port = free_port()
    config = write_config(tmp_path, llm, api, port, language=language)
    env = {
        "PACEBOT_LLM_API_KEY": LLM_KEY,
        "TELEGRAM_BOT_TOKEN": api.token,
        "PACEBOT_WEB_TOKEN": WEB_TOKEN,
    }
    process = await start_run(config, env)
    url = f"http://127.0.0.1:{port}"
    try:
        await api.wait_for("getUpdates", timeout=20)
        await dashboard_up(url)
        yield Running(process, api, llm, url, tmp_path / "data", config)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 20)
    stderr = err.decode()
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "dashboard stopped" in log
    for secret in (WEB_TOKEN, LLM_KEY, api.token):
        assert secret not in stderr
        assert secret not in log


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's headless Chromium under Playwright."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


async def log_in(page: Page, url: str) -> None:
    await page.goto(f"{url}/login")
    await page.fill("#token", WEB_TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{url}/")


class Dialogs(list[str]):
    """The messages of the dialogs a page opened (a confirm() before a pop or a forget),
    each answered as told."""

    def __init__(self, *, accept: bool) -> None:
        super().__init__()
        self.accept = accept

    async def answer(self, dialog: Dialog) -> None:
        self.append(dialog.message)
        await (dialog.accept() if self.accept else dialog.dismiss())


async def answer_dialogs(page: Page, *, accept: bool) -> Dialogs:
    """Answer every dialog ``page`` opens from now on: yes (``accept``) or no."""
    dialogs = Dialogs(accept=accept)
    page.on("dialog", dialogs.answer)
    return dialogs


async def fits(page: Page) -> bool:
    """Tell whether the page fits its window's width: nothing scrolls sideways."""
    # innerWidth grows with what overflows on a phone; clientWidth is the layout's width.
    fitting: bool = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    return fitting
