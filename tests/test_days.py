"""The chat day: where one begins and ends, and which one it is now."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.days import ChatDays, chat_day, chat_day_bounds

SHANGHAI = ZoneInfo("Asia/Shanghai")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
SANTIAGO = ZoneInfo("America/Santiago")  # changes clocks at midnight
FOUR = time(4, 0)


def d(month: int, day: int, year: int = 2026) -> date:
    return date(year, month, day)


def local(zone: ZoneInfo, year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    """Return the wall-clock reading on ``year-month-day hour:minute`` in ``zone``."""
    return datetime(year, month, day, hour, minute, tzinfo=zone)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (local(SHANGHAI, 2026, 11, 23, 2, 0), d(11, 22)),  # 02:00 belongs to the day before
        (local(SHANGHAI, 2026, 11, 23, 3, 59) + timedelta(seconds=59.999999), d(11, 22)),
        (local(SHANGHAI, 2026, 11, 23, 4, 0), d(11, 23)),  # exactly the boundary: new day
        (local(SHANGHAI, 2026, 11, 23, 23, 59), d(11, 23)),
        (local(SHANGHAI, 2026, 11, 23, 0, 0), d(11, 22)),
        (datetime(2026, 11, 22, 19, 59, tzinfo=UTC), d(11, 22)),  # 03:59 in Shanghai
        (datetime(2026, 11, 22, 20, 0, tzinfo=UTC), d(11, 23)),  # 04:00 in Shanghai
    ],
)
def test_chat_day_at_the_boundary(moment: datetime, expected: date) -> None:
    """A moment before 04:00 local belongs to the previous chat day, from 04:00 to the new."""
    assert chat_day(moment, zone=SHANGHAI, boundary=FOUR) == expected


def test_chat_day_default_boundary_is_four() -> None:
    """Without a boundary, chat days start at 04:00."""
    assert [chat_day(local(SHANGHAI, 2026, 11, 23, h, 0), zone=SHANGHAI) for h in (3, 4)] == [
        d(11, 22),
        d(11, 23),
    ]


def test_chat_day_with_midnight_boundary_is_the_calendar_day() -> None:
    """A 00:00 boundary makes the chat day the local calendar day."""
    assert chat_day(local(SHANGHAI, 2026, 11, 23, 0, 30), zone=SHANGHAI, boundary=time(0)) == (
        d(11, 23)
    )


def test_chat_day_rejects_naive_datetimes() -> None:
    """A naive datetime has no place on the clock, so chat_day refuses it."""
    with pytest.raises(ValueError, match="naive"):
        chat_day(datetime(2026, 11, 23, 2, 0), zone=SHANGHAI)  # noqa: DTZ001


@pytest.mark.parametrize(
    ("zone", "day", "expected_start", "expected_hours"),
    [
        (SHANGHAI, d(11, 22), datetime(2026, 11, 21, 20, 0, tzinfo=UTC), 24),
        (BERLIN, d(3, 28), datetime(2026, 3, 28, 3, 0, tzinfo=UTC), 23),  # clocks go forward
        (BERLIN, d(3, 29), datetime(2026, 3, 29, 2, 0, tzinfo=UTC), 24),
        (BERLIN, d(10, 24), datetime(2026, 10, 24, 2, 0, tzinfo=UTC), 25),  # clocks go back
        (NEW_YORK, d(3, 7), datetime(2026, 3, 7, 9, 0, tzinfo=UTC), 23),
        (NEW_YORK, d(10, 31), datetime(2026, 10, 31, 8, 0, tzinfo=UTC), 25),
    ],
)
def test_chat_day_bounds_follow_the_wall_clock(
    zone: ZoneInfo, day: date, expected_start: datetime, expected_hours: int
) -> None:
    """A chat day runs between 04:00 wall-clock times, so DST days last 23 or 25 hours."""
    start, end = chat_day_bounds(day, zone=zone, boundary=FOUR)
    assert (start, end - start, start.tzinfo) == (
        expected_start,
        timedelta(hours=expected_hours),
        UTC,
    )


# Every clock change of 2026 in the zones tested here, in UTC.
CLOCK_CHANGES_2026 = [
    datetime(2026, 3, 8, 7, 0, tzinfo=UTC),  # New York forward
    datetime(2026, 3, 29, 1, 0, tzinfo=UTC),  # Berlin forward
    datetime(2026, 4, 5, 3, 0, tzinfo=UTC),  # Santiago back, at midnight
    datetime(2026, 9, 6, 4, 0, tzinfo=UTC),  # Santiago forward, at midnight
    datetime(2026, 10, 25, 1, 0, tzinfo=UTC),  # Berlin back
    datetime(2026, 11, 1, 6, 0, tzinfo=UTC),  # New York back
]


def test_the_clock_changes_listed_are_all_of_2026() -> None:
    """The list of 2026 clock changes holds every change the zones' tz data has that year."""
    changes = []
    hour = datetime(2026, 1, 1, tzinfo=UTC)
    while hour.year == 2026:
        after = hour + timedelta(hours=1)
        for zone in (BERLIN, NEW_YORK, SHANGHAI, SANTIAGO):
            if hour.astimezone(zone).utcoffset() != after.astimezone(zone).utcoffset():
                changes.append(after)
        hour = after
    assert changes == CLOCK_CHANGES_2026


@pytest.mark.parametrize("zone", [BERLIN, NEW_YORK, SHANGHAI, SANTIAGO])
@pytest.mark.parametrize("boundary", [time(0, 0), time(2, 30), time(4, 0), time(23, 30)])
def test_every_moment_lies_within_its_chat_day(zone: ZoneInfo, boundary: time) -> None:
    """Around every DST change of 2026, each moment falls inside the bounds of its chat day."""
    outside = []
    for change in CLOCK_CHANGES_2026:
        start = change - timedelta(days=3)
        for step in range(6 * 24 * 4):  # three days either side, in quarter hours
            moment = start + timedelta(minutes=15 * step)
            first, end = chat_day_bounds(
                chat_day(moment, zone=zone, boundary=boundary), zone=zone, boundary=boundary
            )
            if not first <= moment < end:
                outside.append(moment)
    assert outside == []


def test_boundary_in_a_dst_gap_is_pushed_forward() -> None:
    """A 02:30 boundary on the night Berlin skips 02:00–03:00 starts the day at 03:30 CEST."""
    start, _ = chat_day_bounds(d(3, 29), zone=BERLIN, boundary=time(2, 30))
    assert start == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def test_chat_days_say_today_and_where_it_starts_and_ends_on_their_clock() -> None:
    """At 02:00 on 23 November today is still chat day 22 November, which began at 04:00
    on the 22nd and ends at 04:00 on the 23rd; at 04:00 the new day has begun."""
    moments = [local(SHANGHAI, 2026, 11, 23, 2, 0)]
    days = ChatDays(SHANGHAI, FOUR, lambda: moments[-1])
    before = (days.today(), days.start_of_today(), days.next_boundary())
    moments.append(local(SHANGHAI, 2026, 11, 23, 4, 0))
    after = (days.today(), days.start_of_today(), days.next_boundary())
    assert (before, after) == (
        (
            d(11, 22),
            datetime(2026, 11, 21, 20, 0, tzinfo=UTC),
            datetime(2026, 11, 22, 20, 0, tzinfo=UTC),
        ),
        (
            d(11, 23),
            datetime(2026, 11, 22, 20, 0, tzinfo=UTC),
            datetime(2026, 11, 23, 20, 0, tzinfo=UTC),
        ),
    )


def test_the_next_boundary_after_a_short_day_is_23_hours_on() -> None:
    """On the night Berlin's clocks go forward, the chat day that began at 04:00 CET ends
    23 hours later, at 04:00 CEST."""
    days = ChatDays(BERLIN, FOUR, lambda: datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    assert days.next_boundary() - days.start_of_today() == timedelta(hours=23)
