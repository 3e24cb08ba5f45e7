"""Capture every log line of a test, tracebacks included, to look for crashes and leaks."""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

from loguru import logger

from bot.log import LIBRARY_LEVELS

if TYPE_CHECKING:
    from loguru import Message


class ToLoguru(logging.Handler):
    """Send stdlib records (PTB, nonebot's uvicorn, asyncio) to loguru, as the app does."""

    def emit(self, record: logging.LogRecord) -> None:
        logger.opt(exception=record.exc_info).log(
            record.levelname, "{}: {}", record.name, record.getMessage()
        )


class LogLine(str):
    """One rendered line (level, logger, message, then any traceback), with the level and
    the extra fields it was logged with."""

    level: str
    message: str  # the message alone: no level, logger name or traceback
    extra: dict[str, object]  # what the line was bound with (chat, batch, ...)

    def __new__(cls, text: str, *, level: str, message: str, extra: dict[str, object]) -> LogLine:
        line = super().__new__(cls, text)
        line.level, line.message, line.extra = level, message, extra
        return line

    @property
    def chat(self) -> object:
        """Return the chat key the line was bound with, if any."""
        return self.extra.get("chat")


class LogLines(list[LogLine]):
    """Rendered log lines, in the order they were logged."""

    def at(self, level: str) -> list[LogLine]:
        """Return the lines logged at ``level`` (e.g. ``"WARNING"``)."""
        return [line for line in self if line.level == level]

    def about(self, words: str) -> list[str]:
        """Return every line whose message holds ``words``, as ``"LEVEL message"``: a test
        that something was logged once compares the whole list, so a second or a wrong
        line fails it (the logger's name is left out, it moves with the code)."""
        return [f"{line.level} {line.message}" for line in self if words in line.message]

    def tracebacks(self) -> list[LogLine]:
        return [line for line in self if "Traceback" in line]


def _render(message: Message) -> LogLine:
    record = message.record
    text = f"{record['level'].name} {record['name']}: {record['message']}"
    error = record["extra"].get("error")  # bot.log's patcher moves tracebacks here
    if error:
        text += str(error)
    exception = record["exception"]
    if exception is not None and exception.type is not None:
        text += "\n" + "".join(
            traceback.format_exception(exception.type, exception.value, exception.traceback)
        )
    level = record["level"].name
    return LogLine(text, level=level, message=record["message"], extra=dict(record["extra"]))


@contextlib.contextmanager
def captured_logs(
    level: str = "DEBUG", *, stdlib_level: int | None = logging.INFO
) -> Iterator[LogLines]:
    """Collect loguru output at ``level`` and stdlib logging routed into it, libraries'
    lines filtered as the app's sinks filter them.

    ``stdlib_level=None`` leaves stdlib logging as it is: a test of the app's own routing
    (``bot.log.setup_logging``) keeps it.
    """
    lines = LogLines()
    sink_id = logger.add(
        lambda message: lines.append(_render(message)), level=level, filter=LIBRARY_LEVELS
    )
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    if stdlib_level is not None:
        root.handlers = [ToLoguru()]
        root.setLevel(stdlib_level)
    try:
        yield lines
    finally:
        root.handlers, level_before = saved
        root.setLevel(level_before)
        logger.remove(sink_id)
