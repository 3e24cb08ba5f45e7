"""Owned background tasks: named, strongly referenced, their failure logged.

Every task pacebot starts goes through :func:`start_task`, so none is garbage-collected
mid-flight and none fails in silence. The optional ``owner`` set holds the task while it
runs; ``on_done`` runs after the failure (if any) is logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from loguru import logger

T = TypeVar("T")


def start_task(
    coro: Coroutine[Any, Any, T],
    *,
    name: str,
    failure: str,
    owner: set[asyncio.Task[Any]] | None = None,
    chat: str | None = None,
    on_done: Callable[[asyncio.Task[T]], None] | None = None,
) -> asyncio.Task[T]:
    """Start ``coro`` as a task called ``name``; log ``failure`` with its traceback if it fails.

    ``chat`` binds the chat key to that log line. A cancelled task is not a failure.
    """
    task = asyncio.create_task(coro, name=name)
    if owner is not None:
        owner.add(task)

    def finished(done: asyncio.Task[T]) -> None:
        if owner is not None:
            owner.discard(done)
        log_failure(done, failure, chat=chat)
        if on_done is not None:
            on_done(done)

    task.add_done_callback(finished)
    return task


def log_failure(task: asyncio.Task[Any], failure: str, *, chat: str | None = None) -> None:
    """Log ``failure`` with the traceback if ``task`` ended with an exception."""
    if task.cancelled() or (error := task.exception()) is None:
        return
    log = logger if chat is None else logger.bind(chat=chat)
    log.opt(exception=error).error("{} ({})", failure, task.get_name())
