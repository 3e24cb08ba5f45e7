"""Long-poll getUpdates page by page: each page is handed over whole, then confirmed.

PTB's ``Updater`` queues each update for its ``Application`` to handle one at a time,
and sends the next getUpdates (which tells Telegram the page arrived) as soon as the
page is queued. pacebot polls with PTB's ``Bot`` itself instead. Each page goes to the
core in one call, which stores it in one transaction, and the next getUpdates goes out
as soon as that is done: nothing is confirmed before it is stored (after a crash
Telegram delivers the page again, and storing is idempotent), and a busy wire waits one
commit between polls, not one handler per update.

The first getUpdates does not wait (``timeout=0``): its answer shows that polling
works, and the platform says it is running only then.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Final

import stamina
from loguru import logger
from telegram import Bot, Update
from telegram.error import InvalidToken, RetryAfter, TelegramError

from adapters.telegram.errors import describe, retry_after_seconds
from bot.tasks import set_before_done, start_task

ALLOWED_UPDATES: Final = (Update.MESSAGE, Update.EDITED_MESSAGE)


class Backoff:
    """Retry a Bot API call with growing waits, saying in a warning why and for how long.

    The waits double from ``initial_s`` with a jitter of up to ``initial_s`` and stop
    growing at ``max_s``; after a 429 the wait is at least what Telegram asked for.
    ``trouble`` says what went wrong in the warning ("Bot API unreachable").
    """

    def __init__(self, *, initial_s: float, max_s: float, trouble: str) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self._trouble = trouble

    async def attempts(
        self, retry_if: Callable[[Exception], bool]
    ) -> AsyncIterator[stamina.Attempt]:
        """Yield attempts (``with attempt: ...``) until one succeeds, for ever.

        An error ``retry_if`` refuses ends the attempts and is raised.
        """
        current: stamina.Attempt | None = None

        def wait(error: Exception) -> bool | float:
            """Tell stamina whether to retry after ``error`` (or how long to wait); log it."""
            if current is None or not retry_if(error):
                return False
            return self._announce(error, current)

        async for attempt in stamina.retry_context(
            on=wait,
            attempts=None,
            timeout=None,
            wait_initial=self.initial_s,
            wait_max=self.max_s,
            wait_jitter=self.initial_s,
        ):
            current = attempt
            yield attempt

    def _announce(self, error: Exception, attempt: stamina.Attempt) -> bool | float:
        if isinstance(error, RetryAfter):
            wait = max(attempt.next_wait, retry_after_seconds(error))
            logger.warning(
                "Telegram Bot API asks to wait ({}); retry {} in {:.1f} s",
                describe(error),
                attempt.num,
                wait,
            )
            return wait
        # stamina adds its jitter to next_wait, then caps the sum at max_s.
        shortest = min(attempt.next_wait, self.max_s)
        longest = min(attempt.next_wait + self.initial_s, self.max_s)
        logger.warning(
            "Telegram {} ({}); retry {} in {:.1f}–{:.1f} s",
            self._trouble,
            describe(error),
            attempt.num,
            shortest,
            longest,
        )
        return True


class Poller:
    """Fetch pages of updates; hand each to ``on_page`` before the next poll confirms it.

    ``on_page`` must not raise. ``answered`` is set once the first getUpdates has
    answered. A rejected token ends the polling with an error line.
    """

    def __init__(
        self,
        bot: Bot,
        on_page: Callable[[Sequence[Update]], Awaitable[None]],
        *,
        timeout_s: float,
        backoff: Backoff,
    ) -> None:
        self._bot = bot
        self._on_page = on_page
        self._timeout = timedelta(seconds=timeout_s)
        self._backoff = backoff
        self._offset: int | None = None  # the first update id not handed over yet
        self._fetching = False  # a getUpdates is under way: cancelling it loses nothing
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.answered = asyncio.Event()

    @property
    def running(self) -> bool:
        """Tell whether polling goes on (started, not stopped, not given up)."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start polling in the background."""
        self._task = start_task(
            self._poll(), name="telegram:poll", failure="Telegram polling crashed"
        )

    async def first_answer(self) -> bool:
        """Wait for the first getUpdates to answer; ``False`` if polling ended before."""
        task = self._task
        if task is None:
            msg = "Poller.start() has not been called"
            raise RuntimeError(msg)
        return await set_before_done(self.answered, task)

    async def stop(self) -> None:
        """Finish the page being handed over, stop, and confirm what was handed over."""
        self._stopping = True
        task = self._task
        if task is None:
            return
        if self._fetching:
            task.cancel()
        await asyncio.wait({task})
        if self._offset is not None:
            try:  # as PTB does: a last short poll tells Telegram what arrived
                await self._bot.get_updates(
                    offset=self._offset, limit=1, timeout=0, allowed_updates=ALLOWED_UPDATES
                )
            except TelegramError as error:
                logger.warning(
                    "Telegram: confirming the last updates failed ({}); they may come again",
                    describe(error),
                )

    async def _poll(self) -> None:
        wait = timedelta(0)  # the first answer shows at once that polling works
        while not self._stopping:
            self._fetching = True
            try:
                updates = await self._fetch(wait)
            except InvalidToken:
                logger.error("Telegram rejected the bot token while polling; polling stopped")
                return
            finally:
                self._fetching = False
            self.answered.set()
            wait = self._timeout
            if updates:
                await self._on_page(updates)
                self._offset = updates[-1].update_id + 1

    async def _fetch(self, wait: timedelta) -> tuple[Update, ...]:
        updates: tuple[Update, ...] = ()
        async for attempt in self._backoff.attempts(_worth_retrying):
            with attempt:
                updates = await self._bot.get_updates(
                    offset=self._offset, timeout=wait, allowed_updates=ALLOWED_UPDATES
                )
        return updates


def _worth_retrying(error: Exception) -> bool:
    """Any Bot API trouble but a rejected token passes (a 409 from a second poller too)."""
    return isinstance(error, TelegramError) and not isinstance(error, InvalidToken)
