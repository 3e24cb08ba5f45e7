"""Take turns on the one connection, incoming messages first.

Every transaction holds the connection for a few round trips to the database thread,
and each round trip waits for a turn of the event loop. On a busy bot the answers'
reads and writes (history, summaries, batches, outbox, traces) queue up for it by the
hundred; a plain FIFO lock would make each page of incoming messages wait behind all of
them, and its chats' timers would be armed seconds late. :class:`Turns` lets the
writes that store incoming messages go next, ahead of every other waiter: they wait
for at most the transaction under way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator


class Turns:
    """A lock handed to urgent waiters first, the others in arrival order."""

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    @contextlib.asynccontextmanager
    async def turn(self, *, urgent: bool = False) -> AsyncIterator[None]:
        """Hold the lock for the body; ``urgent`` waiters go ahead of the others."""
        await self._acquire(urgent=urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, *, urgent: bool) -> None:
        if not self._held:
            self._held = True
            return
        waiter = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._others
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed the lock just as the cancel came: pass it on
            else:
                with contextlib.suppress(ValueError):  # skipped by a release meanwhile
                    queue.remove(waiter)
            raise

    def _release(self) -> None:
        """Hand the lock to the next waiter (it stays held), or free it."""
        for queue in (self._urgent, self._others):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self._held = False
