"""Owned background tasks: named, strongly referenced, their failure logged.

Every task that runs on its own, not awaited where it starts (batches, commands, each
chat's sender, the platforms' connections, the nightly catch-up), goes through
:func:`start_task`, so none is garbage-collected mid-flight and none fails in silence.
The optional ``owner`` set holds the task while it runs; ``on_done`` runs after the
failure (if any) is logged.
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
        if not done.cancelled() and (error := done.exception()) is not None:
            log = logger if chat is None else logger.bind(chat=chat)
            log.opt(exception=error).error("{} ({})", failure, done.get_name())
        if on_done is not None:
            on_done(done)

    task.add_done_callback(finished)
    return task


async def set_before_done(event: asyncio.Event, task: asyncio.Task[Any]) -> bool:
    """Wait until ``event`` is set or ``task`` ends; return whether ``event`` was set.

    For "ready, or gave up": a start that runs in ``task`` and sets ``event`` once done.
    """
    waiter = asyncio.create_task(event.wait(), name=f"{task.get_name()}:waiting")
    try:
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    return event.is_set()
