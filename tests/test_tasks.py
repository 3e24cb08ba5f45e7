"""Owned tasks: held while they run, their failure logged once with the chat, a cancel quiet."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.tasks import set_before_done, start_task
from tests.log_capture import captured_logs


async def test_a_failing_task_is_logged_with_its_chat_and_let_go() -> None:
    """A task that raises is logged with its failure text, name and traceback, leaves its
    owner set, and its ``on_done`` runs after the log line."""
    owner: set[asyncio.Task[Any]] = set()
    seen: list[str] = []

    async def boom() -> None:
        raise RuntimeError("kaputt")

    with captured_logs() as logs:
        task = start_task(
            boom(),
            name="batch:test",
            failure="batch failed",
            owner=owner,
            chat="test:private:1",
            on_done=lambda done: seen.append(f"done after {len(logs)} line(s)"),
        )
        held = task in owner
        await asyncio.wait({task})
    errors = [line for line in logs if line.startswith("ERROR")]
    assert (held, owner, seen, len(errors)) == (True, set(), ["done after 1 line(s)"], 1)
    assert "batch failed (batch:test)" in errors[0]
    assert "RuntimeError: kaputt" in errors[0]


async def test_a_cancelled_task_is_not_a_failure() -> None:
    """Cancelling a task (as a stop does) logs nothing and still runs ``on_done``."""
    seen: list[bool] = []
    with captured_logs() as logs:
        task = start_task(
            asyncio.Event().wait(),  # runs until cancelled
            name="sender:test",
            failure="sender failed",
            on_done=lambda done: seen.append(done.cancelled()),
        )
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait({task})
    assert (seen, [line for line in logs if "sender failed" in line]) == ([True], [])


async def test_set_before_done_tells_ready_from_gave_up() -> None:
    """The event set first is "ready"; the task ending first (without setting it) is not."""
    ready = asyncio.Event()
    running = asyncio.create_task(asyncio.Event().wait())  # runs until cancelled
    asyncio.get_running_loop().call_soon(ready.set)
    became_ready = await set_before_done(ready, running)
    running.cancel()

    gave_up = asyncio.create_task(asyncio.sleep(0))
    ended_first = await set_before_done(asyncio.Event(), gave_up)

    assert (became_ready, ended_first) == (True, False)
