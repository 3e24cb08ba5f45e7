"""`pacebot summarize` and `pacebot recall` from the shell, as real processes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.config.model import load_config
from bot.days import chat_day
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

KEY = "sk-cli-memory-key-123456"
CHAT = ChatKey("telegram", ChatKind.GROUP, "-100123")


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    summary = {
        "summary": "CLI-MARK 大家约了周六去香山。",
        "topics": ["爬山"],
        "key_points": [],
        "keywords": ["香山"],
    }
    async with FakeLLMServer(default=json.dumps(summary, ensure_ascii=False)) as server:
        yield server


async def pacebot(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PACEBOT_LLM_API_KEY": KEY} if env is None else env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_summarize_then_recall(tmp_path: Path, llm: FakeLLMServer) -> None:
    """summarize writes yesterday's summary once; recall, like ``/recall``, shows what a batch
    asking would get: nothing more while the prompt holds that day (and says so), the
    summary by date and by keyword once the prompt has no room for it."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\nmax_retries = 0\n'
    )
    # The same data with a persona that leaves the prompt no room for any summary.
    crowded = tmp_path / "crowded.toml"
    crowded.write_text(
        f'[bot]\ndata_dir = "data"\npersona = "{"你是小满。" * 60}"\n'
        f'[llm]\nbase_url = "{llm.base_url}"\n[memory]\ncontext_budget_tokens = 500\n'
    )
    config = load_config(path)
    at = datetime.now(UTC) - timedelta(days=1)
    async with await SqliteStore.open(config.database_path) as store:
        message = IncomingMessage(CHAT, "1", "7", "小明", "周六去香山吧", at)
        await store.add_message(message, received_at=at)
    yesterday = chat_day(at, zone=config.bot.zone, boundary=config.memory.day_boundary_time)

    first = await pacebot("summarize", "-c", str(path))
    again = await pacebot("summarize", "-c", str(path))
    held = await pacebot("recall", "昨天聊了什么", "--chat", str(CHAT), "-c", str(path))
    by_date = await pacebot("recall", "昨天聊了什么", "--chat", str(CHAT), "-c", str(crowded))
    by_word = await pacebot("recall", "香山", "--chat", str(CHAT), "-c", str(crowded))
    elsewhere = await pacebot("recall", "香山", "--chat", "qq:group:1", "-c", str(path))

    assert first[0] == 0, first[2]
    assert f"summarised {CHAT} {yesterday}" in first[1]
    assert again[1].strip() == "nothing to summarise"
    assert held[1].splitlines() == [
        f"searched the dates the question names: {yesterday}",
        "nothing recalled",
        f"Already in the prompt, so not repeated: {yesterday}. "
        f"The prompt holds the summaries of 1 day(s): {yesterday}.",
    ]
    assert by_date[1].splitlines()[:2] == [
        f"searched the dates the question names: {yesterday}",
        "recalled by dates:",
    ]
    assert "CLI-MARK" in by_date[1]
    assert by_date[1].splitlines()[-1] == "No summary is in the prompt yet."
    assert by_word[1].splitlines()[:2] == [
        "no date in the question: searched by keyword",
        "recalled by keywords:",
    ]
    assert elsewhere[1].splitlines() == [
        "no date in the question: searched by keyword",
        "nothing recalled",
        "No summary is in the prompt yet.",
    ]
    assert len(llm.requests) == 1
    assert KEY not in first[2] + by_date[2]


def without_keys(**extra: str) -> dict[str, str]:
    """Return this environment without any key, with ``extra`` set."""
    keys = ("PACEBOT_LLM_API_KEY", "PACEBOT_EMBED_KEY")
    return {**{k: v for k, v in os.environ.items() if k not in keys}, **extra}


async def test_recall_needs_no_llm_key(tmp_path: Path, llm: FakeLLMServer) -> None:
    """recall asks the LLM nothing, so it runs without the LLM key and makes no request."""
    path = tmp_path / "config.toml"
    path.write_text(f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\n')

    code, out, err = await pacebot(
        "recall", "香山", "--chat", str(CHAT), "-c", str(path), env=without_keys()
    )

    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "no date in the question: searched by keyword",
        "nothing recalled",
        "No summary is in the prompt yet.",
    ]
    assert (llm.requests, llm.embedding_requests) == ([], [])


async def test_recall_by_meaning_needs_only_the_embeddings_key(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With [memory.embeddings] on, recall needs that key (named when unset, and the [llm]
    key when it has none of its own), then sends the question to be embedded, nothing more."""
    own = tmp_path / "own.toml"
    shared = tmp_path / "shared.toml"
    for path, key_env in ((own, "PACEBOT_EMBED_KEY"), (shared, "")):
        path.write_text(
            f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\n'
            f'[memory.embeddings]\nmodel = "fake-embed"\napi_key_env = "{key_env}"\n'
        )
    ask = ("recall", "香山", "--chat", str(CHAT), "-c")

    own_unset = await pacebot(*ask, str(own), env=without_keys())
    shared_unset = await pacebot(*ask, str(shared), env=without_keys())
    own_set = await pacebot(*ask, str(own), env=without_keys(PACEBOT_EMBED_KEY=KEY))

    assert own_unset[::2] == (
        1,
        "pacebot: [memory.embeddings] api_key_env: environment variable PACEBOT_EMBED_KEY"
        " is not set\n",
    )
    assert shared_unset[::2] == (
        1,
        "pacebot: [llm] api_key_env (the key [memory.embeddings] uses): environment variable"
        " PACEBOT_LLM_API_KEY is not set\n",
    )
    assert (own_set[0], own_set[1].splitlines()[0]) == (
        0,
        "no date in the question: searched by keyword and meaning",
    )
    assert ([r["input"] for r in llm.embedding_requests], llm.requests) == ([["香山"]], [])


async def test_recall_rejects_a_bad_chat_key(tmp_path: Path) -> None:
    """A malformed --chat is refused with the expected form and exit code 2."""
    code, _, err = await pacebot("recall", "x", "--chat", "group-1", "-c", str(tmp_path / "c.toml"))
    assert code == 2
    assert "platform:kind:id" in err


async def test_summarize_a_date_before_any_message(tmp_path: Path, llm: FakeLLMServer) -> None:
    """--date 0001-01-01 is answered calmly: nothing to summarise, no traceback."""
    path = tmp_path / "config.toml"
    path.write_text(f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\n')
    code, out, err = await pacebot(
        "summarize", "--date", "0001-01-01", "--chat", str(CHAT), "-c", str(path)
    )
    assert (code, "Traceback" in err) == (0, False)
    assert out.strip() == "nothing to summarise"
    assert llm.requests == []


async def test_summarize_all_missing_fills_each_missed_day_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """--all-missing summarises every finished day of the last catch_up_days lacking one."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\nmax_retries = 0\n'
        "[memory]\ncatch_up_days = 3\n"
    )
    config = load_config(path)
    now = datetime.now(UTC)
    async with await SqliteStore.open(config.database_path) as store:
        for back in (1, 2, 3, 5):  # five days back is beyond catch_up_days
            at = now - timedelta(days=back)
            message = IncomingMessage(CHAT, str(back), "7", "小明", f"{back}天前", at)
            await store.add_message(message, received_at=at)
    days = {
        chat_day(
            now - timedelta(days=back),
            zone=config.bot.zone,
            boundary=config.memory.day_boundary_time,
        )
        for back in (1, 2, 3)
    }

    first = await pacebot("summarize", "--all-missing", "-c", str(path))
    again = await pacebot("summarize", "--all-missing", "-c", str(path))

    assert first[0] == 0, first[2]
    summarised = {
        line.split()[-1] for line in first[1].splitlines() if line.startswith("summarised")
    }
    assert summarised == {day.isoformat() for day in days}
    assert again[1].strip() == "nothing to summarise"
    assert len(llm.requests) == len(days)


async def test_summarize_today_is_partial_and_takes_what_came_since(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """--date today writes a partial summary; after a new message the same command writes it
    again with that message, in the same place; a future date is refused with exit 1."""
    path = tmp_path / "config.toml"
    path.write_text(f'[bot]\ndata_dir = "data"\n[llm]\nbase_url = "{llm.base_url}"\n')
    config = load_config(path)
    today = config.chat_days(lambda: datetime.now(UTC)).today()
    args = ("summarize", "--date", today.isoformat(), "-c", str(path))

    async def say(message_id: str, text: str) -> None:
        async with await SqliteStore.open(config.database_path) as store:
            at = datetime.now(UTC)
            message = IncomingMessage(CHAT, message_id, "7", "小明", text, at)
            await store.add_message(message, received_at=at)

    await say("1", "早上好")
    first = await pacebot(*args)
    await say("2", "下午去爬山")
    second = await pacebot(*args)
    future = await pacebot("summarize", "--date", "9999-12-31", "-c", str(path))
    async with await SqliteStore.open(config.database_path) as store:
        stack = await store.live_summaries(CHAT)

    partial = f"summarised {CHAT} {today} (partial: the day has not ended)"
    assert (first[0], first[1].splitlines()[0]) == (0, partial), first[2]
    assert (second[0], second[1].splitlines()[0]) == (0, partial), second[2]
    assert "下午去爬山" in llm.requests[1]["messages"][1]["content"]
    assert [(record.day, record.partial) for record in stack] == [(today, True)]
    assert (future[0], future[2].strip()) == (
        1,
        f"pacebot: --date 9999-12-31 has not begun (today is {today})",
    )
    assert len(llm.requests) == 2
