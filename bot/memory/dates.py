"""Read the date words in a question as the chat days they mean.

Everything here is pure: "today" is passed in, so recall costs no LLM call and the same
question always finds the same days. (What a chat day is: :mod:`bot.days`.)

:func:`find_dates` reads Chinese and English date expressions anywhere in free text and
returns the inclusive ranges of chat days they refer to, relative to ``today`` (the
current chat day, from :meth:`bot.days.ChatDays.today`). The choices, where a phrase is ambiguous:

- Weeks run Monday to Sunday. 上周 / last week is the whole previous Monday–Sunday week;
  这周 / 本周 / this week is Monday of this week through today.
- 上周三 is Wednesday of the previous calendar week. English "last Friday" and a bare
  weekday (周三, 星期三, 礼拜三, "Friday", "on Friday") mean the most recent such day
  strictly before today: asked on a Friday, "Friday" is a week ago, because today would be
  "today". 这周三 / this Wednesday is this week's Wednesday, if it is not in the future.
- 上周末 / last weekend is Saturday–Sunday of the previous week; 这周末 / this weekend is
  this week's, up to today. A bare 周末 / "the weekend" is no match: it is as often a
  plan ("周末去哪玩") as a memory.
- 上个月 / last month is the whole previous calendar month; 这个月 / this month runs from
  the 1st through today; 三月 / "in March" is the most recent March that has begun.
- M月D日, "March 5", "5 March" without a year: this year, or the year before if that
  date is still ahead. D号 / "on the 5th" alone: the most recent such day of a month.
- 最近N天 / 近N天 / 过去N天 / "the last N days" / "past N days" are N days ending today,
  at most :data:`MAX_RANGE_DAYS`; N天前 / "N days ago" is one day, at most
  :data:`MAX_DAYS_AGO` back.
- Vague words (几天前, 最近几天, "a few days ago", "recently") and a number without a
  direction ("3天") are no match, and so is an invalid date (2026-02-30, 13月). Days in
  the future are cut off; a range wholly in the future is no match.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from bot.memory.date_patterns import (
    CN_DIGITS,
    CN_WEEKDAYS,
    EN_MONTHS,
    EN_NUMBERS,
    EN_PATTERN,
    EN_WEEKDAYS,
    ZH_PATTERN,
)

MAX_RANGE_DAYS = 366
"""The longest range a rolling window ("最近1000天") can ask for; longer keeps the newest."""

MAX_DAYS_AGO = 3660
"""How far back "N天前" / "N days ago" may reach (about ten years); further is no match."""

MAX_EXPRESSIONS = 64
"""How many date expressions one text is read for; the rest of a huge paste is skipped."""


@dataclass(frozen=True, slots=True)
class DateRange:
    """An inclusive range of chat days, ``first`` through ``last``."""

    first: date
    last: date

    def __post_init__(self) -> None:
        if self.first > self.last:
            msg = f"DateRange first {self.first} is after last {self.last}"
            raise ValueError(msg)

    @classmethod
    def single(cls, day: date) -> DateRange:
        """Return the range holding only ``day``."""
        return cls(day, day)

    def days(self) -> tuple[date, ...]:
        """Return every day of the range, oldest first."""
        return tuple(self.first + timedelta(days=i) for i in range(len(self)))

    def __len__(self) -> int:
        return (self.last - self.first).days + 1

    def __iter__(self) -> Iterator[date]:
        return iter(self.days())


def find_dates(text: str, *, today: date) -> list[DateRange]:
    """Return the chat-day ranges that the date expressions in ``text`` refer to.

    Ranges come in the order their expressions appear, each once; none reaches past
    ``today``. A text without a recognised date expression gives an empty list.
    """
    normalised = unicodedata.normalize("NFKC", text)
    found: list[DateRange] = []
    end = 0
    for count, match in enumerate(_matches(normalised)):
        if count == MAX_EXPRESSIONS:
            break
        if match.start() < end:  # overlaps a match already taken
            continue
        end = match.end()
        kind = match.lastgroup
        if kind is None:  # pragma: no cover - every alternative is a named group
            continue
        try:
            span = _HANDLERS[kind](match, today)
        except (ValueError, OverflowError):  # an impossible date is simply not a date
            continue
        clamped = _clamp(span, today)
        if clamped is not None and clamped not in found:
            found.append(clamped)
    return found


def _matches(text: str) -> Iterator[re.Match[str]]:
    """Yield the Chinese and the English matches in ``text``, by position."""
    return heapq.merge(
        ZH_PATTERN.finditer(text), EN_PATTERN.finditer(text), key=lambda m: m.start()
    )


def referred_days(text: str, *, today: date) -> tuple[date, ...]:
    """Return every chat day that ``text`` refers to, oldest first, at most the newest
    :data:`MAX_RANGE_DAYS` of them."""
    days = {day for span in find_dates(text, today=today) for day in span.days()}
    return tuple(sorted(days)[-MAX_RANGE_DAYS:])


# --- arithmetic -----------------------------------------------------------------------


def _number(text: str) -> int:
    """Read an ASCII, Chinese or English number ("15", "十五", "二〇二六", "two")."""
    text = text.strip().lower()
    if text.isascii() and text.isdigit():
        return int(text)
    if text in EN_NUMBERS:
        return EN_NUMBERS[text]
    if "couple" in text:
        return 2
    if all(ch in CN_DIGITS for ch in text):  # 二〇二六: digit by digit
        return int("".join(str(CN_DIGITS[ch]) for ch in text))
    total = current = 0
    for ch in text:
        if ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            current = CN_DIGITS[ch]
    return total + current


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_start(day: date, months_back: int = 0) -> date:
    index = day.year * 12 + day.month - 1 - months_back
    return date(index // 12, index % 12 + 1, 1)


def _month_range(first: date) -> DateRange:
    return DateRange(first, _month_start(first, -1) - timedelta(days=1))


def _latest_on_or_before(today: date, month: int, day: int) -> date:
    """Return the latest valid ``month``/``day`` on or before today (Feb 29 looks back)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            if month == 2 and day == 29:
                continue
            raise
        if candidate <= today:
            return candidate
    msg = f"no {month}-{day} within eight years before {today}"
    raise ValueError(msg)


def _latest_day_of_month(today: date, day: int) -> date:
    """Return the latest date on or before today whose day of the month is ``day``."""
    if not 1 <= day <= 31:
        msg = f"no day {day} in any month"
        raise ValueError(msg)
    for back in range(3):
        first = _month_start(today, back)
        try:
            candidate = first.replace(day=day)
        except ValueError:
            continue
        if candidate <= today:
            return candidate
    msg = f"no day {day} in the months before {today}"  # pragma: no cover - 31 is 3 back
    raise ValueError(msg)


def _most_recent_weekday(today: date, weekday: int) -> date:
    """Return the latest day with ``weekday`` strictly before today."""
    return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)


def _rolling(today: date, count: int, unit: str) -> DateRange:
    """Return the ``count`` days, weeks or months ending today."""
    if count < 1:
        msg = "a window of no days"
        raise ValueError(msg)
    unit = unit.lower()
    if unit.startswith("month") or unit == "月":
        months = min(count, MAX_RANGE_DAYS // 28)
        first = _shift_months(today, -months) + timedelta(days=1)
        return DateRange(max(first, today - timedelta(days=MAX_RANGE_DAYS - 1)), today)
    days = count * 7 if unit.startswith("week") or unit in {"周", "星期", "礼拜"} else count
    return DateRange(today - timedelta(days=min(days, MAX_RANGE_DAYS) - 1), today)


def _ago(today: date, count: int, unit: str) -> DateRange:
    unit = unit.lower()
    days = count * 7 if unit.startswith("week") or unit in {"周", "星期", "礼拜"} else count
    if days > MAX_DAYS_AGO:
        msg = f"{days} days ago is further back than {MAX_DAYS_AGO}"
        raise ValueError(msg)
    return DateRange.single(today - timedelta(days=days))


def _shift_months(day: date, months: int) -> date:
    first = _month_start(day, -months)
    last = _month_range(first).last
    return first.replace(day=min(day.day, last.day))


def _clamp(span: DateRange | None, today: date) -> DateRange | None:
    if span is None or span.first > today:
        return None
    return DateRange(span.first, min(span.last, today))


def _day_or_month(year: int, month: int, day: str | None) -> DateRange:
    if day is None:
        return _month_range(date(year, month, 1))
    return DateRange.single(date(year, month, _number(day)))


# --- one handler per alternative ------------------------------------------------------

_Handler = Callable[[re.Match[str], date], DateRange | None]


def _iso(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"])))


def _cn_ymd(m: re.Match[str], today: date) -> DateRange:
    return _day_or_month(_number(m["ymd_y"]), _number(m["ymd_m"]), m["ymd_d"])


def _cn_rel_year(m: re.Match[str], today: date) -> DateRange:
    year = today.year - {"今年": 0, "去年": 1, "前年": 2}[m["ry"]]
    return _day_or_month(year, _number(m["ry_m"]), m["ry_d"])


def _cn_rel_month(m: re.Match[str], today: date) -> DateRange:
    word = m["rm"]
    first = _month_start(today, word.count("上"))
    if m["rm_d"] is None:
        return _month_range(first)
    return DateRange.single(first.replace(day=_number(m["rm_d"])))


def _cn_ago(m: re.Match[str], today: date) -> DateRange:
    return _ago(today, _number(m["ago_n"]), m["ago_u"])


def _cn_recent(m: re.Match[str], today: date) -> DateRange:
    return _rolling(today, _number(m["rc_n"]), m["rc_u"])


def _cn_md(m: re.Match[str], today: date) -> DateRange:
    month = _number(m["md_m"])
    if m["md_d"] is None:
        start = _latest_on_or_before(today, month, 1)
        return _month_range(start)
    return DateRange.single(_latest_on_or_before(today, month, _number(m["md_d"])))


def _cn_dom(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(
        _latest_day_of_month(today, _number(m["dom_a"] or m["dom_c"] or m["dom_u"]))
    )


_CN_DAYS_BACK = {
    "今天": 0,
    "今日": 0,
    "今晚": 0,
    "今早": 0,
    "昨天": 1,
    "昨日": 1,
    "昨晚": 1,
    "昨儿": 1,
    "前天": 2,
    "大前天": 3,
}


def _cn_day(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(today - timedelta(days=_CN_DAYS_BACK[m["cd"]]))


def _week_part(monday: date, weekday: int | None, weekend: bool) -> DateRange:
    if weekend:
        return DateRange(monday + timedelta(days=5), monday + timedelta(days=6))
    if weekday is None:
        return DateRange(monday, monday + timedelta(days=6))
    return DateRange.single(monday + timedelta(days=weekday))


def _cn_week(m: re.Match[str], today: date) -> DateRange:
    weeks_back = m["wk"].count("上")
    monday = _week_start(today) - timedelta(days=7 * weeks_back)
    weekday = CN_WEEKDAYS[m["wk_d"]] if m["wk_d"] else None
    return _week_part(monday, weekday, weekend=m["wk_end"] is not None)


def _cn_weekday(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(_most_recent_weekday(today, CN_WEEKDAYS[m["bw_d"]]))


def _en_day(m: re.Match[str], today: date) -> DateRange:
    phrase = " ".join(m["ed"].lower().split())
    if phrase.endswith("before yesterday"):
        back = 2
    elif phrase in {"yesterday", "last night"}:
        back = 1
    else:
        back = 0
    return DateRange.single(today - timedelta(days=back))


def _en_ago(m: re.Match[str], today: date) -> DateRange:
    return _ago(today, _number(m["ea_n"]), m["ea_u"])


def _en_recent(m: re.Match[str], today: date) -> DateRange:
    return _rolling(today, _number(m["er_n"]), m["er_u"])


def _en_past(m: re.Match[str], today: date) -> DateRange:
    return _rolling(today, 1, m["ep_u"])


def _en_rel(m: re.Match[str], today: date) -> DateRange:
    last = m["rel_word"].lower() != "this"
    if m["en_wd"]:
        weekday = EN_WEEKDAYS.index(m["en_wd"].lower())
        if last:
            return DateRange.single(_most_recent_weekday(today, weekday))
        return _week_part(_week_start(today), weekday, weekend=False)
    unit = m["en_unit"].lower()
    if unit == "month":
        return _month_range(_month_start(today, 1 if last else 0))
    monday = _week_start(today) - timedelta(days=7 if last else 0)
    return _week_part(monday, None, weekend=unit == "weekend")


def _en_date(month: str, day: str, year: str | None, today: date) -> DateRange:
    month_number = EN_MONTHS[month.lower()[:3]]
    if year is not None:
        return DateRange.single(date(int(year), month_number, int(day)))
    return DateRange.single(_latest_on_or_before(today, month_number, int(day)))


def _en_md(m: re.Match[str], today: date) -> DateRange:
    return _en_date(m["emd_m"], m["emd_d"], m["emd_y"], today)


def _en_dm(m: re.Match[str], today: date) -> DateRange:
    return _en_date(m["edm_m"], m["edm_d"], m["edm_y"], today)


def _en_dom(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(_latest_day_of_month(today, int(m["eod"])))


def _en_month(m: re.Match[str], today: date) -> DateRange:
    month = EN_MONTHS[m["em_m"].lower()[:3]]
    if m["em_y"] is not None:
        return _month_range(date(int(m["em_y"]), month, 1))
    return _month_range(_latest_on_or_before(today, month, 1))


def _en_weekday(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(_most_recent_weekday(today, EN_WEEKDAYS.index(m["ew"].lower())))


_HANDLERS: dict[str, _Handler] = {
    "iso": _iso,
    "cn_ymd": _cn_ymd,
    "cn_rel_year": _cn_rel_year,
    "cn_rel_month": _cn_rel_month,
    "cn_ago": _cn_ago,
    "cn_recent": _cn_recent,
    "cn_md": _cn_md,
    "cn_dom": _cn_dom,
    "cn_day": _cn_day,
    "cn_week": _cn_week,
    "cn_weekday": _cn_weekday,
    "en_day": _en_day,
    "en_ago": _en_ago,
    "en_recent": _en_recent,
    "en_past": _en_past,
    "en_rel": _en_rel,
    "en_md": _en_md,
    "en_dm": _en_dm,
    "en_dom": _en_dom,
    "en_month": _en_month,
    "en_weekday": _en_weekday,
}
