"""nonebot's lines per event dropped before loguru builds them, while plugins are hosted.

nonebot's event handling (``nonebot.message``) logs a line per event, which quotes the
chatter's words, and lines per matcher run, as does its matcher
(``nonebot.internal.matcher.matcher``). pacebot's sinks drop them by level
(:data:`bot.log.LIBRARY_LEVELS`), but only once loguru has built each record: handling an
event with one matcher took 0.13 ms that way, 0.09 ms with them dropped before
(docs/benchmarks.md, "With one nonebot plugin"). While plugins are hosted,
:func:`warnings_and_errors_only` gives those modules a logger that hands its warnings and
errors (a plugin's failure, a failing rule) to loguru as nonebot's own lines and drops the
rest at once. Should nonebot stop reading ``logger`` from those modules, the sinks still
drop them: this is a saving, never the guard.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final

from loguru import logger

_LOGGER: Final = "logger"  # the name nonebot's modules read loguru's logger by
NONEBOTS_EVENT_MODULES: Final = ("nonebot.message", "nonebot.internal.matcher.matcher")


class _WarningsAndErrors:
    """The part of loguru's logger that nonebot's event modules use, passing on what is a
    warning or worse, as logged from the caller's frame."""

    __slots__ = ("_options",)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self._options = options or {}

    def opt(self, **options: Any) -> _WarningsAndErrors:
        return _WarningsAndErrors(options)

    def warning(self, message: str, *args: Any, **kwargs: Any) -> None:
        logger.opt(depth=1, **self._options).warning(message, *args, **kwargs)

    def error(self, message: str, *args: Any, **kwargs: Any) -> None:
        logger.opt(depth=1, **self._options).error(message, *args, **kwargs)

    def _dropped(self, message: str, *args: Any, **kwargs: Any) -> None:
        return None

    trace = debug = info = success = _dropped


@contextlib.contextmanager
def warnings_and_errors_only(modules: Iterable[str] = NONEBOTS_EVENT_MODULES) -> Iterator[None]:
    """Have the ``logger`` of each of ``modules`` that is loaded and has one pass on only
    warnings and errors meanwhile."""
    saved = {
        module: logger_of
        for module in filter(None, map(sys.modules.get, modules))
        if (logger_of := getattr(module, _LOGGER, None)) is not None
    }
    for module in saved:
        setattr(module, _LOGGER, _WarningsAndErrors())
    try:
        yield
    finally:
        for module, logger_of in saved.items():
            setattr(module, _LOGGER, logger_of)
