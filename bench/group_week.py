"""A week of a 50-person group at 1,000 messages a day, in ``mention``, ``smart`` and
``always`` mode: what the LLM is asked, and what it costs.

The same seeded week is played three times through the real core (``fakes.harness``:
SQLite, the pipeline, the ``openai`` SDK against the fake LLM server, a recording platform)
in simulated time: the wall clock the bot reads is set to each message's moment, and the
quiet wait is played out, not waited for (a fresh 5–15 s draw after each message, 60 s at
most, as ``[pacing]`` has it by default). Each day the group talks from 08:00 to midnight in
bursts; about 2 % of the messages address the bot, 8 % ask the room something, 4 % name one
of the bot's two ``interests``, the rest is chatter. ``[groups]`` keeps its defaults
(``talk_value`` 0.3, 6 unaddressed calls an hour, ``max_share`` 0.25) with the gate's draw
seeded.

Figures: LLM calls and tokens (the fake's ``usage``, as kept by the bot) per 1,000 group
messages, and in ``smart`` mode the most unaddressed calls in any 60 minutes, which must not
pass ``unaddressed_calls_per_hour``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.dataset import GROUP_CHATTER
from bench.report import Figure, at_most
from bench.rig import answer_afresh, fresh_path
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.clock import Clock
from fakes.harness import Harness, harness
from fakes.openai_api import FakeLLMServer

GROUP = ChatKey("test", ChatKind.GROUP, "-900")
MEMBERS = 50
FIRST_DAY = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)  # 08:00 in Asia/Shanghai, a Monday
AWAKE_S = 16 * 3600  # 08:00 to midnight
BUDGET_PER_HOUR = 6
_HOUR = timedelta(hours=1)
_QUESTIONS = (
    "有人知道{}吗？",
    "大家周末有空吗？",
    "有没有人推荐{}",
    "anyone tried {}?",
    "{}几点开始？",
)
_INTERESTS = ("原神", "猫")
_WORDS = ("火锅", "那家店", "新出的耳机", "考试", "电影", "地铁")
_SPEAK = "好像是这样"  # numbered by the call: a model's words change from answer to answer


@dataclass(frozen=True, slots=True)
class Line:
    """One message of the week: when, who, what, and whether it addresses the bot."""

    at: datetime
    sender: int
    text: str
    addressed: bool


def _text(rng: random.Random) -> tuple[str, bool]:
    roll = rng.random()
    if roll < 0.02:
        return f"@小满 {rng.choice(_WORDS)}怎么样", True
    if roll < 0.10:
        return rng.choice(_QUESTIONS).format(rng.choice(_WORDS)), False
    if roll < 0.14:
        return f"今天{rng.choice(_INTERESTS)}{rng.choice(('好可爱', '更新了', '又来了'))}", False
    return rng.choice(GROUP_CHATTER), False


def week(days: int, per_day: int, rng: random.Random) -> list[Line]:
    """Return the group's messages in order: bursts of 5–30 lines, 8 s apart on average."""
    lines: list[Line] = []
    for day in range(days):
        start = FIRST_DAY + timedelta(days=day)
        moments: list[float] = []
        while len(moments) < per_day:
            at = rng.uniform(0, AWAKE_S)
            for _ in range(rng.randint(5, 30)):
                if len(moments) == per_day or at >= AWAKE_S:
                    break
                moments.append(at)
                at += rng.expovariate(1 / 8.0)
        for at in sorted(moments):
            text, addressed = _text(rng)
            lines.append(
                Line(start + timedelta(seconds=at), rng.randrange(MEMBERS), text, addressed)
            )
    return lines


async def _play(
    bot: Harness, clock: Clock, lines: list[Line], rng: random.Random
) -> list[datetime]:
    """Play ``lines`` in simulated time; return when each unaddressed call was made."""
    unaddressed: list[datetime] = []
    seen: set[int] = set()
    first_waiting: datetime | None = None
    quiet_at: datetime | None = None
    for number, line in enumerate(lines):
        if quiet_at is not None and first_waiting is not None:
            fires_at = min(quiet_at, first_waiting + timedelta(seconds=60))
            if line.at >= fires_at:
                clock.jump_to(fires_at)
                await bot.settle()
                unaddressed += await _new_unaddressed_calls(bot, seen)
                first_waiting = None
        clock.jump_to(line.at)
        first_waiting = first_waiting or line.at
        quiet_at = line.at + timedelta(seconds=rng.uniform(5.0, 15.0))
        await bot.inbox.receive_many(
            [
                IncomingMessage(
                    GROUP,
                    f"m{number}",
                    str(line.sender),
                    f"成员{line.sender}",
                    line.text,
                    line.at,
                    addresses_bot=line.addressed,
                )
            ]
        )
    if quiet_at is not None:
        clock.jump_to(quiet_at)
    await bot.settle()
    return unaddressed + await _new_unaddressed_calls(bot, seen)


async def _new_unaddressed_calls(bot: Harness, seen: set[int]) -> list[datetime]:
    """Return when each batch traced since the last look made a call nobody asked for."""
    found = []
    for shown in await bot.ops.traces.recent(GROUP, count=20):
        trace = shown.trace
        if trace.batch_id in seen:
            continue
        seen.add(trace.batch_id)
        if trace.llm_calls and "addressed" not in trace.gate:
            found.append(trace.at)
    return found


def busiest_hour(calls: list[datetime]) -> int:
    """Return the most calls that fall in any 60 minutes."""
    ordered = sorted(calls)
    most = 0
    start = 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= _HOUR:
            start += 1
        most = max(most, end - start + 1)
    return most


async def _mode(workdir: Path, mode: str, lines: list[Line]) -> list[Figure]:
    """Play the week in ``mode``; return its calls and tokens per 1,000 messages."""
    clock = Clock(lines[0].at, running=False)
    rng = random.Random(7)
    groups: dict[str, Any] = {"reply_mode": mode, "interests": list(_INTERESTS)}
    # The quiet wait is played out by _play; the debounce timers never fire on their own.
    pacing = {"debounce_min_s": 3600.0, "debounce_max_s": 3600.0, "max_wait_s": 7200.0}
    async with FakeLLMServer() as llm:
        answer_afresh(llm, [{"content": _SPEAK, "send_delay_seconds": 0}])
        async with harness(
            fresh_path(workdir, f"week-{mode}"),
            llm,
            now=clock.now,
            draw=random.Random(28).random,
            groups=groups,
            pacing=pacing,
        ) as bot:
            unaddressed = await _play(bot, clock, lines, rng)
            report = await bot.ops.cost.report(days=len({line.at.date() for line in lines}) + 1)
    per = 1000 / len(lines)
    tokens = report.total.tokens
    figures = [
        Figure(f"groupweek.{mode}.calls_per_1000", tokens.calls * per, "calls"),
        Figure(f"groupweek.{mode}.tokens_per_1000", tokens.total * per, "tokens"),
        Figure(f"groupweek.{mode}.prompt_tokens_per_1000", tokens.prompt_tokens * per, "tokens"),
        Figure(f"groupweek.{mode}.llm_requests", float(len(llm.requests)), "calls"),
    ]
    if mode == "smart":
        figures += [
            Figure(
                "groupweek.smart.unaddressed.busiest_hour",
                float(busiest_hour(unaddressed)),
                "calls",
                at_most(BUDGET_PER_HOUR),
                note="unaddressed_calls_per_hour = 6",
            ),
            Figure("groupweek.smart.unaddressed.calls", float(len(unaddressed)), "calls"),
        ]
    return figures


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Play the same week (a day of 200 messages when quick) in each mode."""
    lines = week(1, 200, random.Random(50)) if quick else week(7, 1000, random.Random(50))
    figures = [Figure("groupweek.messages", float(len(lines)), "messages")]
    for mode in ("mention", "smart", "always"):
        figures += await _mode(workdir, mode, lines)
    return figures
