"""Logging: secrets scrubbed from every line, tracebacks included; httpx quiet; local times;
the chat named on every line about it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import stamina
from loguru import logger

from bot.log import REDACTED, Redactor, setup_logging
from fakes.harness import PRIVATE, harness
from fakes.openai_api import FakeLLMServer

TOKEN = "123456:AAE-secret-token_value"


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    setup_logging(level="TRACE", log_dir=tmp_path, secrets=[TOKEN, "short"])
    yield tmp_path / "pacebot.log"
    logger.remove()
    logging.basicConfig(handlers=[], force=True)


def test_redactor_replaces_plain_and_url_quoted_forms() -> None:
    """A secret is replaced as written and as it appears URL-quoted."""
    redact = Redactor([TOKEN])
    assert redact(f"https://x/bot{TOKEN}/getMe") == f"https://x/bot{REDACTED}/getMe"
    assert redact("123456%3AAAE-secret-token_value") == REDACTED


def test_secret_in_message_and_traceback_is_scrubbed(log_file: Path) -> None:
    """Neither a message nor an exception's traceback carries the secret into the log."""
    logger.bind(chat="telegram:private:1", batch=7).info("calling https://api/bot{}/getMe", TOKEN)
    message = f"failed for {TOKEN}"
    try:
        raise RuntimeError(message)
    except RuntimeError:
        logger.exception("boom")
    text = log_file.read_text(encoding="utf-8")
    assert TOKEN not in text
    assert text.count(REDACTED) == 2
    assert "telegram:private:1 batch 7 | calling" in text
    assert "RuntimeError: failed for ***" in text


def test_stdlib_logs_are_routed_and_httpx_is_quiet(log_file: Path) -> None:
    """stdlib records reach the log file, except httpx's INFO request lines."""
    logging.getLogger("telegram.ext").warning("from ptb")
    logging.getLogger("httpx").info(
        "HTTP Request: POST https://api.telegram.org/bot%s/getUpdates", TOKEN
    )
    text = log_file.read_text(encoding="utf-8")
    assert "telegram.ext: from ptb" in text
    assert "HTTP Request" not in text


def test_nonebots_lines_per_event_stay_out_and_its_errors_stay_in(log_file: Path) -> None:
    """nonebot's line per event (it quotes the chatter) and its lines per matcher run stay
    out of the log even at TRACE; its errors (a hosted plugin's failure) are kept."""
    logged_by_nonebot = """
logger.success("OneBot V11 1 | Message 7 from 42 '今天好累'")
logger.info("Event will be handled by Matcher(type='message')")
logger.error("Running Matcher(type='message') failed.")
"""
    exec(logged_by_nonebot, {"__name__": "nonebot.message", "logger": logger})
    lines = log_file.read_text(encoding="utf-8").splitlines()
    assert [line.split(" | ")[1:] for line in lines] == [
        ["ERROR  ", f"{'-': <24}", "Running Matcher(type='message') failed."]
    ]


async def test_a_retry_is_logged_once_by_pacebot_not_again_by_stamina(log_file: Path) -> None:
    """stamina's own line for a scheduled retry stays out: pacebot logs its retries itself."""

    attempts = 0
    async for attempt in stamina.retry_context(on=OSError, attempts=2, wait_initial=0.001):
        with attempt:
            attempts += 1
            if attempts == 1:
                logger.warning("cannot write; retrying")
                raise OSError
    text = await asyncio.to_thread(log_file.read_text, encoding="utf-8")
    assert (attempts, text.count("retrying"), "stamina" in text) == (2, 1, False)


def test_short_secrets_are_scrubbed_as_whole_words_only(log_file: Path) -> None:
    """A short secret is never logged on its own, yet words that contain it stay readable."""
    logger.info("token short rejected; shortly after, shortcut and short_name kept")
    text = log_file.read_text(encoding="utf-8")
    assert "token *** rejected; shortly after, shortcut and short_name kept" in text


def test_a_one_character_key_is_scrubbed_where_it_stands_alone() -> None:
    """Even a local LLM's dummy key "x" does not reach a log as a value."""
    redact = Redactor(["x"])
    assert redact("key=x, box x2 x") == "key=***, box x2 ***"


def test_times_are_written_in_the_bots_time_zone(tmp_path: Path) -> None:
    """A line's time is the bot's local time with its offset, whatever the host's zone is."""
    zone = ZoneInfo("Pacific/Kiritimati")  # UTC+14: no host runs in it by accident
    setup_logging(level="INFO", log_dir=tmp_path, zone=zone)
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        logger.info("what time is it")
        after = datetime.now(UTC)
    finally:
        logger.remove()
    line = (tmp_path / "pacebot.log").read_text(encoding="utf-8").splitlines()[0]
    written = datetime.strptime(line[:29], "%Y-%m-%d %H:%M:%S.%f %z")
    assert (written.utcoffset(), before <= written <= after) == (timedelta(hours=14), True)


async def test_every_line_logged_while_answering_names_the_chat(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The LLM client's lines and its HTTP library's request line carry the chat key and batch."""
    setup_logging(level="DEBUG", log_dir=tmp_path / "logs")
    try:
        async with harness(tmp_path, llm) as bot:
            await bot.say("你好")
            await bot.platform.wait_for_sends(1)
            await bot.pipeline.drain()
    finally:
        logger.remove()
        logging.basicConfig(handlers=[], force=True)
    text = await asyncio.to_thread((tmp_path / "logs" / "pacebot.log").read_text, encoding="utf-8")
    llm_lines = [line for line in text.splitlines() if "chat/completions" in line or "llm " in line]
    where = f"| {PRIVATE} batch "
    assert len(llm_lines) >= 2
    assert [line for line in llm_lines if where not in line] == []


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("INFO", [("WARNING", "uvicorn.error: Invalid HTTP request received.")]),
        (
            "DEBUG",
            [
                ("DEBUG", 'apscheduler.scheduler: Added job "partial" to job store "default"'),
                ("DEBUG", "uvicorn.error: Uvicorn running on http://127.0.0.1:8090"),
                ("WARNING", "uvicorn.error: Invalid HTTP request received."),
            ],
        ),
    ],
)
def test_the_schedulers_and_servers_start_up_lines_are_debug(
    tmp_path: Path, level: str, expected: list[tuple[str, str]]
) -> None:
    """APScheduler's and uvicorn's INFO lines come out at DEBUG; their warnings stay warnings."""
    setup_logging(level=level, log_dir=tmp_path)
    try:
        logging.getLogger("apscheduler.scheduler").info(
            'Added job "%s" to job store "%s"', "partial", "default"
        )
        logging.getLogger("uvicorn.error").info("Uvicorn running on %s", "http://127.0.0.1:8090")
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    finally:
        logger.remove()
        logging.basicConfig(handlers=[], force=True)
    lines = (tmp_path / "pacebot.log").read_text(encoding="utf-8").splitlines()
    fields = [line.split(" | ") for line in lines]
    assert [(field[1].strip(), field[3]) for field in fields] == expected
