"""The regular expressions that find Chinese and English date expressions in text.

Two alternations of named groups, Chinese and English, each scanned once. At a given
position the first alternative that matches wins, so longer phrases come before their
prefixes (大前天 before 前天, 上周三 before 上周). Each scan starts with a lookahead for
the characters an expression can begin with, so ordinary text is skipped at about one
character test per position (100 kB in a few ms instead of ~100 ms). Text is
NFKC-normalised first (by :func:`bot.memory.dates.find_dates`), which turns full-width digits,
letters and punctuation into ASCII. Each named group has its handler in ``bot/memory/dates.py``.
"""

from __future__ import annotations

import re

CN_DIGITS = {
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

CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_CN_WEEK = "(?:周|星期|礼拜)"

EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_WEEKDAY = "(?:" + "|".join(EN_WEEKDAYS) + ")"
EN_MONTHS = {
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
EN_NUMBERS = {
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
    + "|".join(sorted(EN_NUMBERS, key=len, reverse=True))
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
    *EN_NUMBERS,
    *EN_WEEKDAYS,
    *EN_MONTHS,
    *("the", "day", "yesterday", "today", "tonight", "last", "this", "past", "previous"),
    *("couple", "on", "in", "during"),
)
_EN_START = (
    r"(?<![0-9])[0-9]+(?:st|nd|rd|th)?\s+[a-z]"
    f"|[{''.join(sorted({word[0] for word in _EN_FIRST_WORDS}))}]"
)


def _alternation(alternatives: dict[str, str]) -> str:
    return "|".join(f"(?P<{name}>{body})" for name, body in alternatives.items())


ZH_PATTERN = re.compile(f"(?={_ZH_START})(?:{_alternation(_ZH_ALTERNATIVES)})")
EN_PATTERN = re.compile(f"{_A}(?={_EN_START})(?:{_alternation(_EN_ALTERNATIVES)})", re.IGNORECASE)
