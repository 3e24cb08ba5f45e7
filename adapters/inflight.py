"""Sends on the wire, counted so that a platform can let them finish before it closes.

Closing a connection under a send turns the platform's answer into an error although the
message may well have been posted; waiting for the answer keeps the outbox true. Both
Telegram and QQ wrap each send in :meth:`InFlight.track` and call :meth:`InFlight.settle`
when they stop.

:func:`own_send` tells, inside a library's send hook, whether the send is pacebot's own
(under :meth:`InFlight.track`) or someone else's in the same process (a nonebot plugin's).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from loguru import logger

_OWN_SEND: ContextVar[bool] = ContextVar("pacebot_own_send", default=False)


def own_send() -> bool:
    """Tell whether the code running now is one of pacebot's own sends."""
    return _OWN_SEND.get()


class InFlight:
    """Count the sends still waiting for the platform's answer."""

    def __init__(self, platform: str) -> None:
        self._platform = platform
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        """Count one send for as long as the block runs."""
        self._count += 1
        self._idle.clear()
        mark = _OWN_SEND.set(True)
        try:
            yield
        finally:
            _OWN_SEND.reset(mark)
            self._count -= 1
            if not self._count:
                self._idle.set()

    async def settle(self, *, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for every tracked send to get its answer."""
        if not self._count:
            return
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            logger.warning("{}: {} send(s) unanswered at stop", self._platform, self._count)
