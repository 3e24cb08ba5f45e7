"""Keep sends within what a platform tolerates: per chat, per group and overall.

A send first reserves a slot, then waits for it. Reservations are taken at once, so
concurrent senders queue behind each other instead of all waking together. A slot that
was not used after all (the sender was woken before it, or the send never reached the
platform) is given back, so it does not hold up the sends after it.

The typing indicator is only a hint, so it never waits: a :class:`Budget` lets it through
while there is room and skips it otherwise. However many chats wait for a send slot,
their "typing…" costs the platform no more requests a second than the sends do.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable

from bot.models import ChatKey
from bot.ports import PacingLimits


class SlidingWindow:
    """At most ``limit`` events in any ``size_s``-second window.

    It remembers the span of moments its last answer found full, so a queue of
    reservations far into the future is crossed once, not again by each reservation
    behind it: adding an event never makes room, and forgetting the past only makes room
    before the present. Giving a slot back may, and clears the span.
    """

    def __init__(self, *, size_s: float, limit: int) -> None:
        self._size_s = size_s
        self._limit = limit
        self._times: list[float] = []  # sorted reservation times
        self._full: tuple[float, float] | None = None  # no moment in [start, end) has room

    def earliest(self, at: float) -> float:
        """Return the first moment at or after ``at`` with room for one more event.

        Counting is conservative: every event less than a window away on either side of
        a moment counts, so no window that holds it can exceed the limit. Room only opens
        as a counted event leaves, a window after it. Where a moment has none, the events
        it counts are ``times[lo:hi]``, and later moments count those up to ``hi`` until
        they leave: the next moment with room is no sooner than the one ``times[hi -
        limit]`` leaves at. Each jump there leaves one more event behind.
        """
        times, size_s = self._times, self._size_s
        start, candidate = at, at
        if self._full is not None and self._full[0] <= at <= self._full[1]:
            start, candidate = self._full
        lo = bisect.bisect_right(times, candidate - size_s)
        while True:
            hi = bisect.bisect_left(times, candidate + size_s)
            if hi - lo < self._limit:
                self._full = (start, candidate)
                return candidate
            leaving = times[hi - self._limit]
            candidate = max(candidate, leaving + size_s)
            lo = bisect.bisect_right(times, leaving)  # it and all before it are out by then

    def add(self, at: float) -> None:
        """Record an event at ``at``."""
        bisect.insort(self._times, at)

    def remove(self, at: float) -> None:
        """Forget one event recorded at ``at``, if it is still held."""
        index = bisect.bisect_left(self._times, at)
        if index < len(self._times) and self._times[index] == at:
            del self._times[index]
            self._full = None

    def forget_before(self, now: float) -> None:
        """Drop events no window from ``now`` on can hold.

        Only the present may decide this: an event before a future candidate's window may
        still count for an earlier moment another sender asks about.
        """
        drop = bisect.bisect_right(self._times, now - self._size_s)
        if drop:
            del self._times[:drop]
            if self._full is not None:  # the moments those events held are all before now
                self._full = (max(self._full[0], now), self._full[1])


class Budget:
    """Let at most ``per_s`` events a second through, in bursts of one second's worth.

    A token bucket: it refills at ``per_s`` tokens a second up to ``max(1, per_s)``, and
    each event taken spends one. An event with no token left is refused, not delayed.
    """

    def __init__(self, *, per_s: float, clock: Callable[[], float]) -> None:
        self._per_s = per_s
        self._capacity = max(1.0, per_s)
        self._clock = clock
        self._tokens = self._capacity
        self._at = clock()

    def take(self) -> bool:
        """Spend one token if there is one; tell whether the event may go ahead."""
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._at) * self._per_s)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class Pacer:
    """Hand out send slots that respect a platform's :class:`PacingLimits`.

    A chat is remembered while its last send still matters: within ``chat_interval_s``,
    or 60 s for a group's window. Chats are kept in the order they last sent, so each
    send lets go of the ones at the front whose last send is older than that.
    """

    _GROUP_WINDOW_S = 60.0

    def __init__(self, limits: PacingLimits, *, clock: Callable[[], float]) -> None:
        self._limits = limits
        self._clock = clock
        self._overall = SlidingWindow(size_s=1.0, limit=max(1, int(limits.overall_per_s)))
        self._groups: dict[ChatKey, SlidingWindow] = {}
        self._last_in_chat: dict[ChatKey, float] = {}
        self._before_last: dict[ChatKey, float] = {}  # for give_back

    def reserve(self, chat: ChatKey) -> float:
        """Reserve the next allowed send time for ``chat`` (a loop time) and return it.

        A forum's topics share their group's limits: the platform counts by group.
        """
        chat = chat.room
        now = self._clock()
        at = max(now, self._last_in_chat.get(chat, -1e18) + self._limits.chat_interval_s)
        group = self._group_window(chat)
        self._overall.forget_before(now)
        if group is not None:
            group.forget_before(now)
        # Alternate between the windows until both agree: each only ever moves ``at`` later.
        while True:
            candidate = self._overall.earliest(at)
            if group is not None:
                candidate = group.earliest(candidate)
            if candidate == at:
                break
            at = candidate
        self._overall.add(at)
        if group is not None:
            group.add(at)
        self._remember(chat, at, now)
        return at

    def give_back(self, chat: ChatKey, at: float) -> None:
        """Return the slot reserved at ``at`` for a send that never reached the platform.

        A chat's sends are reserved one after another, so its last reservation is this one
        and the one before it becomes the chat's last again.
        """
        chat = chat.room
        self._overall.remove(at)
        group = self._groups.get(chat)
        if group is not None:
            group.remove(at)
        if self._last_in_chat.get(chat) == at:
            before = self._before_last.pop(chat, None)
            if before is None:
                del self._last_in_chat[chat]
            else:
                self._last_in_chat[chat] = before

    def _group_window(self, chat: ChatKey) -> SlidingWindow | None:
        if not chat.is_group:
            return None
        window = self._groups.get(chat)
        if window is None:
            window = SlidingWindow(size_s=self._GROUP_WINDOW_S, limit=self._limits.group_per_minute)
            self._groups[chat] = window
        return window

    def _remember(self, chat: ChatKey, at: float, now: float) -> None:
        before = self._last_in_chat.pop(chat, None)
        if before is not None:
            self._before_last[chat] = before
        self._let_go(now)
        self._last_in_chat[chat] = at  # at the back: the most recent sender

    def _let_go(self, now: float) -> None:
        """Forget the chats at the front whose last send no longer limits anything."""
        horizon = now - max(self._limits.chat_interval_s, self._GROUP_WINDOW_S)
        stale = list(
            itertools.takewhile(lambda chat: self._last_in_chat[chat] < horizon, self._last_in_chat)
        )
        for chat in stale:
            del self._last_in_chat[chat]
            self._before_last.pop(chat, None)
            self._groups.pop(chat, None)

    def __len__(self) -> int:
        """Return how many chats are remembered."""
        return len(self._last_in_chat)
