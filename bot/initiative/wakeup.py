"""One wake-up for the next due moment across every chat: never a timer per item.

However many later items wait and however many chats may get an opener, one
``loop.call_at`` handle is armed, for the earliest moment anyone asked for; it is moved
only when an earlier one is asked for. Moments are wall-clock (``now()``) and the loop's
clock is monotonic, so a wait is never armed for more than ``longest_s``: a wall clock
that jumps, or a machine that slept, is noticed within that. When it fires, the caller
finds what is due and asks for its next moment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

LONGEST_WAIT_S = 60.0


class WakeUp:
    """Call ``on_due()`` once the earliest moment asked for with :meth:`at` has come."""

    def __init__(
        self,
        on_due: Callable[[], None],
        *,
        now: Callable[[], datetime],
        longest_s: float = LONGEST_WAIT_S,
    ) -> None:
        self._on_due = on_due
        self._now = now
        self._longest_s = longest_s
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = 0.0  # loop time

    @property
    def armed(self) -> bool:
        """Tell whether a wake-up is armed."""
        return self._handle is not None

    def at(self, moment: datetime) -> None:
        """Make sure the wake-up comes no later than ``moment`` (at once if it is past)."""
        loop = asyncio.get_running_loop()
        wait_s = (moment - self._now()).total_seconds()
        deadline = loop.time() + min(max(wait_s, 0.0), self._longest_s)
        if self._handle is not None and self._armed_for <= deadline:
            return
        self.cancel()
        self._armed_for = deadline
        self._handle = loop.call_at(deadline, self._fire)

    def cancel(self) -> None:
        """Forget the wake-up armed, if any."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        self._on_due()
