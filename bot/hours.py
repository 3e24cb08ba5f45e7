"""Windows of local time, written ``HH:MM-HH:MM``: when openers may come
(``initiative.hours``), when a group hears no unaddressed reply (``groups.quiet_hours``).

A window is read as minutes of the local day, ``(start, end)``; its end may be ``24:00``,
and a window whose end comes before its start runs past midnight.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

DAY_MINUTES: Final = 24 * 60
_WINDOW_RE: Final = re.compile(r"(\d{2}):(\d{2})-(\d{2}):(\d{2})")

Window = tuple[int, int]
"""A window of the local day, in minutes: (start, end)."""


def window_minutes(value: str) -> Window | None:
    """Read ``HH:MM-HH:MM`` as minutes of the day; ``None`` if it is no window."""
    match = _WINDOW_RE.fullmatch(value)
    if match is None:
        return None
    start_h, start_m, end_h, end_m = (int(part) for part in match.groups())
    start, end = start_h * 60 + start_m, end_h * 60 + end_m
    if start_m > 59 or end_m > 59 or start >= DAY_MINUTES or end > DAY_MINUTES or start == end:
        return None
    return start, end


def minute_of_day(local: datetime) -> float:
    """Return how far into its day a local moment is, in minutes."""
    return local.hour * 60 + local.minute + local.second / 60


def in_window(moment: datetime, *, window: Window, zone: ZoneInfo) -> bool:
    """Tell whether ``moment`` falls in the local ``window``."""
    start, end = window
    minute = minute_of_day(moment.astimezone(zone))
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end  # it runs past midnight
