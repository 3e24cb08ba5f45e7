"""Fill a pacebot database fast: chats with messages, day summaries and waiting messages.

The schema comes from the real migrations (``SqliteStore.open``); the rows go in with
``executemany`` on a plain ``sqlite3`` connection in a worker thread, one transaction per
table, so a million messages take seconds rather than the hours single-row commits
would. Summary texts are drawn from a pool whose search words are cut once with the real
``storage.search.index_text``, so the knowledge index holds what the bot would write.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.days import chat_day, chat_day_bounds
from bot.memory.stack import render_summary
from bot.models import ChatKey, ChatKind, DaySummary
from storage import search
from storage.sqlite import SqliteStore

ZONE = ZoneInfo("Asia/Shanghai")  # the default bot.timezone
_FTS_TRIGGER = "knowledge_index_ai"

CHAT_LINES = (
    "在吗",
    "今天好累啊",
    "刚下班，地铁上人好多",
    "周末要不要去爬山？",
    "我想想，",
    "那家火锅店排队排了一个小时",
    "哈哈哈哈哈",
    "你看了昨天那部电影没",
    "猫又把杯子打翻了😂",
    "明天面试，有点紧张",
    "ok",
    "晚上吃什么好呢",
    "老板又让加班",
    "what do you think about the new phone?",
    "I'm so tired today, the meeting ran for three hours",
    "下雨了，忘带伞",
    "考试终于考完了！！",
    "你还记得上次说的那家咖啡店吗",
    "我们下周三去看演唱会吧",
    "好的好的",
    "等等，我查一下",
    "刚跑完五公里，腿要断了",
    "这个周末搬家，东西好多",
    "有没有好看的剧推荐",
)

GROUP_CHATTER = (
    "哈哈哈哈",
    "真的假的",
    "我也觉得",
    "笑死",
    "今天好热",
    "刚吃完饭",
    "好困啊",
    "收到",
    "+1",
    "晚点再说",
    "ok",
    "这个可以",
    "老板又让加班",
    "下雨了，忘带伞",
    "刚跑完五公里",
    "这个周末搬家",
)
"""What a busy group says most of the time: no question, nothing the bot cares about."""

TOPICS = (
    "火锅",
    "爬山",
    "电影",
    "考试",
    "加班",
    "猫",
    "旅行",
    "演唱会",
    "生日",
    "面试",
    "搬家",
    "健身",
    "咖啡店",
    "游戏",
    "论文",
    "装修",
    "钓鱼",
    "篮球",
    "露营",
    "高铁票",
    "签证",
    "牙医",
    "奶茶",
    "追剧",
    "跑步",
    "吉他",
    "烧烤",
    "marathon",
    "concert tickets",
    "python",
    "deadline",
    "birthday party",
)
_NAMES = ("小明", "阿杰", "Lily", "老王", "小雨", "Tom", "阿花", "大刘")
_MOODS = ("很开心", "有点沮丧", "特别兴奋", "累得不行", "挺期待的", "有点担心")
_PLANS = ("周末再约", "下个月出发", "先存钱", "找朋友一起", "明天就去办", "等天气好了再说")


@dataclass(frozen=True, slots=True)
class ChatHistory:
    """What one chat holds: ``days`` of past messages, summaries, messages still waiting."""

    chat: ChatKey
    days: int  # chat days with messages, ending with the current one
    messages: int  # answered messages (chatters' and the bot's), spread over the days
    summaries: int = 0  # summaries of the newest finished days, pushed oldest first
    waiting: int = 0  # the newest chatter messages, not yet in any batch


@dataclass(frozen=True, slots=True)
class Built:
    """How big the database came out and how long it took."""

    messages: int
    summaries: int
    seconds: float


def chat_keys(count: int, *, platform: str = "telegram", group_every: int = 5) -> list[ChatKey]:
    """Return ``count`` chat keys; every ``group_every``-th one is a group."""
    keys = []
    for index in range(count):
        if group_every and index % group_every == group_every - 1:
            keys.append(ChatKey(platform, ChatKind.GROUP, str(-1_000_000_000_000 - index)))
        else:
            keys.append(ChatKey(platform, ChatKind.PRIVATE, str(100_000_000 + index)))
    return keys


@dataclass(frozen=True, slots=True)
class PooledSummary:
    """A day summary with what its index row holds, worked out once for many rows."""

    content: DaySummary
    search_text: str
    topics: str  # JSON lists, as the knowledge index stores them
    key_points: str
    keywords: str


def summary_pool(rng: random.Random, size: int) -> list[PooledSummary]:
    """Return ``size`` day summaries, each with its words cut for the index."""
    pool = []
    for _ in range(size):
        a, b = rng.sample(_NAMES, 2)
        t1, t2, t3, t4 = rng.sample(TOPICS, 4)
        summary = (
            f"{a}和{b}聊了{t1}和{t2}。{a}说{t1}的事情让他{rng.choice(_MOODS)}，"
            f"打算{rng.choice(_PLANS)}。{b}提到最近在忙{t3}，顺便问了{t4}的情况。"
            f"两个人约好{rng.choice(_PLANS)}，{a}答应到时候提醒大家。"
            f"最后{b}分享了一张照片，大家都笑了。"
        )
        content = DaySummary(
            summary=summary,
            topics=(t1, t2, t3),
            key_points=(f"{a}打算{rng.choice(_PLANS)}", f"{b}在忙{t3}"),
            keywords=(t1, t2, t3, t4, a, b),
        )
        parts = [content.summary, *content.topics, *content.key_points, *content.keywords]
        pool.append(
            PooledSummary(
                content,
                search.index_text(parts),
                json.dumps(list(content.topics), ensure_ascii=False),
                json.dumps(list(content.key_points), ensure_ascii=False),
                json.dumps(list(content.keywords), ensure_ascii=False),
            )
        )
    return pool


async def build(
    path: Path,
    histories: Sequence[ChatHistory],
    *,
    now: datetime,
    seed: int = 6,
) -> Built:
    """Create the database at ``path`` (migrated) and fill it with ``histories``."""
    started = time.perf_counter()
    store = await SqliteStore.open(path)  # the real schema, and jieba warmed up
    await store.close()
    messages, summaries = await asyncio.to_thread(_fill, path, histories, now=now, seed=seed)
    return Built(messages, summaries, time.perf_counter() - started)


def _fill(
    path: Path,
    histories: Sequence[ChatHistory],
    *,
    now: datetime,
    seed: int,
) -> tuple[int, int]:
    rng = random.Random(seed)
    summaries = sum(h.summaries for h in histories)
    # As many distinct texts as the index would see, up to 2,000 (jieba takes ~0.3 ms each).
    pool = summary_pool(rng, min(2000, summaries)) if summaries else []
    today = chat_day(now, zone=ZONE)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = OFF")  # a benchmark fixture: speed over safety
        db.execute("PRAGMA cache_size = -262144")  # 256 MB while building
        db.execute("BEGIN")
        batch_ids = {}
        for history in histories:
            cursor = db.execute(
                "INSERT INTO batches (chat_key, state, created_at, finished_at)"
                " VALUES (?, 'answered', ?, ?)",
                (str(history.chat), now.timestamp(), now.timestamp()),
            )
            batch_ids[history.chat] = cursor.lastrowid
        db.executemany(
            "INSERT INTO messages (chat_key, message_id, sender_id, sender_name, text,"
            " sent_at, received_at, from_bot, addresses_bot, reply_to_id, batch_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
            _message_rows(rng, histories, batch_ids, now=now, today=today),
        )
        db.execute("COMMIT")
        db.execute("BEGIN")
        history_rows = list(_summary_rows(rng, histories, pool, now=now, today=today))
        db.executemany(
            "INSERT INTO prompt_history (id, chat_key, summary_date, added_prompt,"
            " full_prompt_before, full_prompt_after, created_at)"
            " VALUES (?, ?, ?, ?, '', '', ?)",
            [row[:5] for row in history_rows],
        )
        # The FTS trigger fires row by row (22 s for 365k rows here); one 'rebuild' of
        # the external-content index afterwards gives the same index in 3 s.
        (trigger,) = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (_FTS_TRIGGER,)
        ).fetchone()
        db.execute(f"DROP TRIGGER {_FTS_TRIGGER}")
        db.executemany(
            "INSERT INTO knowledge_index (prompt_history_id, chat_key, summary_date, summary,"
            " topics, key_points, keywords, message_count, search_text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(row[0], row[1], row[2], *row[5:]) for row in history_rows],
        )
        db.execute("INSERT INTO knowledge_fts (knowledge_fts) VALUES ('rebuild')")
        db.execute(trigger)
        db.execute("COMMIT")
        db.execute("PRAGMA optimize")
        (count,) = db.execute("SELECT count(*) FROM messages").fetchone()
    finally:
        db.close()
    return int(count), len(history_rows)


def _message_rows(
    rng: random.Random,
    histories: Sequence[ChatHistory],
    batch_ids: dict[ChatKey, int | None],
    *,
    now: datetime,
    today: date,
) -> Iterator[tuple[object, ...]]:
    newest = now - timedelta(minutes=1)
    bounds: dict[date, tuple[float, float]] = {}
    for history in histories:
        key = str(history.chat)
        first_day = today - timedelta(days=history.days - 1)
        per_day = max(1, -(-history.messages // max(1, history.days)))
        number = 0
        for index in range(history.messages):
            day = first_day + timedelta(days=index // per_day)
            if day not in bounds:
                start, end = chat_day_bounds(day, zone=ZONE)
                bounds[day] = (start.timestamp(), min(end, newest).timestamp())
            start_s, end_s = bounds[day]
            # Spread the day's messages over its waking hours, in order.
            offset = (index % per_day + 1) / (per_day + 1)
            sent_at_s = start_s + (end_s - start_s) * (0.3 + 0.7 * offset)
            from_bot = index % 2 == 1
            number += 1
            yield (
                key,
                str(number),
                "bot" if from_bot else "7",
                "小满" if from_bot else rng.choice(_NAMES),
                rng.choice(CHAT_LINES),
                sent_at_s,
                sent_at_s,
                int(from_bot),
                0,
                batch_ids[history.chat],
            )
        for index in range(history.waiting):
            number += 1
            sent_at = newest + timedelta(milliseconds=index)
            yield (
                key,
                str(number),
                "7",
                rng.choice(_NAMES),
                rng.choice(CHAT_LINES),
                sent_at.timestamp(),
                sent_at.timestamp(),
                0,
                int(not history.chat.is_group),
                None,
            )


def _summary_rows(
    rng: random.Random,
    histories: Sequence[ChatHistory],
    pool: Sequence[PooledSummary],
    *,
    now: datetime,
    today: date,
) -> Iterator[tuple[object, ...]]:
    row_id = 0
    created_at = now.timestamp()
    for history in histories:
        key = str(history.chat)
        per_day = max(1, history.messages // max(1, history.days))
        for back in range(history.summaries, 0, -1):
            day = today - timedelta(days=back)
            pooled = rng.choice(pool)
            row_id += 1
            yield (
                row_id,
                key,
                day.isoformat(),
                render_summary(day, pooled.content),
                created_at,
                pooled.content.summary,
                pooled.topics,
                pooled.key_points,
                pooled.keywords,
                per_day,
                pooled.search_text,
            )
