"""The chat day: when one begins and ends, and which one it is now.

A **chat day** runs from the day boundary (default 04:00) to the same wall-clock time the
next day, in the bot's zone: a message at 02:00 on 22 November belongs to chat day
21 November. Summaries, budgets, "sent today" and the openers' daily count all count per
chat day; :class:`ChatDays` is the one place that says where a day starts, so no two rooms
can disagree about it. The two functions beside it are pure (zone and boundary passed in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DEFAULT_DAY_BOUNDARY = time(4, 0)
"""When a chat day starts, unless the config says otherwise (``memory.day_boundary``)."""


def chat_day(moment: datetime, *, zone: ZoneInfo, boundary: time = DEFAULT_DAY_BOUNDARY) -> date:
    """Return the chat day ``moment`` belongs to.

    Defined through :func:`chat_day_bounds`, so a moment always lies inside the bounds of
    its own day, also around a DST change.
    """
    if moment.utcoffset() is None:
        msg = f"chat_day needs a timezone-aware datetime, got naive {moment.isoformat()}"
        raise ValueError(msg)
    day = moment.astimezone(zone).date()
    # At most one step each way, unless a DST gap pushes a late boundary past midnight.
    while moment < _day_start(day, zone, boundary):
        day -= timedelta(days=1)
    while moment >= _day_start(day + timedelta(days=1), zone, boundary):
        day += timedelta(days=1)
    return day


def chat_day_bounds(
    day: date, *, zone: ZoneInfo, boundary: time = DEFAULT_DAY_BOUNDARY
) -> tuple[datetime, datetime]:
    """Return the start (inclusive) and end (exclusive) of chat day ``day``, in UTC.

    Each end is the zone's wall clock at ``boundary`` on that date, so a day with a DST
    change lasts 23 or 25 hours. A boundary that falls in a DST gap is pushed forward by
    the gap (02:30 → 03:30); one that occurs twice is the first occurrence.
    """
    start = _day_start(day, zone, boundary)
    end = _day_start(day + timedelta(days=1), zone, boundary)
    return start.astimezone(UTC), end.astimezone(UTC)


def _day_start(day: date, zone: ZoneInfo, boundary: time) -> datetime:
    if boundary.tzinfo is not None:
        msg = f"the day boundary is a wall-clock time without a zone, got {boundary}"
        raise ValueError(msg)
    # fold=0: in a gap, the offset from before the change pushes the time forward by the
    # gap; in an overlap, the first of the two occurrences.
    return datetime.combine(day, boundary.replace(fold=0), tzinfo=zone)


@dataclass(frozen=True, slots=True)
class ChatDays:
    """The chat days of one bot: its zone, its day boundary and its clock."""

    zone: ZoneInfo
    boundary: time
    now: Callable[[], datetime]

    def day_of(self, moment: datetime) -> date:
        """Return the chat day ``moment`` belongs to."""
        return chat_day(moment, zone=self.zone, boundary=self.boundary)

    def bounds(self, day: date) -> tuple[datetime, datetime]:
        """Return the start (inclusive) and end (exclusive) of ``day``, in UTC."""
        return chat_day_bounds(day, zone=self.zone, boundary=self.boundary)

    def today(self) -> date:
        """Return the chat day it is now."""
        return self.day_of(self.now())

    def start_of_today(self) -> datetime:
        """Return when today's chat day began, in UTC."""
        return self.bounds(self.today())[0]

    def next_boundary(self) -> datetime:
        """Return when the next chat day begins, in UTC."""
        return self.bounds(self.today())[1]
