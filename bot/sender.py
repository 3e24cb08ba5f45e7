"""Deliver queued items in order, each at its due time, with typing shown while waiting
(:mod:`bot.indicator`).

One task per chat runs only while that chat has scheduled replies. A reply that went out
late (a slow moment, a rate limit) moves the ones after it later by as much, so the pause
a reader sees between two replies is never shorter than the one planned. Before a send the
row moves ``scheduled → sending`` with a conditional update, so a cancel and a send never
both win; a row left in ``sending`` by a crash is never sent again. A reply that
certainly did not go out is tried again after a back-off (``stamina``), which the
platform's coming back, or a stop, cuts short.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol

import stamina
from loguru import logger

from bot.config.model import PacingConfig
from bot.conversation import ChatEvents, Unheard
from bot.errors import ChatUnavailable, MessageRefused, RateLimited, SendFailed
from bot.indicator import Indicator, wait_set
from bot.models import ChatKey
from bot.pacing import Pacer
from bot.ports import Platform
from bot.replies.hooks import AsTheyAre, ItemHooks
from bot.replies.items import ItemKind, OutboxItem, Outgoing, said
from bot.retries import DEFAULT_RETRIES, Retries
from bot.tasks import start_task

_STOP_GRACE_S = 5.0  # how long a send already on the wire may take to finish at shutdown
_NO_WAIT_S = 0.005  # shorter waits (clock rounding, timer resolution) are not waited for


class Outbox(Protocol):
    """The outbox as the sender sees it: the next reply due, and each one's fate."""

    async def next_scheduled(self, chat: ChatKey) -> OutboxItem | None:
        """Return the chat's earliest scheduled reply, if any."""
        ...

    async def claim_for_sending(self, item_id: int, *, now: datetime) -> bool:
        """Move a reply from scheduled to sending; ``False`` if it is no longer scheduled."""
        ...

    async def mark_sent(
        self,
        item_id: int,
        *,
        platform_message_id: str | None,
        said: str | None,
        sender_name: str,
        now: datetime,
        sent_as: ItemKind | None = None,
    ) -> None:
        """Record an item as sent, ``sent_as`` the kind it went out as (a voice note's
        words may go as text); keep ``said`` as a bot message in the chat's history under
        the platform's id (neither is given for a reaction, which is no message)."""
        ...

    async def release(self, item_id: int, *, now: datetime) -> None:
        """Return a reply that was certainly not delivered from sending to scheduled."""
        ...

    async def mark_dropped(self, item_id: int, *, now: datetime, reason: str) -> None:
        """Give up on one reply."""
        ...

    async def drop_scheduled(self, chat: ChatKey, *, now: datetime, reason: str) -> int:
        """Drop every scheduled reply of a chat; return how many."""
        ...


class _NotDelivered(Exception):
    """A reply certainly did not go out: back off, then look at the outbox again."""


class _Outcome(enum.Enum):
    DONE = enum.auto()  # nothing more is scheduled
    WOKEN = enum.auto()  # something changed while waiting: look again
    SENT = enum.auto()
    RETRY_NOW = enum.auto()  # the platform asked us to wait, and we did
    RETRY_LATER = enum.auto()  # certainly not delivered: back off, then try again
    NOT_CLAIMED = enum.auto()  # cancelled meanwhile: nothing went out
    REFUSED = enum.auto()  # the platform refused it: dropped, nothing went out
    SKIPPED = enum.auto()  # dropped
    CHAT_GONE = enum.auto()  # the bot can no longer post in this chat


class _Pause:
    """The pause planned before each reply, kept from the last one actually sent."""

    def __init__(self) -> None:
        self._last: tuple[datetime, datetime] | None = None  # (its due time, send began)

    def due(self, item: OutboxItem) -> datetime:
        """When ``item`` may go: its due time, or later by as much as the last reply sent
        (in this task) went out late."""
        if self._last is None:
            return item.due_at
        last_due, sent_at = self._last
        planned = item.due_at - last_due
        return max(item.due_at, sent_at + planned) if planned.total_seconds() >= 0 else item.due_at

    def sent(self, item: OutboxItem, at: datetime) -> None:
        """Note that ``item``'s send began ``at`` and went out."""
        self._last = (item.due_at, at)


class Sender:
    """Deliver the outbox, chat by chat."""

    def __init__(
        self,
        store: Outbox,
        platforms: Mapping[str, Platform],
        pacing: PacingConfig,
        *,
        bot_name: str,
        now: Callable[[], datetime],
        hooks: ItemHooks | None = None,
        retries: Retries = DEFAULT_RETRIES,
    ) -> None:
        self._store = store
        self._retries = retries
        self._events: ChatEvents = Unheard()
        self._hooks = hooks or AsTheyAre()
        self._platforms = platforms
        self._pacing = pacing
        self._bot_name = bot_name
        self._now = now
        self._pacers: dict[str, Pacer] = {}
        self._indicator = Indicator()
        self._tasks: dict[ChatKey, asyncio.Task[None]] = {}
        self._wakes: dict[ChatKey, asyncio.Event] = {}
        self._backing_off: set[ChatKey] = set()  # their task sleeps in a back-off
        self._cut_short: set[ChatKey] = set()  # their back-off was cancelled: start again
        self._stopping = False

    def report_to(self, events: ChatEvents) -> None:
        """From now on, tell ``events`` each item sent and each chat whose replies are done."""
        self._events = events

    def __len__(self) -> int:
        """Return how many chats have replies being delivered."""
        return len(self._tasks.keys() | self._wakes.keys() | self._backing_off | self._cut_short)

    def paced_chats(self) -> int:
        """Return how many chats a platform's pacer remembers (each within its windows)."""
        return sum(len(pacer) for pacer in self._pacers.values())

    @property
    def idle(self) -> bool:
        """Tell whether no chat has replies being delivered."""
        return not self._tasks

    def wake(self, chat: ChatKey) -> None:
        """Look at ``chat``'s outbox again: new replies were queued or some cancelled."""
        if self._stopping:
            return
        event = self._wakes.setdefault(chat, asyncio.Event())
        event.set()
        if chat not in self._tasks:
            self._tasks[chat] = start_task(
                self._deliver(chat),
                name=f"sender:{chat}",
                failure="sender failed",
                chat=str(chat),
                on_done=functools.partial(self._finished, chat),
            )

    async def drain(self) -> None:
        """Wait until every chat's queued replies are delivered."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def stop(self) -> None:
        """Stop sending; a send already on the wire may finish, queued ones stay queued."""
        self._stopping = True
        for event in self._wakes.values():
            event.set()
        for chat in self._backing_off:
            self._tasks[chat].cancel()  # only waiting: nothing is on the wire
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def wake_platform(self, platform: str) -> None:
        """Look at the outbox of every chat on ``platform`` that has replies in hand.

        A chat backing off after a failed send starts again at once.
        """
        for chat, task in list(self._tasks.items()):
            if chat.platform != platform:
                continue
            if chat in self._backing_off:
                self._cut_short.add(chat)
                task.cancel()  # only waiting: nothing is on the wire
            else:
                self.wake(chat)

    def _finished(self, chat: ChatKey, task: asyncio.Task[None]) -> None:
        self._backing_off.discard(chat)
        if self._tasks.get(chat) is task:
            del self._tasks[chat]
            self._wakes.pop(chat, None)
        if chat in self._cut_short:
            self._cut_short.discard(chat)
            self.wake(chat)
            return
        if not self._stopping:
            self._events.replies_done(chat)

    def _pacer(self, platform: Platform) -> Pacer:
        pacer = self._pacers.get(platform.name)
        if pacer is None:
            loop = asyncio.get_running_loop()
            pacer = Pacer(platform.limits, clock=loop.time)
            self._pacers[platform.name] = pacer
        return pacer

    async def _deliver(self, chat: ChatKey) -> None:
        platform = self._platforms.get(chat.platform)
        if platform is None:
            logger.bind(chat=str(chat)).error(
                "no platform {} is running; replies stay queued", chat.platform
            )
            return
        wake = self._wakes.setdefault(chat, asyncio.Event())
        retries = self._retries
        pause = _Pause()
        while not self._stopping:
            # A fresh back-off for each reply: only failures in a row make it grow.
            async for attempt in stamina.retry_context(
                on=_NotDelivered,
                attempts=None,
                timeout=None,
                wait_initial=retries.send_wait_initial_s,
                wait_max=retries.send_wait_max_s,
            ):
                with attempt:
                    self._backing_off.discard(chat)
                    outcome = await self._deliver_next(chat, platform, wake, pause)
            if outcome in {_Outcome.DONE, _Outcome.CHAT_GONE}:
                return

    async def _deliver_next(
        self, chat: ChatKey, platform: Platform, wake: asyncio.Event, pause: _Pause
    ) -> _Outcome:
        """Send the chat's next reply when it is due; raise ``_NotDelivered`` to back off."""
        wake.clear()
        item = await self._store.next_scheduled(chat)
        if item is None:
            return _Outcome.DONE
        due_in_s = (pause.due(item) - self._now()).total_seconds()
        kind = self._hooks.kind_sent(chat, item.item)
        if await self._pause(chat, platform, wake, seconds=due_in_s, kind=kind):
            return _Outcome.WOKEN
        late_s = (self._now() - item.due_at).total_seconds()
        if late_s > self._pacing.stale_after_s:
            logger.bind(chat=str(chat)).warning(
                "reply {} dropped: {:.0f} s past due", item.id, late_s
            )
            await self._store.mark_dropped(item.id, now=self._now(), reason="stale")
            return _Outcome.SKIPPED
        pacer = self._pacer(platform)
        slot = pacer.reserve(chat)
        slot_in_s = slot - asyncio.get_running_loop().time()
        if await self._pause(chat, platform, wake, seconds=slot_in_s, kind=kind):
            pacer.give_back(chat, slot)  # woken before using it: look again
            return _Outcome.WOKEN
        started = self._now()  # pauses run start to start: each send's own time is alike
        outcome = await self._send(item, platform)
        if outcome is _Outcome.SENT:
            pause.sent(item, started)
        if outcome in {_Outcome.NOT_CLAIMED, _Outcome.REFUSED, _Outcome.RETRY_LATER}:
            pacer.give_back(chat, slot)  # nothing reached the chat
        if outcome is _Outcome.RETRY_LATER:
            if wake.is_set():
                # Woken while the failed send was being recorded (the platform came back):
                # that wake would be lost in the back-off, so look again at once.
                return _Outcome.WOKEN
            self._backing_off.add(chat)  # from here to the back-off's sleep nothing awaits
            raise _NotDelivered
        return outcome

    async def _send(self, item: OutboxItem, platform: Platform) -> _Outcome:
        """Make one reply ready, send it and record how it went (and in what form)."""
        chat = item.chat
        log = logger.bind(chat=str(chat))
        ready = await self._ready(item, platform)
        if ready is None:
            log.info("reply {} dropped: its {} is gone", item.id, item.item.kind)
            await self._store.mark_dropped(item.id, now=self._now(), reason="gone")
            return _Outcome.REFUSED
        if not await self._store.claim_for_sending(item.id, now=self._now()):
            return _Outcome.NOT_CLAIMED
        try:
            message_id, ready = await self._post(item, ready, platform)
        except RateLimited as exc:
            loop = asyncio.get_running_loop()
            retry_at = loop.time() + exc.retry_after_s  # counted from the platform's answer
            log.warning("rate limited; retrying reply {} in {:.1f} s", item.id, exc.retry_after_s)
            await self._store.release(item.id, now=self._now())
            await asyncio.sleep(max(0.0, retry_at - loop.time()))
            return _Outcome.RETRY_NOW
        except MessageRefused as exc:
            log.warning("reply {} refused for good ({}); dropping it", item.id, exc)
            await self._store.mark_dropped(item.id, now=self._now(), reason="refused")
            return _Outcome.REFUSED
        except ChatUnavailable as exc:
            log.warning("chat unavailable ({}); dropping its queued replies", exc)
            await self._store.mark_dropped(item.id, now=self._now(), reason="chat unavailable")
            await self._store.drop_scheduled(chat, now=self._now(), reason="chat unavailable")
            return _Outcome.CHAT_GONE
        except SendFailed as exc:
            if exc.maybe_delivered:
                log.warning("reply {} may have been delivered ({}); not resending", item.id, exc)
                await self._store.mark_dropped(item.id, now=self._now(), reason="maybe delivered")
                return _Outcome.SKIPPED
            log.warning("reply {} not sent ({}); will retry", item.id, exc)
            await self._store.release(item.id, now=self._now())
            return _Outcome.RETRY_LATER
        except Exception:
            log.exception("unexpected error sending reply {}; dropping it", item.id)
            await self._store.mark_dropped(item.id, now=self._now(), reason="send error")
            return _Outcome.SKIPPED
        await self._store.mark_sent(
            item.id,
            platform_message_id=message_id,
            said=said(ready),
            sent_as=ready.kind,
            sender_name=self._bot_name,
            now=self._now(),
        )
        await self._hooks.delivered(chat, ready)
        self._events.item_sent(chat)
        log.debug("sent reply {} as message {}", item.id, message_id)
        return _Outcome.SENT

    async def _ready(self, item: OutboxItem, platform: Platform) -> Outgoing | None:
        """Make ``item`` ready to send; a voice note shows "recording" while it is spoken."""
        speaks = self._hooks.kind_sent(item.chat, item.item) is ItemKind.VOICE
        async with self.typing(item.chat, platform, enabled=speaks, kind=ItemKind.VOICE):
            return await self._hooks.prepare(item.chat, item.item)

    async def _post(
        self, item: OutboxItem, ready: Outgoing, platform: Platform
    ) -> tuple[str | None, Outgoing]:
        """Send ``ready`` (``item`` made ready), or once what replaces it if the platform
        refuses it (a voice note's words as text); return the message id and what was sent."""
        chat, answers = item.chat, item.answers
        try:
            return await platform.send(chat, ready, answers=answers), ready
        except MessageRefused as exc:
            instead = self._hooks.instead(ready)
            if instead is None:
                raise
            refusal = str(exc)
        logger.bind(chat=str(chat)).warning(
            "reply {} refused as {} ({}); sending it as {} instead",
            item.id,
            ready.kind,
            refusal,
            instead.kind,
        )
        return await platform.send(chat, instead, answers=answers), instead

    async def _pause(
        self,
        chat: ChatKey,
        platform: Platform,
        wake: asyncio.Event,
        *,
        seconds: float,
        kind: ItemKind = ItemKind.CONTENT,
    ) -> bool:
        """Wait ``seconds`` showing that an item of ``kind`` is being made ready (typing,
        recording); return ``True`` if woken early."""
        if seconds < _NO_WAIT_S:
            return wake.is_set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        refresh_s = platform.typing_refresh_s
        while (remaining := deadline - loop.time()) > 0:
            if refresh_s is not None:
                await self._indicator.show(chat, platform, timeout_s=remaining, kind=kind)
                remaining = deadline - loop.time()
            step = remaining if refresh_s is None else min(remaining, refresh_s)
            if await wait_set(wake, seconds=step):
                return True
        return False

    def typing(
        self,
        chat: ChatKey,
        platform: Platform,
        *,
        enabled: bool = True,
        kind: ItemKind = ItemKind.CONTENT,
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Show the typing indicator in ``chat`` (refreshed) for as long as the block runs;
        for a voice note, that it is being recorded."""
        return self._indicator.shown(chat, platform, enabled=enabled, kind=kind)
