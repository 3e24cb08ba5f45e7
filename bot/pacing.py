"""Keep sends within what a platform tolerates: per chat, per group and overall.

A send first reserves a slot, then waits for it. Reservations are taken at once, so
concurrent senders queue behind each other instead of all waking together.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from bot.models import ChatKey
from bot.ports import PacingLimits


class SlidingWindow:
    """At most ``limit`` events in any ``size_s``-second window."""

    def __init__(self, *, size_s: float, limit: int) -> None:
        self._size_s = size_s
        self._limit = limit
        self._times: list[float] = []  # sorted reservation times

    def earliest(self, at: float) -> float:
        """Return the first moment at or after ``at`` with room for one more event."""
        self._forget_before(at - self._size_s)
        for candidate in [at, *(t + self._size_s for t in self._times)]:
            if candidate >= at and self._room_at(candidate):
                return candidate
        return self._times[-1] + self._size_s  # pragma: no cover - the loop always finds one

    def add(self, at: float) -> None:
        """Record an event at ``at``."""
        bisect.insort(self._times, at)

    def _room_at(self, at: float) -> bool:
        # Conservative: count every event less than a window away on either side, so no
        # window that holds ``at`` can exceed the limit.
        lo = bisect.bisect_right(self._times, at - self._size_s)
        hi = bisect.bisect_left(self._times, at + self._size_s)
        return hi - lo < self._limit

    def _forget_before(self, cutoff: float) -> None:
        drop = bisect.bisect_right(self._times, cutoff)
        if drop:
            del self._times[:drop]


class Pacer:
    """Hand out send slots that respect a platform's :class:`PacingLimits`."""

    _FORGET_AFTER = 10_000  # chats remembered before old entries are pruned

    def __init__(self, limits: PacingLimits, *, clock: Callable[[], float]) -> None:
        self._limits = limits
        self._clock = clock
        self._overall = SlidingWindow(size_s=1.0, limit=max(1, int(limits.overall_per_s)))
        self._groups: dict[ChatKey, SlidingWindow] = {}
        self._last_in_chat: dict[ChatKey, float] = {}

    def reserve(self, chat: ChatKey) -> float:
        """Reserve the next allowed send time for ``chat`` (a loop time) and return it."""
        now = self._clock()
        at = max(now, self._last_in_chat.get(chat, -1e18) + self._limits.chat_interval_s)
        group = self._group_window(chat)
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

    def _group_window(self, chat: ChatKey) -> SlidingWindow | None:
        if not chat.is_group:
            return None
        window = self._groups.get(chat)
        if window is None:
            window = SlidingWindow(size_s=60.0, limit=self._limits.group_per_minute)
            self._groups[chat] = window
        return window

    def _remember(self, chat: ChatKey, at: float, now: float) -> None:
        self._last_in_chat[chat] = at
        if len(self._last_in_chat) > self._FORGET_AFTER:
            horizon = now - max(self._limits.chat_interval_s, 60.0)
            for key, last in list(self._last_in_chat.items()):
                if last < horizon:
                    del self._last_in_chat[key]
                    self._groups.pop(key, None)
