"""Capture every log line of a test, tracebacks included, to look for crashes and leaks."""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

from loguru import logger

if TYPE_CHECKING:
    from loguru import Message


class ToLoguru(logging.Handler):
    """Send stdlib records (PTB, nonebot's uvicorn, asyncio) to loguru, as the app does."""

    def emit(self, record: logging.LogRecord) -> None:
        logger.opt(exception=record.exc_info).log(
            record.levelname, "{}: {}", record.name, record.getMessage()
        )


class LogLines(list[str]):
    """Rendered log lines: level, logger, message, then any traceback."""

    def tracebacks(self) -> list[str]:
        return [line for line in self if "Traceback" in line]


def _render(message: Message) -> str:
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
    return text


@contextlib.contextmanager
def captured_logs(level: str = "DEBUG", *, stdlib_level: int = logging.INFO) -> Iterator[LogLines]:
    """Collect loguru output at ``level`` and stdlib logging routed into it."""
    lines = LogLines()
    sink_id = logger.add(lambda message: lines.append(_render(message)), level=level)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    root.handlers = [ToLoguru()]
    root.setLevel(stdlib_level)
    try:
        yield lines
    finally:
        root.handlers, level_before = saved
        root.setLevel(level_before)
        logger.remove(sink_id)
