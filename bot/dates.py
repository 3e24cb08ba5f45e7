"""Map moments to chat days, and date words in a question to the chat days they mean.

Everything here is pure: the zone, the day boundary and "today" are passed in, so recall
costs no LLM call and the same question always finds the same days.

A **chat day** runs from ``boundary`` (default 04:00) to the same wall-clock time the next
day, in the chat's zone: a message at 02:00 on 22 November belongs to chat day 21 November.

:func:`find_dates` reads Chinese and English date expressions anywhere in free text and
returns the inclusive ranges of chat days they refer to, relative to ``today`` (the
current chat day, from :func:`chat_day`). The choices, where a phrase is ambiguous:

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
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DEFAULT_DAY_BOUNDARY = time(4, 0)
"""When a chat day starts, unless the config says otherwise (``memory.day_boundary``)."""

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
        _ZH_PATTERN.finditer(text), _EN_PATTERN.finditer(text), key=lambda m: m.start()
    )


def referred_days(text: str, *, today: date) -> tuple[date, ...]:
    """Return every chat day that ``text`` refers to, oldest first, at most the newest
    :data:`MAX_RANGE_DAYS` of them."""
    days = {day for span in find_dates(text, today=today) for day in span.days()}
    return tuple(sorted(days)[-MAX_RANGE_DAYS:])


# --- the pattern ----------------------------------------------------------------------
#
# Two alternations of named groups, Chinese and English, each scanned once. At a given
# position the first alternative that matches wins, so longer phrases come before their
# prefixes (大前天 before 前天, 上周三 before 上周). Each scan starts with a lookahead for
# the characters an expression can begin with, so ordinary text is skipped at about one
# character test per position (100 kB in a few ms instead of ~100 ms). Text is
# NFKC-normalised first, which turns full-width digits, letters and punctuation into ASCII.

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_NUM = "[零〇一二两三四五六七八九十百]+"
_NUM = rf"(?:(?<![0-9])[0-9]{{1,6}}(?![0-9])|{_CN_NUM})"
_DAY_NUM = r"(?:(?<![0-9])[0-9]{1,2}(?![0-9])|[一二三四五六七八九十]{1,3})"

_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_CN_WEEK = "(?:周|星期|礼拜)"

_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_WEEKDAY = "(?:" + "|".join(_EN_WEEKDAYS) + ")"
_EN_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_EN_MONTH = (
    "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    "|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_EN_MONTH_FULL = (
    "(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
_EN_NUM = (
    r"(?:(?<![0-9])[0-9]{1,6}(?![0-9])|(?:a\s+)?couple(?:\s+of)?|"
    + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True))
    + ")"
)
_A = "(?<![a-z])"  # English word start: \b fails next to CJK, which counts as a letter
_Z = "(?![a-z])"  # English word end
_ORD = "(?:st|nd|rd|th)?"

_ZH_ALTERNATIVES: dict[str, str] = {
    # 2026-03-05, 2026/3/5, 2026.3.5
    "iso": r"(?<![0-9])(?P<iso_y>[0-9]{4})\s*(?P<iso_sep>[-/.])\s*(?P<iso_m>[0-9]{1,2})"
    r"\s*(?P=iso_sep)\s*(?P<iso_d>[0-9]{1,2})(?![0-9])",
    # 2026年3月5日, 二〇二六年三月五号, 2026年3月
    "cn_ymd": r"(?P<ymd_y>(?<![0-9])[0-9]{4}|[零〇一二三四五六七八九]{4})\s*年\s*"
    rf"(?P<ymd_m>{_NUM})\s*月份?\s*(?:(?P<ymd_d>{_DAY_NUM})\s*[日号])?",
    # 去年3月5日, 今年三月
    "cn_rel_year": rf"(?P<ry>去年|前年|今年)\s*(?P<ry_m>{_NUM})\s*月份?"
    rf"\s*(?:(?P<ry_d>{_DAY_NUM})\s*[日号])?",
    # 上个月, 上个月5号, 上上个月, 这个月, 本月3日
    "cn_rel_month": r"(?P<rm>上上个?月|上个?月|这个?月|本月)份?\s*的?"
    rf"\s*(?:(?P<rm_d>{_DAY_NUM})\s*[日号])?",
    # 3天前, 三天之前, 两个星期前, 1周前
    "cn_ago": rf"(?P<ago_n>{_NUM})\s*个?\s*(?P<ago_u>天|日|周|星期|礼拜)\s*[之以]?前",
    # 最近7天, 近三天, 过去两周, 最近一个月
    "cn_recent": rf"(?:最近|近|过去的?)\s*(?P<rc_n>{_NUM})\s*个?\s*"
    r"(?P<rc_u>天|日|周|星期|礼拜|月)",
    # 3月5日, 三月五号, 3月 — but not 3个月
    "cn_md": rf"(?<![0-9个几第])(?P<md_m>{_NUM})\s*月份?\s*(?:(?P<md_d>{_DAY_NUM})\s*[日号])?",
    # 5号, 5日, 十五号, 二十一日 — not 5号线 / 3号楼, and not the 一日 of 一日三餐
    "cn_dom": r"(?<![0-9第几零〇一二两三四五六七八九十百])(?:(?P<dom_a>[0-9]{1,2})\s*[日号]"
    r"|(?P<dom_c>[一二三]?十[一二三四五六七八九]?)[日号]|(?P<dom_u>[一二三四五六七八九])号)"
    r"(?![线楼机位门房床桌车厅馆店窗台院球手码内后])",
    # 大前天, 前天 (not the 前天 in 以前天气), 昨天, 今天
    "cn_day": r"(?P<cd>大前天|(?<![以之从提目眼面跟门空生事向])前天"
    r"|昨天|昨日|昨晚|昨儿|今天|今日|今晚|今早)",
    # 上周, 上周三, 上上周, 这周, 本周五, 上周末, 上个礼拜天
    "cn_week": rf"(?P<wk>上上上|上上|上一?|这|本)个?{_CN_WEEK}"
    r"(?:(?P<wk_d>[一二三四五六日天])|(?P<wk_end>末))?",
    # 周三, 星期天 — not 下周三, 每周三, 一周一次
    "cn_weekday": rf"(?<![上下这本每个那几0-9一二两三四五六七八九十]){_CN_WEEK}"
    r"(?P<bw_d>[一二三四五六日天])",
}

_EN_ALTERNATIVES: dict[str, str] = {
    "en_day": rf"{_A}(?P<ed>(?:the\s+)?day\s+before\s+yesterday|yesterday|today|tonight"
    rf"|last\s+night|this\s+(?:morning|afternoon|evening)){_Z}",
    # 3 days ago, two weeks ago, a couple of days ago
    "en_ago": rf"{_A}(?P<ea_n>{_EN_NUM})\s+(?P<ea_u>days?|weeks?)\s+ago{_Z}",
    # the last 3 days, past two weeks, previous 30 days
    "en_recent": rf"{_A}(?:last|past|previous)\s+(?P<er_n>{_EN_NUM})\s+"
    rf"(?P<er_u>days?|weeks?|months?){_Z}",
    # the past week, past month (rolling)
    "en_past": rf"{_A}past\s+(?P<ep_u>week|month){_Z}",
    # last Friday, this week, last month, previous weekend
    "en_rel": rf"{_A}(?P<rel_word>last|previous|this)\s+"
    rf"(?:(?P<en_wd>{_EN_WEEKDAY})|(?P<en_unit>weekend|week|month)){_Z}",
    # March 5, Mar. 5th, March 5, 2026
    "en_md": rf"{_A}(?P<emd_m>{_EN_MONTH})\.?\s+(?P<emd_d>[0-9]{{1,2}}){_ORD}(?![0-9a-z:])"
    rf"(?:,?\s+(?P<emd_y>[0-9]{{4}})(?![0-9]))?",
    # 5 March, 5th of March 2026
    "en_dm": rf"(?<![0-9])(?P<edm_d>[0-9]{{1,2}}){_ORD}\s+(?:of\s+)?(?P<edm_m>{_EN_MONTH})"
    rf"\.?{_Z}(?:,?\s+(?P<edm_y>[0-9]{{4}})(?![0-9]))?",
    # on the 5th
    "en_dom": rf"{_A}on\s+the\s+(?P<eod>[0-9]{{1,2}})(?:st|nd|rd|th){_Z}",
    # in March, during March 2025 — not "in March 5"
    "en_month": rf"{_A}(?:in|during)\s+(?P<em_m>{_EN_MONTH_FULL}){_Z}"
    rf"(?:\s+(?P<em_y>[0-9]{{4}})(?![0-9]))?(?!\s*[0-9]{{1,2}}{_ORD}(?![0-9a-z]))",
    # Friday, on Wednesday — not next/every Friday, not "Fridays"
    "en_weekday": rf"{_A}(?<!next\s)(?<!every\s)(?<!coming\s)(?P<ew>{_EN_WEEKDAY}){_Z}",
}

# What a Chinese expression can start with; a superset of the alternatives' first chars.
_ZH_START = (
    r"(?<![0-9])[0-9]+\s*(?:[-/.]|个?\s*[天日周星礼月号年])"
    r"|[零〇一二两三四五六七八九十百]+\s*个?\s*[天日周星礼月号年]"
    r"|今[天日晚早年]|昨|大前天|前[天年]|上[上一个周星礼月]|这个?[周星礼月]|本[个周星礼月]"
    r"|最?近|过去|周|星期|礼拜|去年"
)
_EN_FIRST_WORDS = (
    *_EN_NUMBERS,
    *_EN_WEEKDAYS,
    *_EN_MONTHS,
    *("the", "day", "yesterday", "today", "tonight", "last", "this", "past", "previous"),
    *("couple", "on", "in", "during"),
)
_EN_START = (
    r"(?<![0-9])[0-9]+(?:st|nd|rd|th)?\s+[a-z]"
    f"|[{''.join(sorted({word[0] for word in _EN_FIRST_WORDS}))}]"
)


def _alternation(alternatives: dict[str, str]) -> str:
    return "|".join(f"(?P<{name}>{body})" for name, body in alternatives.items())


_ZH_PATTERN = re.compile(f"(?={_ZH_START})(?:{_alternation(_ZH_ALTERNATIVES)})")
_EN_PATTERN = re.compile(f"{_A}(?={_EN_START})(?:{_alternation(_EN_ALTERNATIVES)})", re.IGNORECASE)


# --- arithmetic -----------------------------------------------------------------------


def _number(text: str) -> int:
    """Read an ASCII, Chinese or English number ("15", "十五", "二〇二六", "two")."""
    text = text.strip().lower()
    if text.isascii() and text.isdigit():
        return int(text)
    if text in _EN_NUMBERS:
        return _EN_NUMBERS[text]
    if "couple" in text:
        return 2
    if all(ch in _CN_DIGITS for ch in text):  # 二〇二六: digit by digit
        return int("".join(str(_CN_DIGITS[ch]) for ch in text))
    total = current = 0
    for ch in text:
        if ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            current = _CN_DIGITS[ch]
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
    weekday = _CN_WEEKDAYS[m["wk_d"]] if m["wk_d"] else None
    return _week_part(monday, weekday, weekend=m["wk_end"] is not None)


def _cn_weekday(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(_most_recent_weekday(today, _CN_WEEKDAYS[m["bw_d"]]))


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
        weekday = _EN_WEEKDAYS.index(m["en_wd"].lower())
        if last:
            return DateRange.single(_most_recent_weekday(today, weekday))
        return _week_part(_week_start(today), weekday, weekend=False)
    unit = m["en_unit"].lower()
    if unit == "month":
        return _month_range(_month_start(today, 1 if last else 0))
    monday = _week_start(today) - timedelta(days=7 if last else 0)
    return _week_part(monday, None, weekend=unit == "weekend")


def _en_date(month: str, day: str, year: str | None, today: date) -> DateRange:
    month_number = _EN_MONTHS[month.lower()[:3]]
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
    month = _EN_MONTHS[m["em_m"].lower()[:3]]
    if m["em_y"] is not None:
        return _month_range(date(int(m["em_y"]), month, 1))
    return _month_range(_latest_on_or_before(today, month, 1))


def _en_weekday(m: re.Match[str], today: date) -> DateRange:
    return DateRange.single(_most_recent_weekday(today, _EN_WEEKDAYS.index(m["ew"].lower())))


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
