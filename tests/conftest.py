"""Shared test set-up and the fixtures many test files use."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from fakes.bot_api import FakeBotAPI
from fakes.dashboard import Web, running_web
from fakes.openai_api import FakeLLMServer
from fakes.plugins import write_plugins
from storage.sqlite import SqliteStore

# PTB 22 warns that RetryAfter.retry_after as an int is deprecated; opt in to the
# timedelta form so ``filterwarnings = error`` does not turn that warning into failures.
os.environ.setdefault("PTB_TIMEDELTA", "1")


def pytest_configure(config: pytest.Config) -> None:
    """Say up front that no event loop is current outside the async tests.

    looptime asks the loop policy for the current loop before every test, synchronous ones
    too; on Python 3.11 that call makes a fresh loop, never closed, until some loop has been
    set once, and ``filterwarnings = error`` turns its ResourceWarning into a failure.
    """
    asyncio.set_event_loop(None)


@pytest.fixture(scope="module")
def plugin_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Write the test plugins (``fakes/plugins.py``) and put their folder on the import
    path while a module's tests run."""
    folder = write_plugins(tmp_path_factory.mktemp("plugins"))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    """A running fake LLM server with no reply scripted yet."""
    async with FakeLLMServer() as server:
        yield server


@pytest.fixture
async def api() -> AsyncIterator[FakeBotAPI]:
    """A running fake Telegram Bot API."""
    async with FakeBotAPI() as server:
        yield server


@pytest.fixture
async def web(
    tmp_path: Path, llm: FakeLLMServer, request: pytest.FixtureRequest
) -> AsyncIterator[Web]:
    """The core and its dashboard (``fakes.dashboard``); an indirect parameter adds config
    sections."""
    async with running_web(tmp_path, llm, getattr(request, "param", {})) as running:
        yield running


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Return where the test database lives (its directory does not exist yet)."""
    return tmp_path / "data" / "pacebot.sqlite3"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    """Open a fresh SQLite store and close it after the test."""
    async with await SqliteStore.open(db_path) as opened:
        yield opened


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the tests allowed the longest first (their timeout mark): in parallel
    (``pytest -n auto``) the kill suite and the benchmarks' smoke run then beside the
    rest, not alone at the end. The others keep their order."""

    def allowed_s(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        return float(mark.args[0]) if mark is not None and mark.args else 0.0

    items.sort(key=allowed_s, reverse=True)
