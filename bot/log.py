"""One loguru logger for everything, secrets scrubbed from every line.

stdlib logging (PTB, httpx, APScheduler, uvicorn) is routed into loguru. httpx logs
request URLs, which hold the Telegram token, so its loggers stay at WARNING and every
sink redacts the secrets it was told about. APScheduler's and uvicorn's INFO lines (jobs
added, servers started) come out at DEBUG: INFO is kept for what an operator acts on.
Times are written in the bot's time zone, with its offset: the chat days and the nightly
run are counted there too. A line about a chat names it (``logger.bind(chat=...)``, or
``logger.contextualize`` around a batch, which reaches the lines libraries log meanwhile).
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import traceback
from collections.abc import Iterable
from datetime import timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from loguru import logger

if TYPE_CHECKING:
    from loguru import Record

REDACTED = "***"
LOG_FILE = "pacebot.log"
"""The log file's name under ``<data_dir>/logs/``; older ones are rotated beside it."""
_QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "openai._base_client")
_CHATTY_LIBRARIES = frozenset({"apscheduler", "uvicorn"})
"""Libraries whose INFO lines are start-up and shutdown chatter ("Added job", "Uvicorn
running on"): pacebot says what an operator needs itself, so they are logged at DEBUG."""
LIBRARY_LEVELS: dict[str | None, str | int | bool] = {  # loguru's form of a sink's filter
    "nonebot.message": "ERROR",
    "nonebot.internal.matcher": "ERROR",
}
"""The least level kept of libraries that log through loguru themselves: nonebot's line
per event quotes the chatter's words, and its lines per matcher run repeat what pacebot
logs; a hosted plugin's failure is kept. Every sink filters by it."""
_FORMAT = (
    "{time:YYYY-MM-DD HH:mm:ss.SSS ZZ} | {level: <7} | {extra[where]: <24} | "
    "{message}{extra[error]}"
)


class Redactor:
    """Replace known secrets (and their URL-quoted forms) in log text.

    A secret of fewer than ``WHOLE_WORD_BELOW`` characters (an OneBot token "1234", a
    local LLM's key "x") is replaced only where it stands as a word of its own: inside
    longer words and numbers it is too common to tell apart from them.
    """

    WHOLE_WORD_BELOW = 6

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._anywhere: list[str] = []
        self._as_words: set[str] = set()
        self._words: re.Pattern[str] | None = None
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        """Scrub these secrets from now on."""
        for secret in filter(None, secrets):
            for form in {secret, quote(secret, safe="")}:
                if len(form) < self.WHOLE_WORD_BELOW:
                    self._as_words.add(form)
                elif form not in self._anywhere:
                    self._anywhere.append(form)
        self._anywhere.sort(key=len, reverse=True)
        if self._as_words:
            forms = "|".join(map(re.escape, sorted(self._as_words, key=len, reverse=True)))
            self._words = re.compile(rf"(?<!\w)(?:{forms})(?!\w)")

    def __call__(self, text: str) -> str:
        for secret in self._anywhere:
            text = text.replace(secret, REDACTED)
        if self._words is not None:
            text = self._words.sub(REDACTED, text)
        return text


redactor = Redactor()


def _patch(record: Record, *, zone: tzinfo | None = None) -> None:
    if zone is not None:
        # loguru formats a fixed offset only: pin the zone's offset at that moment.
        local = record["time"].astimezone(zone)
        record["time"] = local.replace(tzinfo=timezone(local.utcoffset() or timedelta()))
    record["message"] = redactor(record["message"])
    extra = record["extra"]
    chat = extra.get("chat", "-")
    extra["where"] = f"{chat} batch {extra['batch']}" if "batch" in extra else chat
    exception = record["exception"]
    if exception is None or exception.value is None:
        record["extra"]["error"] = ""
        return
    # Render the traceback here, redacted: a library's message may quote a URL that
    # holds the token, and the sinks would print it as it is.
    lines = traceback.format_exception(exception.type, exception.value, exception.traceback)
    record["extra"]["error"] = "\n" + redactor("".join(lines).rstrip())
    record["exception"] = None


def _library(logger_name: str) -> str:
    return logger_name.partition(".")[0]


class _InterceptHandler(logging.Handler):
    """Send stdlib log records to loguru."""

    def emit(self, record: logging.LogRecord) -> None:
        level: str | int
        if record.levelno == logging.INFO and _library(record.name) in _CHATTY_LIBRARIES:
            level = "DEBUG"
        else:
            try:
                level = logger.level(record.levelname).name
            except ValueError:
                level = record.levelno
        logger.opt(depth=6, exception=record.exc_info).log(
            level, "{}: {}", record.name, record.getMessage()
        )


def setup_logging(
    *,
    level: str,
    log_dir: Path | None,
    secrets: Iterable[str] = (),
    stderr_level: str | None = None,
    zone: tzinfo | None = None,
) -> None:
    """Log to stderr and, if ``log_dir`` is set, to a rotated file there, times in ``zone``."""
    redactor.add(*secrets)
    logger.remove()
    logger.configure(
        patcher=functools.partial(_patch, zone=zone), extra={"chat": "-", "where": "-", "error": ""}
    )
    logger.add(
        sys.stderr,
        level=stderr_level or level,
        format=_FORMAT,
        filter=LIBRARY_LEVELS,
        backtrace=False,
        diagnose=False,
    )
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        logger.add(
            log_dir / LOG_FILE,
            level=level,
            format=_FORMAT,
            filter=LIBRARY_LEVELS,
            rotation="10 MB",
            retention=5,
            encoding="utf-8",
            backtrace=False,
            diagnose=False,
        )
    route_stdlib_logging()


def route_stdlib_logging() -> None:
    """Send stdlib logging into loguru; keep URL-logging HTTP clients quiet."""
    logging.basicConfig(handlers=[_InterceptHandler()], level=logging.INFO, force=True)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # pacebot logs each retry itself, with its reason and chat; stamina's line would repeat it.
    logging.getLogger("stamina").setLevel(logging.ERROR)
