"""The deterministic zh/en date parser used by recall."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.days import chat_day
from bot.memory.dates import (
    MAX_EXPRESSIONS,
    MAX_RANGE_DAYS,
    DateRange,
    find_dates,
    referred_days,
)

SHANGHAI = ZoneInfo("Asia/Shanghai")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
SANTIAGO = ZoneInfo("America/Santiago")  # changes clocks at midnight
FOUR = time(4, 0)

SUNDAY = date(2026, 11, 22)  # week Mon 16 – Sun 22; the week before: Mon 9 – Sun 15
WEDNESDAY = date(2026, 11, 18)


def d(month: int, day: int, year: int = 2026) -> date:
    return date(year, month, day)


def span(text: str, today: date) -> list[tuple[date, date]]:
    return [(r.first, r.last) for r in find_dates(text, today=today)]


# (question, expected (first, last)) with today = Sunday 2026-11-22
SUNDAY_TABLE: list[tuple[str, tuple[date, date]]] = [
    ("昨天发生了什么", (d(11, 21), d(11, 21))),
    ("前天我们聊了啥", (d(11, 20), d(11, 20))),
    ("大前天说的那家店叫什么", (d(11, 19), d(11, 19))),
    ("今天聊了什么", (d(11, 22), d(11, 22))),
    ("昨晚你说的电影是哪部", (d(11, 21), d(11, 21))),
    ("3天前你说了什么", (d(11, 19), d(11, 19))),
    ("三天前的事还记得吗", (d(11, 19), d(11, 19))),
    ("３天之前呢", (d(11, 19), d(11, 19))),
    ("两周前我们去哪了", (d(11, 8), d(11, 8))),
    ("上周我们聊了什么", (d(11, 9), d(11, 15))),
    ("上周三我们聊了什么", (d(11, 11), d(11, 11))),
    ("上个礼拜天呢", (d(11, 15), d(11, 15))),
    ("上星期五说了啥", (d(11, 13), d(11, 13))),
    ("上上周的事", (d(11, 2), d(11, 8))),
    ("上周末去哪了", (d(11, 14), d(11, 15))),
    ("这周都聊了些什么", (d(11, 16), d(11, 22))),
    ("本周三发生了什么", (d(11, 18), d(11, 18))),
    ("这周末干嘛了", (d(11, 21), d(11, 22))),
    ("周三我们聊了什么", (d(11, 18), d(11, 18))),
    ("星期天聊了什么", (d(11, 15), d(11, 15))),
    ("上个月我们聊了什么", (d(10, 1), d(10, 31))),
    ("上个月5号你说了什么", (d(10, 5), d(10, 5))),
    ("上月三十一号呢", (d(10, 31), d(10, 31))),
    ("这个月聊过什么", (d(11, 1), d(11, 22))),
    ("最近7天聊了什么", (d(11, 16), d(11, 22))),
    ("近三天发生了什么", (d(11, 20), d(11, 22))),
    ("过去两周的聊天", (d(11, 9), d(11, 22))),
    ("最近一个月说过什么", (d(10, 23), d(11, 22))),
    ("最近1000天的事", (d(11, 22, 2025), d(11, 22))),
    ("3月5日我们聊了什么", (d(3, 5), d(3, 5))),
    ("十二月五号发生了什么", (d(12, 5, 2025), d(12, 5, 2025))),
    ("11月21号呢", (d(11, 21), d(11, 21))),
    ("15号我们说了啥", (d(11, 15), d(11, 15))),
    ("二十一日那天", (d(11, 21), d(11, 21))),
    ("30号那天说了什么", (d(10, 30), d(10, 30))),
    ("2026-03-05 的记录", (d(3, 5), d(3, 5))),
    ("2026/3/5聊了啥", (d(3, 5), d(3, 5))),
    ("2025年12月31日跨年", (d(12, 31, 2025), d(12, 31, 2025))),
    ("２０２６年３月５日", (d(3, 5), d(3, 5))),
    ("二〇二六年三月五号", (d(3, 5), d(3, 5))),
    ("去年3月5日", (d(3, 5, 2025), d(3, 5, 2025))),
    ("三月份我们聊了什么", (d(3, 1), d(3, 31))),
    ("2月29日是哪年", (d(2, 29, 2024), d(2, 29, 2024))),
    ("what happened yesterday?", (d(11, 21), d(11, 21))),
    ("WHAT DID WE SAY YESTERDAY", (d(11, 21), d(11, 21))),
    ("我们yesterday聊了啥", (d(11, 21), d(11, 21))),
    ("What did we talk about the day before yesterday", (d(11, 20), d(11, 20))),
    ("what did we talk about last Friday", (d(11, 20), d(11, 20))),
    ("anything interesting last week?", (d(11, 9), d(11, 15))),
    ("what did we discuss 3 days ago", (d(11, 19), d(11, 19))),
    ("two days ago you said something", (d(11, 20), d(11, 20))),
    ("eleven days ago", (d(11, 11), d(11, 11))),
    ("a couple of days ago", (d(11, 20), d(11, 20))),
    ("a week ago we met", (d(11, 15), d(11, 15))),
    ("remind me what we said on March 5", (d(3, 5), d(3, 5))),
    ("on 5 March we talked", (d(3, 5), d(3, 5))),
    ("what was on Mar. 5th", (d(3, 5), d(3, 5))),
    ("the 5th of March, 2025", (d(3, 5, 2025), d(3, 5, 2025))),
    ("what did we talk about on December 24", (d(12, 24, 2025), d(12, 24, 2025))),
    ("what happened on the 15th", (d(11, 15), d(11, 15))),
    ("what did we say in March", (d(3, 1), d(3, 31))),
    ("this week so far", (d(11, 16), d(11, 22))),
    ("last month", (d(10, 1), d(10, 31))),
    ("over the last 3 days", (d(11, 20), d(11, 22))),
    ("the past two weeks", (d(11, 9), d(11, 22))),
    ("in the past week", (d(11, 16), d(11, 22))),
    ("last weekend was fun", (d(11, 14), d(11, 15))),
    ("On Wednesday you told me", (d(11, 18), d(11, 18))),
]


@pytest.mark.parametrize(("question", "expected"), SUNDAY_TABLE)
def test_sunday_table(question: str, expected: tuple[date, date]) -> None:
    """Each question asked on Sunday 2026-11-22 refers to exactly the expected chat days."""
    assert span(question, SUNDAY) == [expected]


# (question, expected (first, last)) with today = Wednesday 2026-11-18
WEDNESDAY_TABLE: list[tuple[str, tuple[date, date]]] = [
    ("周三聊了什么", (d(11, 11), d(11, 11))),
    ("上周三呢", (d(11, 11), d(11, 11))),
    ("what did we say last Wednesday", (d(11, 11), d(11, 11))),
    ("Wednesday", (d(11, 11), d(11, 11))),
    ("this Wednesday", (d(11, 18), d(11, 18))),
    ("本周三", (d(11, 18), d(11, 18))),
    ("last Friday", (d(11, 13), d(11, 13))),
    ("last Monday", (d(11, 16), d(11, 16))),
    ("周一说了啥", (d(11, 16), d(11, 16))),
    ("周四呢", (d(11, 12), d(11, 12))),
    ("这周", (d(11, 16), d(11, 18))),
    ("上周末", (d(11, 14), d(11, 15))),
    ("this week", (d(11, 16), d(11, 18))),
]


@pytest.mark.parametrize(("question", "expected"), WEDNESDAY_TABLE)
def test_wednesday_table(question: str, expected: tuple[date, date]) -> None:
    """Weekday words asked on Wednesday 2026-11-18 resolve by the documented week rules."""
    assert span(question, WEDNESDAY) == [expected]


NO_DATE = [
    "你好呀",
    "3天没见了",
    "周末去哪玩",
    "5号线坐到哪",
    "3号楼在哪里",
    "一日三餐要规律",
    "以前天气很好",
    "之前天天加班",
    "下周三见",
    "每周三开会",
    "一周一次就够了",
    "几天前的事",
    "最近几天怎么样",
    "明天呢",
    "两个月",
    "see you tomorrow",
    "see you next Friday",
    "on Fridays we play",
    "the marching band had 5 players",
    "I spent 3 days there",
    "it is 2026",
    "call me at 10:30",
]


@pytest.mark.parametrize("question", NO_DATE)
def test_question_without_a_date_matches_nothing(question: str) -> None:
    """A question with no (past) date expression gives no range, so recall falls back."""
    assert find_dates(question, today=SUNDAY) == []


INVALID_OR_FUTURE = [
    "2026-02-30",
    "2026-13-01",
    "13月的事",
    "2月30号",
    "2月30日那天",
    "四十一号",
    "2027-01-01",
    "99999天前",
    "本周五",  # asked on Wednesday: still ahead
    "this Friday",
    "这周末",
]


@pytest.mark.parametrize("question", INVALID_OR_FUTURE)
def test_invalid_or_future_date_is_no_match(question: str) -> None:
    """An impossible date or one wholly in the future is no match and raises nothing."""
    assert find_dates(question, today=WEDNESDAY) == []


def test_day_missing_from_last_month_is_no_match() -> None:
    """上个月31号 asked in December means 31 November, which does not exist."""
    assert find_dates("上个月31号", today=d(12, 10)) == []


def test_all_expressions_in_order_without_repeats() -> None:
    """Several expressions give several ranges in text order, each range once."""
    assert span("昨天和前天，也就是11月21号和11月20号，还有上周", SUNDAY) == [
        (d(11, 21), d(11, 21)),
        (d(11, 20), d(11, 20)),
        (d(11, 9), d(11, 15)),
    ]


def test_range_is_cut_at_today() -> None:
    """A month that has not ended stops at today instead of reaching into the future."""
    assert span("11月份", SUNDAY) == [(d(11, 1), d(11, 22))]


def test_referred_days_is_the_sorted_union() -> None:
    """referred_days merges all ranges into distinct days, oldest first."""
    assert referred_days("昨天 and the day before yesterday, 11-21 again: 昨天", today=SUNDAY) == (
        d(11, 20),
        d(11, 21),
    )


def test_referred_days_is_capped() -> None:
    """However many days the ranges cover together, only the newest MAX_RANGE_DAYS come back."""
    days = referred_days("最近9999天，还有2025年3月", today=SUNDAY)
    assert (len(days), days[0], days[-1]) == (MAX_RANGE_DAYS, d(11, 22, 2025), SUNDAY)


def test_only_the_first_expressions_are_read() -> None:
    """A text full of dates is read for its first MAX_EXPRESSIONS expressions only."""
    text = " ".join(f"{n}天前" for n in range(1, MAX_EXPRESSIONS + 10))
    found = find_dates(text, today=SUNDAY)
    assert (len(found), found[-1].first) == (
        MAX_EXPRESSIONS,
        SUNDAY - timedelta(days=MAX_EXPRESSIONS),
    )


def test_date_at_the_end_of_a_huge_text_is_found() -> None:
    """A 100 kB message is scanned whole, so a date at its very end is found."""
    text = "哈" * 50_000 + "blah " * 10_000 + "上周三呢"
    assert span(text, SUNDAY) == [(d(11, 11), d(11, 11))]


def test_date_range_days_and_length() -> None:
    """A DateRange lists its days inclusively and knows its length."""
    week = DateRange(d(11, 9), d(11, 15))
    assert (len(week), week.days()[0], week.days()[-1], list(week) == list(week.days())) == (
        7,
        d(11, 9),
        d(11, 15),
        True,
    )


def test_date_range_rejects_reversed_bounds() -> None:
    """A range whose first day is after its last day is refused."""
    with pytest.raises(ValueError, match="after"):
        DateRange(d(11, 15), d(11, 9))


# --- chat days ------------------------------------------------------------------------


def local(zone: ZoneInfo, year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    """Return the wall-clock reading on ``year-month-day hour:minute`` in ``zone``."""
    return datetime(year, month, day, hour, minute, tzinfo=zone)


def test_today_from_chat_day_then_yesterday() -> None:
    """Asked at 02:00 on Nov 23, 昨天 is Nov 21, because today is still chat day Nov 22."""
    today = chat_day(local(SHANGHAI, 2026, 11, 23, 2, 0), zone=SHANGHAI, boundary=FOUR)
    assert span("昨天说了啥", today) == [(d(11, 21), d(11, 21))]
