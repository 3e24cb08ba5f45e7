"""A wall clock for tests that must wait hours: it runs with real time and jumps on demand.

The core reads "now" through an injected ``now()``; give it :meth:`Clock.now` and move
the day on with :meth:`Clock.jump` instead of sleeping. Timers of the event loop still
run on real (loop) time: after a jump, tell whatever waits for a moment to look again
(``Initiative.poke``).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta


class Clock:
    """A clock that starts at ``start`` and can be moved forward."""

    def __init__(self, start: datetime) -> None:
        self._start = start
        self._started = time.monotonic()
        self._jumped = timedelta()

    def now(self) -> datetime:
        """Return the current time: ``start``, plus real time elapsed, plus the jumps."""
        return self._start + timedelta(seconds=time.monotonic() - self._started) + self._jumped

    def jump(self, **delta: float) -> datetime:
        """Move the clock forward by ``timedelta(**delta)``; return the new time."""
        self._jumped += timedelta(**delta)
        return self.now()

    def jump_to(self, moment: datetime) -> None:
        """Move the clock forward to ``moment`` (never back)."""
        self._jumped += max(moment - self.now(), timedelta())
