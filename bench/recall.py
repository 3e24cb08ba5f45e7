"""Recall over a year of memory: 365 summaries × 1,000 chats beside 1M stored messages.

The dataset is built once per ``python -m bench`` invocation (its build time is a figure)
and shared by the runs. Each run opens it with the real ``SqliteStore`` and asks
``Memory.recall`` questions of random chats, one after another:

- **date**: questions naming days ("昨天…", "上周三…", "last Friday", "3天前", an ISO date):
  the date parser, then the summaries of those days;
- **keyword**: questions about a topic ("那家火锅店", "concert tickets", a word no summary
  holds): the question cut into pairs of characters, then FTS5 ranked by bm25, with the substring
  fallback when a term is short or matches nothing;
- **hybrid**: the same keyword questions with semantic recall on: keyword hits
  fused with the chat's nearest summary vectors, plus the nearest facts. Every summary has
  a random unit vector of ``VECTOR_DIMS`` dimensions, written through the real back-fill;
  the question's vector comes from :class:`RandomEmbedder` at once, because the
  embeddings request is the provider's time (bounded by ``llm.timeout_s``) and is not
  what the target counts.

The persona a batch builds from the same stack (``Memory.persona``: every live summary of
the chat, newest kept within budget) is timed too, since it reads the whole stack.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.dataset import ChatHistory, build, chat_keys
from bench.report import Figure, at_most, spread_figures
from bench.rig import NoLLM
from bench.stats import Spread
from bot.config.model import parse_config
from bot.config.settings import Settings
from bot.memory.semantic import SemanticMemory
from bot.memory.stack import Memory
from bot.models import ChatKey
from storage.sqlite import SqliteStore

RECALL_P99_TARGET_MS = 20.0
HYBRID_P99_TARGET_MS = 30.0  # docs/targets.md: with vectors, not counting the embeddings request
VECTOR_DIMS = 1536  # text-embedding-3-small


class RandomEmbedder:
    """An embeddings model that answers at once with random vectors (no request is made)."""

    model = "bench-random"

    def __init__(self, *, dims: int, seed: int) -> None:
        self._dims = dims
        self._rng = np.random.default_rng(seed)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._rng.standard_normal((len(texts), self._dims)).tolist()
        return vectors


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int
    days: int
    messages_per_chat: int
    queries: int


FULL = Scale(chats=1000, days=365, messages_per_chat=1000, queries=2000)
QUICK = Scale(chats=20, days=62, messages_per_chat=100, queries=40)  # covers "last month"

DATE_QUESTIONS = (
    "昨天我们聊了什么",
    "前天发生了什么？",
    "上周三我们聊了什么",
    "what did we talk about last Friday?",
    "3天前说的那个事",
    "上个月15号那天怎么了",
    "last weekend, what happened?",
    "两周前的周六我们在聊啥",
)
KEYWORD_QUESTIONS = (
    "你还记得那家火锅店吗",
    "爬山的事情后来怎么样了",
    "我们说过的露营计划",
    "do you remember the concert tickets?",
    "论文写完没",
    "猫",
    "签证办下来了吗",
    "量子力学考试",  # no summary holds these words: FTS finds nothing, the substring scan runs
)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Time date, keyword and hybrid recall and the persona over a year of summaries."""
    scale = QUICK if quick else FULL
    path = workdir / f"recall-{scale.chats}x{scale.days}.sqlite3"
    figures = []
    if not path.exists():  # the first run builds; later runs of the same invocation reuse it
        histories = [
            ChatHistory(
                chat, days=scale.days, messages=scale.messages_per_chat, summaries=scale.days
            )
            for chat in chat_keys(scale.chats)
        ]
        built = await build(path, histories, now=datetime.now(UTC))
        figures += [
            Figure("recall.build.seconds", built.seconds, "s"),
            Figure("recall.build.messages", built.messages, "rows"),
            Figure("recall.build.summaries", built.summaries, "rows"),
        ]
    config = parse_config({}, base_dir=workdir)
    rng = random.Random(365)
    chats = chat_keys(scale.chats)
    async with await SqliteStore.open(path) as store:
        settings = Settings(config, persona="你是小满。")
        memory = Memory(settings, store, NoLLM(), now=lambda: datetime.now(UTC))
        dates = await _time_recall(
            memory, rng, chats, DATE_QUESTIONS, scale.queries, expect="dates"
        )
        keywords = await _time_recall(
            memory, rng, chats, KEYWORD_QUESTIONS, scale.queries, expect=None
        )
        embedder = RandomEmbedder(dims=VECTOR_DIMS, seed=365)
        memory.semantic = SemanticMemory(
            store, embedder, timeout_s=45.0, now=lambda: datetime.now(UTC)
        )
        started = time.perf_counter()
        embedded = await memory.embed_pending()  # 0 when an earlier run embedded them
        embedding_s = time.perf_counter() - started
        hybrid = await _time_recall(
            memory, rng, chats, KEYWORD_QUESTIONS, scale.queries, expect="hybrid"
        )
        personas = []
        for _ in range(scale.queries // 4):
            started = time.perf_counter()
            await memory.persona(rng.choice(chats))
            personas.append(time.perf_counter() - started)
    figures += [
        *spread_figures(
            "recall.date",
            dates.scaled(1000),
            "ms",
            p99_target=at_most(RECALL_P99_TARGET_MS),
            limit_prefix="limits.roundtrip",
        ),
        *spread_figures(
            "recall.keyword",
            keywords.scaled(1000),
            "ms",
            p99_target=at_most(RECALL_P99_TARGET_MS),
            limit_prefix="limits.roundtrip",
        ),
        *spread_figures(
            "recall.hybrid",
            hybrid.scaled(1000),
            "ms",
            p99_target=at_most(HYBRID_P99_TARGET_MS),
            limit_prefix="limits.roundtrip",
        ),
        *spread_figures("recall.persona", Spread.of(personas).scaled(1000), "ms"),
    ]
    if embedded:
        figures.append(Figure("recall.vectors.build.seconds", embedding_s, "s"))
    return figures


async def _time_recall(
    memory: Memory,
    rng: random.Random,
    chats: list[ChatKey],
    questions: tuple[str, ...],
    count: int,
    *,
    expect: str | None,
) -> Spread:
    samples = []
    found = 0
    for _ in range(count):
        chat = rng.choice(chats)
        question = rng.choice(questions)
        started = time.perf_counter()
        recalled = await memory.recall(chat, [question])
        samples.append(time.perf_counter() - started)
        found += bool(recalled.records)
        if expect is not None and recalled.how != expect:
            msg = f"{question!r} was recalled by {recalled.how}, not by {expect}"
            raise AssertionError(msg)
    if not found:
        msg = "recall found nothing at all: the dataset or the questions are wrong"
        raise AssertionError(msg)
    return Spread.of(samples)
