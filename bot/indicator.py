"""The typing indicator: shown while a reply is being made ready, never in the way of one.

Under load thousands of chats may wait for a send slot at once, each refreshing its
indicator; unbounded, those requests would crowd out the sends and the polling. So each
platform gets a typing :class:`~bot.pacing.Budget` of as many a second as it allows sends,
and an indicator the budget refuses is simply not shown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from loguru import logger

from bot.models import ChatKey
from bot.pacing import Budget
from bot.ports import Platform
from bot.replies.items import ItemKind


class Indicator:
    """Show "typing…" (or "recording…" before a voice note) within each platform's budget."""

    def __init__(self) -> None:
        self._budgets: dict[str, Budget] = {}  # one per platform

    async def show(
        self,
        chat: ChatKey,
        platform: Platform,
        *,
        timeout_s: float,
        kind: ItemKind = ItemKind.CONTENT,
    ) -> None:
        """Show the indicator once in ``chat`` if the budget has room; never wait for it."""
        if not self._budget(platform).take():
            return
        try:
            async with asyncio.timeout(timeout_s):
                await platform.show_typing(chat, kind=kind)
        except TimeoutError:
            logger.bind(chat=str(chat)).debug("typing indicator timed out")

    @contextlib.asynccontextmanager
    async def shown(
        self,
        chat: ChatKey,
        platform: Platform,
        *,
        enabled: bool = True,
        kind: ItemKind = ItemKind.CONTENT,
    ) -> AsyncIterator[None]:
        """Show the indicator in ``chat``, refreshed, for as long as the block runs."""
        refresh_s = platform.typing_refresh_s
        if not enabled or refresh_s is None:
            yield
            return

        done = asyncio.Event()

        async def keep_showing() -> None:
            loop = asyncio.get_running_loop()
            while not done.is_set():
                next_at = loop.time() + refresh_s
                await self.show(chat, platform, timeout_s=refresh_s, kind=kind)
                await wait_set(done, seconds=next_at - loop.time())

        task = asyncio.create_task(keep_showing(), name=f"typing:{chat}")
        try:
            yield
        finally:
            # The event ends the loop even if a library swallows the cancel; waiting with
            # ``asyncio.wait`` never absorbs a cancel aimed at us.
            done.set()
            task.cancel()
            await asyncio.wait({task})

    def _budget(self, platform: Platform) -> Budget:
        budget = self._budgets.get(platform.name)
        if budget is None:
            loop = asyncio.get_running_loop()
            budget = Budget(per_s=platform.limits.overall_per_s, clock=loop.time)
            self._budgets[platform.name] = budget
        return budget


async def wait_set(event: asyncio.Event, *, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``event``; return whether it is set.

    ``asyncio.timeout`` rather than ``asyncio.wait_for``: on Python 3.11 ``wait_for`` loses
    a cancel that lands in the tick its inner wait finishes (cpython#86296).
    """
    try:
        async with asyncio.timeout(max(seconds, 0)):
            await event.wait()
    except TimeoutError:
        return False
    return True
