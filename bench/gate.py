"""The group gate: what deciding costs per unaddressed batch, and a peer's busy minute.

**Cost per batch.** The real :class:`~bot.gate.CallGate` (recall's word cut, the SQLite
store, no LLM at all) decides a busy group's unaddressed batches in ``smart`` mode with six
interests: 1–4 chat lines each, most with no reason to speak, some with a question or an
interest. The figure is the wall time of ``admit`` per batch, after the first use has
loaded the segmenter's dictionary; a batch with a reason also reads the group's hourly
budget and the bot's share from SQLite, so both kinds are shown apart.

**Three members, twenty messages in a minute, two @-mentions.** The scenario the issue
measured MaiBot 1.3.15 and AstrBot in, against the same fakes: through the real core
(``fakes.harness``: SQLite, the ``openai`` SDK against the fake LLM server, a recording
platform) with the default pacing scaled (1 s lasts 20 ms), in ``mention`` and ``smart``
mode. The figures are the LLM calls and the prompt tokens the fake reported.
"""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.dataset import CHAT_LINES, GROUP_CHATTER, TOPICS
from bench.report import Figure, at_most
from bench.rig import answer_afresh, fresh_path
from bench.stats import percentile
from bot.budget import Spending
from bot.company import Company
from bot.config.model import parse_config
from bot.config.settings import Settings
from bot.gate import CallGate
from bot.models import Batch, ChatKey, ChatKind, IncomingMessage, StoredMessage
from fakes.harness import harness
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore
from storage.words import RecallWords

GROUP = ChatKey("test", ChatKind.GROUP, "-700")
INTERESTS = list(TOPICS[:6])
GATE_TARGET_MS = 0.2
_ANSWER = [{"content": "在的", "send_delay_seconds": 0}]


def _batches(count: int, rng: random.Random) -> list[Batch]:
    """Make ``count`` unaddressed group batches of 1–4 lines, most of them idle chatter."""
    now = datetime.now(UTC)
    batches = []
    number = 0
    for batch_id in range(1, count + 1):
        messages = []
        for _ in range(rng.randint(1, 4)):
            number += 1
            pool = CHAT_LINES if rng.random() < 0.2 else GROUP_CHATTER
            messages.append(
                StoredMessage(
                    GROUP,
                    str(number),
                    str(rng.randrange(50)),
                    "成员",
                    rng.choice(pool),
                    now,
                    from_bot=False,
                )
            )
        batches.append(Batch(batch_id, GROUP, tuple(messages)))
    return batches


async def _gate_cost(workdir: Path, *, batches: int) -> list[Figure]:
    """Time ``admit`` over unaddressed batches; split by whether a reason was found."""
    path = fresh_path(workdir, "gate")
    config = parse_config(
        {"groups": {"reply_mode": "smart", "interests": INTERESTS, "talk_value": 0.3}},
        base_dir=path,
    )
    rng = random.Random(28)
    async with await SqliteStore.open(path / "pacebot.sqlite3") as store:
        now = lambda: datetime.now(UTC)  # noqa: E731 - the gate reads the wall clock
        settings = Settings(config)
        gate = CallGate(
            settings,
            store,
            RecallWords(),
            spending=Spending(settings, store, now=now),
            company=Company(zone=config.bot.zone),
            now=now,
            draw=rng.random,
        )
        warm, *timed = _batches(batches + 1, rng)
        await gate.admit(warm)  # loads the dictionary in a worker thread, once
        idle: list[float] = []
        reasoned: list[float] = []
        passed = 0
        for batch in timed:
            started = time.perf_counter()
            verdict = await gate.admit(batch)
            took_ms = (time.perf_counter() - started) * 1e3
            (idle if verdict.reasons == ("no reason",) else reasoned).append(took_ms)
            passed += verdict.go
    every = idle + reasoned
    mean = sum(every) / len(every)
    return [
        Figure(
            "gate.per_batch.mean",
            mean,
            "ms",
            at_most(GATE_TARGET_MS),
            note=f"{len(every)} unaddressed batches, {len(reasoned)} with a reason",
        ),
        Figure("gate.per_batch.p99", percentile(every, 0.99), "ms"),
        Figure("gate.no_reason.p50", percentile(idle, 0.5), "ms", note="no database read"),
        Figure("gate.with_reason.p50", percentile(reasoned, 0.5), "ms", note="two SQLite reads"),
        Figure("gate.let_through", passed / len(every), "fraction"),
    ]


def _minute(rng: random.Random) -> list[tuple[float, str, bool, str]]:
    """Three members write twenty messages in a minute; two of them @-mention the bot."""
    members = ("阿明", "小红", "大伟")
    lines = list(CHAT_LINES[:18])
    rng.shuffle(lines)
    minute: list[tuple[float, str, bool, str]] = []
    for index in range(20):
        asks = index in {6, 14}
        text = "@小满 你觉得呢？" if asks else lines[index % len(lines)]
        minute.append((index * 3.0, members[index % 3], asks, text))
    return minute


async def _peer_minute(workdir: Path, *, mode: str) -> tuple[int, int]:
    """Play the minute in ``mode``; return the LLM calls and the prompt tokens reported."""
    second_s = 0.02
    pacing = {
        "debounce_min_s": 5.0 * second_s,
        "debounce_max_s": 15.0 * second_s,
        "max_wait_s": 60.0 * second_s,
        "max_delay_s": 10.0 * second_s,
        "typing_chars_per_s": 1000.0,
    }
    loop = asyncio.get_running_loop()
    async with (
        FakeLLMServer() as llm,
        harness(
            fresh_path(workdir, f"minute-{mode}"),
            llm,
            pacing=pacing,
            groups={"reply_mode": mode},
            draw=random.Random(24).random,
        ) as bot,
    ):
        answer_afresh(llm, _ANSWER)
        start = loop.time()
        for number, (at_s, who, asks, text) in enumerate(_minute(random.Random(3))):
            await asyncio.sleep(max(0.0, start + at_s * second_s - loop.time()))
            await bot.inbox.receive_many(
                [
                    IncomingMessage(
                        GROUP,
                        f"m{number}",
                        who,
                        who,
                        text,
                        datetime.now(UTC) - timedelta(seconds=1),
                        addresses_bot=asks,
                    )
                ]
            )
        await bot.settle()
        prompt, _ = llm.reported_tokens()
        return len(llm.requests), prompt


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Time the gate per batch; play the peers' minute in mention and smart mode."""
    figures = await _gate_cost(workdir, batches=200 if quick else 5000)
    for mode in ("mention", "smart"):
        calls, prompt = await _peer_minute(workdir, mode=mode)
        figures += [
            Figure(f"gate.minute.{mode}.calls", float(calls), "calls"),
            Figure(f"gate.minute.{mode}.prompt_tokens", float(prompt), "tokens"),
        ]
    return figures
