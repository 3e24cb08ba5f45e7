"""Logging: secrets are scrubbed from every line, tracebacks included; httpx stays quiet."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import stamina
from loguru import logger

from bot.log import REDACTED, Redactor, setup_logging

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
