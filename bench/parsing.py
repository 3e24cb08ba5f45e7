"""Parsing the LLM's answer: ``bot.replies.plan.parse_replies`` on replies models really give.

Each sample is parsed many times in a row; a call's time is the batch time divided by
the count, so the clock's resolution does not count. The samples cover the clean JSON
the contract asks for, fenced JSON, JSON after a reasoning block or a sentence of prose,
a group answer quoting two people, one reply near the 4,096-character limit, and JSON
with the usual slips (trailing commas, full-width quotes and colons), which is mended.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.report import Figure, at_most, spread_figures
from bench.stats import Spread
from bot.replies.plan import parse_replies

PARSE_TARGET_MS = 1.0


def _plan(*contents: str, delay: float = 2.0, **extra: str) -> str:
    replies = [
        {"content": content, "send_delay_seconds": 0 if index == 0 else delay, **extra}
        for index, content in enumerate(contents)
    ]
    return json.dumps({"replies": replies}, ensure_ascii=False)


SAMPLES = {
    "one": _plan("哈哈，我也刚看到"),
    "three": _plan("在的在的", "周末爬山好呀！", "几点出发？我得早点起"),
    "english": _plan("Oh nice, congrats!", "How did the interview go?", delay=3.5),
    "fenced": "```json\n" + _plan("好的", "那明天见～") + "\n```",
    "reasoning": "<think>他们在问周末的安排，我应该先确认时间。</think>\n"
    + _plan("周六还是周日？", "我周六下午有空"),
    "prose_before": "Sure! Here is my answer:\n" + _plan("没问题", "我记下了"),
    "group_quotes": json.dumps(
        {
            "replies": [
                {"content": "@小明 我觉得可以", "send_delay_seconds": 0, "reply_to": "8812"},
                {"content": "@阿杰 那家店在学校旁边", "send_delay_seconds": 3, "reply_to": "8815"},
            ]
        },
        ensure_ascii=False,
    ),
    "long": _plan("这是一段很长的回复。" * 400),
    "silent": '{"replies": []}',
    "mended": "{“replies”：[{“content”：“在的在的”，“send_delay_seconds”：0}，"
    '{"content": "周末爬山好呀！", "send_delay_seconds": 2,},],}',
}


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Time ``parse_replies`` on each sample; report the spread over all of them."""
    repeats, rounds = (20, 5) if quick else (200, 50)
    per_call: list[float] = []
    figures = []
    for name, text in SAMPLES.items():
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(repeats):
                parse_replies(text, finish_reason="stop", max_delay_s=10.0)
            samples.append((time.perf_counter() - started) / repeats)
        per_call += samples
        figures.append(Figure(f"parse.{name}", Spread.of(samples).p50 * 1e3, "ms"))
    return [
        *spread_figures(
            "parse.all", Spread.of(per_call).scaled(1e3), "ms", p99_target=at_most(PARSE_TARGET_MS)
        ),
        *figures,
    ]
