"""Find what is due, when it is due, and hand it to the pipeline as an occasion.

Later items wait in the store, never in memory: the one wake-up (``wakeup.py``) is armed
for the earliest pending one, and when it fires the items due are claimed (pending →
running) a page at a time and handed over. Openers are placed from each candidate chat's
last message (``openers.py``); the chats that may get one sit in a heap by the moment
their opener would come, with the draws that placed it, and the same wake-up serves
them. A new message only moves a chat's last message: its heap entry is checked, and
moved, when its old moment comes.

Whether an occasion may still run is decided when the chat is free to run it, from the
store (:meth:`Initiative.refusal`): a follow-up or an opener waits on ``/quiet``, an
opener on every guard of ``openers.py``, and a later item more than ``stale_after_s``
late is dropped, as at start-up after downtime.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from loguru import logger

from bot.config.model import InitiativeConfig
from bot.config.settings import Settings
from bot.conversation import ChatEvents, Unheard
from bot.hours import in_window
from bot.initiative.occasion import Occasion, OccasionKind
from bot.initiative.openers import (
    QuietPeriod,
    Silence,
    into_hours,
    opener_moment,
    opener_refusal,
)
from bot.initiative.promises import LaterItem, Promise
from bot.initiative.store import InitiativeStore
from bot.initiative.wakeup import LONGEST_WAIT_S, WakeUp
from bot.models import ChatKey
from bot.tasks import start_task

CLAIM_PAGE = 200  # later items claimed per turn; more due are claimed on the next one


def quiet_until(periods: Collection[QuietPeriod], *, now: datetime) -> datetime | None:
    """Return when the chat's quiet ends, if it is quiet at ``now``."""
    ends = [p.until() for p in periods if p.starts_at <= now < p.until()]
    return max(ends, default=None)


def occasion_of(item: LaterItem) -> Occasion:
    """Return the occasion a due later item starts."""
    return Occasion(
        item.chat,
        OccasionKind(item.kind),
        note=item.note,
        later_id=item.id,
        due_at=item.due_at,
        promised_at=item.created_at,
        asker_name=item.asker_name,
        asker_id=item.asker_id,
    )


class Initiative:
    """Queue each due later item and each due opener, once, and tell the events its chat.

    The pipeline then runs the chat's next occasion when the chat is free
    (:meth:`next_ready`).
    """

    def __init__(
        self,
        config: Settings,
        store: InitiativeStore,
        *,
        platforms: Collection[str],
        now: Callable[[], datetime],
        draw: Callable[[], float] = random.random,
        clock_check_s: float = LONGEST_WAIT_S,
    ) -> None:
        self._config = config
        self._store = store
        self._platforms = tuple(platforms)
        self._now = now
        self._events: ChatEvents = Unheard()
        self._draw = draw
        self._wakeup = WakeUp(self._woken, now=now, longest_s=clock_check_s)
        self._queued: dict[ChatKey, deque[Occasion]] = {}
        self._silences: dict[ChatKey, Silence] = {}
        self._openers: list[tuple[datetime, int, ChatKey]] = []  # (moment, tie, chat)
        self._ties = itertools.count()
        self._turn: asyncio.Task[None] | None = None
        self._again = False  # woken while a turn ran: run another
        self._stopped = False

    def __len__(self) -> int:
        """Return how many chats this holds: an occasion queued, or a silence watched
        until its opener (``initiative.after_silence_s``, then the hours' window)."""
        return len(self._queued.keys() | self._silences.keys())

    # -- what the pipeline tells -------------------------------------------------------

    def report_to(self, events: ChatEvents) -> None:
        """From now on, tell ``events`` each chat where an occasion fell due."""
        self._events = events

    def heard(self, chat: ChatKey, at: datetime) -> None:
        """Note a message in ``chat`` at ``at`` (a person's or the bot's): its silence
        starts again, so its opener moves later."""
        if not self._may_open(chat):
            return
        silence = self._silences.get(chat)
        if silence is not None and at <= silence.last_at:
            return
        fresh = Silence(at, self._draw(), self._draw())
        self._silences[chat] = fresh
        if silence is None:  # not in the heap yet; a chat in it is checked when it comes up
            self._push_opener(
                chat, opener_moment(fresh, config=self._initiative_of(chat), zone=self._zone)
            )

    def promised(self, promises: Sequence[Promise]) -> None:
        """Note later items just kept: the wake-up comes no later than the first is due."""
        if promises and not self._stopped:
            self._wakeup.at(min(promise.due_at for promise in promises))

    # -- lifecycle ---------------------------------------------------------------------

    async def recover(self) -> None:
        """At start-up: drop later items that went stale while the bot was down, and find
        the chats that may get an opener; then arm the wake-up."""
        now = self._now()
        dropped = await self._store.recover_later(
            now=now, stale_after_s=self._config.pacing.stale_after_s
        )
        for item in dropped:
            late_s = (now - item.due_at).total_seconds()
            logger.bind(chat=str(item.chat)).warning(
                "{} #{} dropped: it fell due {:.0f} s ago, while the bot was down",
                item.kind,
                item.id,
                late_s,
            )
        opening = [config for config in self._config.initiatives() if config.openers]
        if opening:  # the base config's or a profile's: heard() keeps the chats that may
            within_s = max(config.active_within_s for config in opening)
            since = now - timedelta(seconds=within_s)
            for chat, last_at in (await self._store.opener_candidates(since=since)).items():
                self.heard(chat, last_at)
        self._wake_soon()

    def stop(self) -> None:
        """Stop waking up; what is pending stays pending for the next start."""
        self._stopped = True
        self._wakeup.cancel()
        if self._turn is not None:
            self._turn.cancel()

    @property
    def handing_over(self) -> bool:
        """Tell whether a turn is looking for what is due, or handing it over, right now."""
        return self._turn is not None

    async def handed_over(self) -> None:
        """Wait until the turn running now, if any, has handed over what was due."""
        while self._turn is not None:
            await asyncio.wait({self._turn})

    # -- when an occasion is about to run ----------------------------------------------

    async def next_ready(self, chat: ChatKey) -> Occasion | None:
        """Return the chat's next queued occasion if it may still run; one that may not is
        given up (see :meth:`refusal`) and ``None`` returned."""
        queued = self._queued[chat]
        occasion = queued.popleft()
        if not queued:
            del self._queued[chat]
        refusal = await self.refusal(occasion)
        if refusal is None:
            return occasion
        await self.skip(occasion, refusal)
        return None

    async def refusal(self, occasion: Occasion) -> str | None:
        """Return why ``occasion`` may not run now; ``None`` if it may."""
        now = self._now()
        late_s = 0.0 if occasion.due_at is None else (now - occasion.due_at).total_seconds()
        if occasion.chat.platform not in self._platforms:
            return f"{occasion.chat.platform} is not running"
        if late_s > self._config.pacing.stale_after_s:
            return f"stale: {late_s:.0f} s past due"
        if occasion.kind is OccasionKind.REMIND:
            return None  # a reminder is kept even in a quiet chat
        quiet = quiet_until(await self._store.quiet_periods(occasion.chat, limit=1), now=now)
        if occasion.kind is OccasionKind.FOLLOWUP:
            return None if quiet is None else f"quiet until {quiet.astimezone(self._zone):%H:%M}"
        day_start = self._config.chat_days(self._now).start_of_today()
        facts = await self._store.opener_facts(occasion.chat, day_start=day_start)
        return opener_refusal(
            occasion.chat,
            facts,
            now=now,
            quiet_until=quiet,
            config=self._initiative_of(occasion.chat),
            zone=self._zone,
        )

    async def skip(self, occasion: Occasion, reason: str) -> None:
        """Give up ``occasion`` for ``reason``: a later item is dropped, and logged."""
        log = logger.bind(chat=str(occasion.chat))
        if occasion.later_id is None:
            log.info("no opener: {}", reason)
            return
        await self._store.drop_later(occasion.later_id, reason=reason, now=self._now())
        log.info("{} #{} dropped: {}", occasion.kind, occasion.later_id, reason)

    # -- the wake-up -------------------------------------------------------------------

    @property
    def _zone(self) -> ZoneInfo:
        return self._config.bot.zone

    def _initiative_of(self, chat: ChatKey) -> InitiativeConfig:
        return self._config.for_chat(chat).initiative

    def _may_open(self, chat: ChatKey) -> bool:
        initiative = self._initiative_of(chat)
        group_ok = not chat.is_group or initiative.openers_in_groups
        return initiative.openers and group_ok and chat.platform in self._platforms

    def _push_opener(self, chat: ChatKey, moment: datetime) -> None:
        heapq.heappush(self._openers, (moment, next(self._ties), chat))
        if not self._stopped:
            self._wakeup.at(moment)

    def _wake_soon(self) -> None:
        if not self._stopped:
            self._wakeup.at(self._now())

    def _woken(self) -> None:
        if self._stopped:
            return
        if self._turn is not None:
            self._again = True
            return
        self._turn = start_task(
            self._hand_over(),
            name="initiative:turn",
            failure="looking for due later items and openers failed",
            on_done=self._turn_ended,
        )

    def _turn_ended(self, _: asyncio.Task[None]) -> None:
        self._turn = None
        if self._again and not self._stopped:
            self._again = False
            self._wake_soon()

    async def _hand_over(self) -> None:
        """Hand over what is due now, then arm the wake-up for what comes next."""
        now = self._now()
        claimed = await self._store.claim_due_later(
            now=now, platforms=self._platforms, limit=CLAIM_PAGE
        )
        for item in claimed:
            self._hand(occasion_of(item))
        self._openers_due(now)
        if len(claimed) == CLAIM_PAGE:
            self._again = True  # more may be due: the next turn claims them
            return
        upcoming = await self._store.next_later_due(platforms=self._platforms)
        if upcoming is not None:
            self._wakeup.at(upcoming)
        if self._openers:
            self._wakeup.at(self._openers[0][0])

    def _openers_due(self, now: datetime) -> None:
        """Hand over each chat whose opener moment has come and still stands."""
        while self._openers and self._openers[0][0] <= now:
            _, _, chat = heapq.heappop(self._openers)
            silence = self._silences.get(chat)
            if silence is None:
                continue
            initiative = self._initiative_of(chat)
            moment = opener_moment(silence, config=initiative, zone=self._zone)
            if moment <= now and not in_window(now, window=initiative.window, zone=self._zone):
                moment = into_hours(
                    now, window=initiative.window, zone=self._zone, draw=silence.window_draw
                )
            if moment > now:  # they wrote since, or it came late, out of hours: later
                heapq.heappush(self._openers, (moment, next(self._ties), chat))
                continue
            del self._silences[chat]  # until the chat's next message
            self._hand(Occasion(chat, OccasionKind.OPENER, quiet_since=silence.last_at))

    def _hand(self, occasion: Occasion) -> None:
        self._queued.setdefault(occasion.chat, deque()).append(occasion)
        self._events.occasion_due(occasion.chat)
