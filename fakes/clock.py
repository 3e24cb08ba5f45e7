"""A wall clock for tests that must wait hours: it runs with real time (or stands still)
and jumps on demand.

The core reads "now" through an injected ``now()``; give it :meth:`Clock.now` and move
the day on with :meth:`Clock.jump` instead of sleeping. Timers of the event loop still
run on real (loop) time: after a jump, tell whatever waits for a moment to look again
(``Initiative.poke``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


class Clock:
    """A clock that starts at ``start`` (now, if not given) and can be moved forward.

    ``running=False`` stops it between jumps: a test that counts seconds between events
    (a bot loop's "within 2 s") reads the same figures on a busy machine.
    """

    def __init__(self, start: datetime | None = None, *, running: bool = True) -> None:
        self._start = start or datetime.now(UTC)
        self._started = time.monotonic()
        self._running = running
        self._jumped = timedelta()

    def now(self) -> datetime:
        """Return the current time: ``start``, plus real time elapsed if it runs, plus the
        jumps."""
        elapsed_s = time.monotonic() - self._started if self._running else 0.0
        return self._start + timedelta(seconds=elapsed_s) + self._jumped

    def jump(self, **delta: float) -> datetime:
        """Move the clock forward by ``timedelta(**delta)``; return the new time."""
        self._jumped += timedelta(**delta)
        return self.now()

    def jump_to(self, moment: datetime) -> None:
        """Move the clock forward to ``moment`` (never back)."""
        self._jumped += max(moment - self.now(), timedelta())
