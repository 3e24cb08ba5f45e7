"""How well keyword recall finds what a question is about: hits and precision, not time.

``python -m bench.recall_quality`` pushes summaries through the real ``SqliteStore`` (so
they are cut and indexed as the nightly job does) and asks questions through
``search_summaries`` with ``limit`` = 3, the default ``memory.recall_hits``; each question
is judged against the summaries a person would want back. Two corpora:

- **written**: three chats as a bot would summarise them (a private chat in Chinese, a
  group mixing Chinese and English, a private chat in English), 39 summaries, and 76
  questions asked the way people ask ("团子最近怎么样了", "iPhone电池", "flight to
  Berlin"): one- and two-character questions, names, mixed Chinese and English, words
  inside longer words ("猫" is not "熊猫", "上海" is not "海上"), and things no summary
  holds, which should bring nothing back;
- **generated**: 20 chats × 60 summaries of ``bench.dataset``'s pool, each asked about
  its topics in a few phrasings; a summary is relevant when its keywords hold the topic.

Per question with relevant summaries: **hit** (one of them came back), **precision** (of
what came back, the share that is relevant; a question that brought nothing scores 0),
**recall** (the relevant ones that came back, out of at most ``limit``), and the
reciprocal rank of the first relevant one. Per question about nothing held: whether
anything came back (**false recalls**, lower is better). Figures are per kind of question.
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bench.dataset import TOPICS, summary_pool
from bot.memory.stack import render_summary
from bot.models import ChatKey, ChatKind, DaySummary
from storage.sqlite import SqliteStore

LIMIT = 3  # memory.recall_hits' default: what one recall brings back at most
FIRST_DAY = date(2026, 1, 1)


@dataclass(frozen=True, slots=True)
class Question:
    """A question asked in a chat and the summaries (1-based, in push order) it is about."""

    text: str
    relevant: frozenset[int]


def _s(summary: str, keywords: str, topics: str = "", key_points: str = "") -> DaySummary:
    """Return a day summary; the lists are written ``|``-separated."""

    def split(joined: str) -> tuple[str, ...]:
        return tuple(part for part in joined.split("|") if part)

    return DaySummary(summary, split(topics), split(key_points), split(keywords))


def _q(text: str, *relevant: int) -> Question:
    return Question(text, frozenset(relevant))


# A private chat in Chinese: 小雨's winter.
XIAOYU = (
    _s(
        "小雨说她家的猫咪团子最近不爱吃饭，打算周六带去宠物医院检查。",
        "团子|猫咪|宠物医院",
        "猫|宠物医院",
        "团子食欲不好",
    ),
    _s(
        "小雨和同事去吃了海底捞火锅，排队排了一个半小时，她觉得毛肚最好吃。",
        "海底捞|火锅|毛肚",
        "火锅|聚餐",
    ),
    _s(
        "小雨在准备日语N2考试，每天背五十个单词，最担心听力部分。",
        "日语N2|听力|背单词",
        "日语|考试",
    ),
    _s(
        "小雨去动物园看了熊猫，拍了很多照片，说熊猫吃竹子的样子特别可爱。",
        "熊猫|动物园|竹子",
        "动物园",
    ),
    _s("小雨抱怨今天气温骤降，上班路上冻得发抖，想买一件新的羽绒服。", "羽绒服|降温", "降温|购物"),
    _s("小雨订好了春节回成都的高铁票，二等座，腊月二十八出发。", "成都|高铁票|春节", "春节|回家"),
    _s(
        "小雨的电脑蓝屏了，重装了Windows，数据没丢；她最近在学Python写爬虫。",
        "蓝屏|Windows|Python|爬虫",
        "电脑|编程",
    ),
    _s(
        "团子的检查结果出来了，是肠胃炎，医生开了益生菌，要连吃一周。",
        "团子|肠胃炎|益生菌",
        "猫|看病",
        "团子吃益生菌一周",
    ),
    _s(
        "小雨和男朋友阿杰吵架了，因为阿杰忘了她的生日，后来阿杰送花道歉。", "阿杰|生日|吵架", "感情"
    ),
    _s("小雨看了电影《流浪地球3》，觉得特效很震撼，但剧情一般。", "流浪地球3|特效", "电影"),
    _s(
        "小雨想三月去日本旅游，在查京都和大阪的酒店，签证材料还没准备好。",
        "日本|京都|大阪|签证",
        "旅行",
    ),
    _s("日语N2的成绩出来了，小雨考过了，听力拿了四十分。", "日语N2|成绩", "日语|考试"),
    _s("小雨开始健身了，办了一张游泳卡，每周去游三次。", "游泳|健身卡", "健身"),
    _s(
        "春节在成都老家和家人吃了年夜饭，包了饺子；表弟考上了北京大学。",
        "年夜饭|饺子|北京大学|表弟",
        "春节|家人",
    ),
    _s("小雨的日本签证办下来了，五年多次往返，机票也订好了。", "签证|机票|日本", "旅行"),
)
XIAOYU_QUESTIONS = (
    _q("团子最近怎么样了", 1, 8),
    _q("猫", 1, 8),
    _q("猫咪看病的结果呢", 1, 8),
    _q("那家火锅店排队多久来着", 2),
    _q("海底捞", 2),
    _q("毛肚", 2),
    _q("日语考试考过了吗", 3, 12),
    _q("N2", 3, 12),
    _q("熊猫", 4),
    _q("最近天气怎么样", 5),
    _q("羽绒服买了没", 5),
    _q("回成都的票订了吗", 6, 14),
    _q("高铁", 6),
    _q("春节", 6, 14),
    _q("python爬虫学得怎么样", 7),
    _q("电脑蓝屏", 7),
    _q("阿杰", 9),
    _q("生日那次吵架", 9),
    _q("流浪地球", 10),
    _q("上次看的那部电影", 10),
    _q("日本旅游的计划", 11, 15),
    _q("签证办下来了吗", 11, 15),
    _q("京都", 11),
    _q("游泳", 13),
    _q("健身", 13),
    _q("年夜饭吃了什么", 14),
    _q("表弟考上哪了", 14),
    _q("北京", 14),
    _q("大学", 14),
    _q("益生菌", 8),
    _q("宠物医院", 1, 8),
    _q("医院", 1, 8),
    _q(
        "量子力学",
    ),
    _q(
        "滑雪",
    ),
    _q(
        "你还记得吗",
    ),
)

# A group that mixes Chinese and English.
GROUP = (
    _s(
        "大家讨论原神新版本，老王抽到了新角色，Tom说这次卡池太坑。",
        "原神|抽卡|卡池|老王|Tom",
        "游戏",
    ),
    _s("群里约周五晚上打篮球，球场在学校体育馆，大刘负责带球。", "篮球|体育馆|大刘", "运动"),
    _s(
        "Tom shared his new mechanical keyboard with Cherry red switches; 老王说太吵了。",
        "mechanical keyboard|Cherry|Tom",
        "keyboards",
    ),
    _s(
        "大家聊iPhone 17的电池续航，Lily说比上一代好很多，老王还在用安卓。",
        "iPhone 17|电池|安卓|Lily",
        "手机",
    ),
    _s("周末群友去郊外营地露营，烤肉吃到很晚，晚上下雨帐篷漏水了。", "露营|烤肉|帐篷", "户外"),
    _s(
        "Lily asked for advice on her React project deadline; Tom suggested TypeScript.",
        "React|TypeScript|deadline|Lily",
        "programming",
    ),
    _s("老王说他的股票跌了，准备割肉，大家劝他别炒短线。", "股票|割肉|老王", "理财"),
    _s("群里讨论深圳的房价，大刘想在南山买房，首付还差二十万。", "深圳|房价|首付|大刘", "买房"),
    _s(
        "Tom's marathon training: a 30 km long run this weekend, aiming for sub-4 in Shanghai.",
        "marathon|long run|Tom",
        "running",
    ),
    _s(
        "大家一起看了欧冠决赛，皇马赢了，老王输了赌约要请大家吃烧烤。",
        "欧冠|皇马|烧烤|老王",
        "足球",
    ),
    _s("Lily的猫跑丢了，群友帮忙转发寻猫启事，晚上在楼下找到了。", "寻猫启事|猫|Lily", "宠物"),
    _s(
        "大刘分享了用ChatGPT写代码的技巧，大家讨论AI会不会取代程序员。",
        "ChatGPT|AI|程序员|大刘",
        "AI",
    ),
    _s("群里讨论上海迪士尼的门票价格，准备五一一起去。", "上海迪士尼|门票|五一", "旅行"),
    _s("老王在海上钓鱼，钓到一条大鲈鱼，在群里晒了照片。", "钓鱼|鲈鱼|老王", "钓鱼"),
)
GROUP_QUESTIONS = (
    _q("原神新角色", 1),
    _q("抽卡", 1),
    _q("打篮球", 2),
    _q("mechanical keyboard", 3),
    _q("键盘", 3),
    _q("iPhone电池", 4),
    _q("iphone 17", 4),
    _q("露营那次下雨", 5),
    _q("帐篷", 5),
    _q("React项目", 6),
    _q("deadline", 6),
    _q("股票", 7),
    _q("深圳房价", 8),
    _q("首付", 8),
    _q("marathon training", 9),
    _q("欧冠决赛", 10),
    _q("烧烤", 5, 10),
    _q("猫找到了吗", 11),
    _q("ChatGPT", 12),
    _q("AI会取代程序员吗", 12),
    _q("迪士尼门票", 13),
    _q("上海", 13),
    _q("钓鱼", 14),
    _q("Lily", 4, 6, 11),
    _q(
        "火锅",
    ),
    _q(
        "Python",
    ),
)

# A private chat in English, now and then a Chinese word.
ANNA = (
    _s(
        "We talked about the quarterly budget for the book club; Bob will send the spreadsheet.",
        "budget|spreadsheet|book club",
    ),
    _s(
        "Anna started learning the guitar and practises chords twenty minutes a day.",
        "guitar|chords",
    ),
    _s(
        "Anna's flight to Berlin was cancelled; she rebooked for Tuesday.",
        "flight|Berlin|cancelled",
    ),
    _s(
        "We talked about concert tickets for Coldplay; prices were high but Anna bought two.",
        "concert tickets|Coldplay",
    ),
    _s(
        "Anna went to the dentist for a filling; the next check-up is in six months.",
        "dentist|filling",
    ),
    _s(
        "Anna is moving apartments at the end of the month and needs boxes and a van.",
        "moving|apartment|van",
    ),
    _s(
        "Anna cooked 麻婆豆腐 for friends; it was too spicy for some of them.",
        "麻婆豆腐|cooking|spicy",
    ),
    _s("Anna's cat Mochi knocked a plant over and broke the pot.", "cat|Mochi|plant"),
    _s(
        "Anna's thesis on climate models is due in May; the deadline worries her.",
        "thesis|climate|deadline",
    ),
    _s("Anna ran her first 10K race in 58 minutes.", "10K|race|running"),
)
ANNA_QUESTIONS = (
    _q("budget", 1),
    _q("what about the spreadsheet?", 1),
    _q("guitar lessons", 2),
    _q("flight to Berlin", 3),
    _q("concert tickets", 4),
    _q("dentist", 5),
    _q("moving day", 6),
    _q("麻婆豆腐", 7),
    _q("豆腐", 7),
    _q("Anna做的麻婆豆腐辣不辣", 7),
    _q("cat", 8),
    _q("thesis deadline", 9),
    _q("race time", 10),
    _q("did Anna run a race?", 10),
    _q(
        "passport",
    ),
)

WRITTEN = {
    ChatKey("telegram", ChatKind.PRIVATE, "1"): (XIAOYU, XIAOYU_QUESTIONS),
    ChatKey("qq", ChatKind.GROUP, "2"): (GROUP, GROUP_QUESTIONS),
    ChatKey("telegram", ChatKind.PRIVATE, "3"): (ANNA, ANNA_QUESTIONS),
}

GENERATED_CHATS = 20
GENERATED_DAYS = 60
_ASK_ZH = ("{}", "你还记得{}吗", "上次聊的{}后来怎么样了", "{}的事情")
_ASK_EN = ("{}", "what about the {}?", "do you remember the {}")


@dataclass(slots=True)
class Tally:
    """The scores of one kind of question, summed."""

    asked: int = 0
    hits: int = 0
    precision: float = 0.0
    recall: float = 0.0
    reciprocal_rank: float = 0.0
    empty_asked: int = 0
    false_recalls: int = 0

    def add(self, found: Sequence[int], relevant: frozenset[int]) -> None:
        """Score one question's answer, ``found`` being summary numbers, best first."""
        if not relevant:
            self.empty_asked += 1
            self.false_recalls += bool(found)
            return
        good = [number in relevant for number in found]
        self.asked += 1
        self.hits += any(good)
        self.precision += sum(good) / len(found) if found else 0.0
        self.recall += sum(good) / min(LIMIT, len(relevant))
        self.reciprocal_rank += next((1 / rank for rank, g in enumerate(good, 1) if g), 0.0)

    def row(self, kind: str) -> str:
        """Return a Markdown table row of the averages."""
        n = max(self.asked, 1)
        empty = f"{self.false_recalls}/{self.empty_asked}" if self.empty_asked else "–"
        return (
            f"| {kind} | {self.asked} | {self.hits / n:.1%} | {self.precision / n:.1%} |"
            f" {self.recall / n:.1%} | {self.reciprocal_rank / n:.3f} | {empty} |"
        )


def kind_of(question: str) -> str:
    """Say what a question is made of: Chinese, English, both, or one or two Han characters."""
    han = sum("\u4e00" <= char <= "\u9fff" for char in question)
    latin = any(char.isascii() and char.isalnum() for char in question)
    if han and latin:
        return "mixed"
    if han:
        return "zh, 1–2 characters" if han <= 2 else "zh"
    return "en"


async def _push_all(store: SqliteStore, chat: ChatKey, summaries: Sequence[DaySummary]) -> None:
    for number, content in enumerate(summaries):
        day = FIRST_DAY + timedelta(days=number)
        await store.push_summary(
            chat,
            day,
            content,
            added_prompt=render_summary(day, content),
            full_prompt_before="",
            full_prompt_after="",
            message_count=10,
            now=datetime.now(UTC),
        )


async def _ask(store: SqliteStore, chat: ChatKey, question: str) -> list[int]:
    """Return the summary numbers (1-based, push order) a question brings back."""
    found = await store.search_summaries(chat, question, limit=LIMIT)
    return [(record.day - FIRST_DAY).days + 1 for record in found]


async def written(store: SqliteStore) -> dict[str, Tally]:
    """Score the written corpus's questions, per kind."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for chat, (summaries, questions) in WRITTEN.items():
        await _push_all(store, chat, summaries)
        for question in questions:
            found = await _ask(store, chat, question.text)
            tallies[kind_of(question.text)].add(found, question.relevant)
            tallies["all"].add(found, question.relevant)
    return tallies


async def generated(store: SqliteStore) -> dict[str, Tally]:
    """Score questions about the generated summaries' topics, per kind."""
    rng = random.Random(40)
    pool = summary_pool(rng, 400)
    tallies: dict[str, Tally] = defaultdict(Tally)
    for number in range(GENERATED_CHATS):
        chat = ChatKey("telegram", ChatKind.PRIVATE, str(10_000 + number))
        summaries = [rng.choice(pool).content for _ in range(GENERATED_DAYS)]
        await _push_all(store, chat, summaries)
        for topic in TOPICS:
            relevant = frozenset(
                n for n, content in enumerate(summaries, 1) if topic in content.keywords
            )
            ask = _ASK_EN if topic.isascii() else _ASK_ZH
            question = rng.choice(ask).format(topic)
            found = await _ask(store, chat, question)
            tallies[kind_of(question)].add(found, relevant)
            tallies["all"].add(found, relevant)
    return tallies


def table(title: str, tallies: dict[str, Tally]) -> str:
    """Return the tallies as a Markdown table."""
    head = (
        f"{title}\n\n| questions | with relevant summaries | hit | precision | recall | MRR"
        " | false recalls |\n|---|---|---|---|---|---|---|"
    )
    order = ("zh", "zh, 1–2 characters", "mixed", "en", "all")
    return "\n".join([head, *(tallies[kind].row(kind) for kind in order if kind in tallies)])


async def measure_quality() -> str:
    """Build both corpora in a fresh database and return their tables."""
    with tempfile.TemporaryDirectory() as workdir:
        async with await SqliteStore.open(Path(workdir) / "quality.sqlite3") as store:
            first = await written(store)
            second = await generated(store)
    return table("written corpus", first) + "\n\n" + table("generated corpus", second)


def main() -> int:
    """Print the quality tables."""
    print(asyncio.run(measure_quality()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
