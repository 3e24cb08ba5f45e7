"""A busy group: how soon the one who asked is answered while everyone else keeps talking.

Fifty members in one group through the real core (``fakes.harness``: the inbox, the
pipeline, SQLite, the ``openai`` SDK against the fake LLM server, a recording platform).
The room says one message a second, each from one of 49 members; every 30 s one member
@-mentions the bot, and half the time adds a second line 3 s later. ``groups.reply_mode``
is the default ``mention`` and the pacing the default one (5–15 s debounce, 60 s max wait),
with every duration scaled (1 s lasts 20 ms in the full run) so a run takes seconds.

For each @ the figure is the time from the asker's last line to the LLM request that
answers it (real milliseconds; the debounce part of it is scaled), and the calls per @.
The target is ``debounce_max_s`` (scaled) + 50 ms: the wait follows the asker, not the
room. A first private message loads the SDK before the room starts talking, as a bot
that has answered anything already has.

The second room is small and lively: three members take turns, one message every 3 s,
and the asker goes on chatting with the others (messages 7 and 15 of every 18 are @s, by
two of them). There the figure is the time from the @ to the LLM request that answers
it: the target is ``groups.answer_within_s`` (20 s, scaled) + 50 ms, however the asker
goes on, with one call per @.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.report import Figure, at_most, exactly
from bench.rig import answer_afresh, fresh_path
from bench.stats import percentile
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.harness import PRIVATE, harness
from fakes.openai_api import FakeLLMServer

GROUP = ChatKey("test", ChatKind.GROUP, "-500")
MEMBERS = 50
MENTION_EVERY_S = 30.0  # simulated seconds between two @-mentions
FOLLOW_UP_AFTER_S = 3.0  # the asker's second line, half the time
ASKER_WAITS_S = 20.0  # an asker does not chat meanwhile, for this long after asking
OVERHEAD_TARGET_S = 0.05  # beyond debounce_max_s, real seconds
TURN_S = 3.0  # simulated seconds between two messages of the three-member room
ROUND = 18  # messages of one round of the three-member room: two @s in each
MENTIONED_AT = (6, 14)  # the @s of a round (its 7th and 15th message)
_ANSWER = [{"content": "在的", "send_delay_seconds": 0}]


@dataclass(frozen=True, slots=True)
class Scale:
    """How long one simulated second lasts, and how many simulated seconds are played."""

    second_s: float
    seconds: float


FULL = Scale(second_s=0.02, seconds=600.0)  # 20 mentions, 600 room messages
QUICK = Scale(second_s=0.02, seconds=95.0)  # 3 mentions
FULL_ROUNDS = 10  # the three-member room: 20 mentions
QUICK_ROUNDS = 1


@dataclass(frozen=True, slots=True)
class Line:
    """One message of the timeline: when (simulated s), who, and whether it asks."""

    at_s: float
    sender: int
    mentions: bool
    asker_of: int | None  # the @ this line belongs to, for an asker's lines


def timeline(scale: Scale, rng: random.Random) -> list[Line]:
    """Return the room's lines in order: chatter every second, an @ every 30 s.

    Someone who has just asked waits for the answer (``ASKER_WAITS_S``) rather than chat.
    """
    lines: list[Line] = []
    asked: list[tuple[int, float]] = []  # (asker, when)
    for number, at_s in enumerate(range(15, int(scale.seconds), int(MENTION_EVERY_S))):
        asker = rng.randrange(0, MEMBERS)
        asked.append((asker, at_s))
        lines.append(Line(at_s + 0.25, asker, True, number))
        if rng.random() < 0.5:
            lines.append(Line(at_s + 0.25 + FOLLOW_UP_AFTER_S, asker, False, number))
    for second in range(int(scale.seconds)):
        waiting = {who for who, when in asked if 0 <= second - when < ASKER_WAITS_S}
        chatting = [member for member in range(MEMBERS) if member not in waiting]
        lines.append(Line(second + rng.random() * 0.5, rng.choice(chatting), False, None))
    return sorted(lines, key=lambda line: line.at_s)


def _message(line: Line, number: int) -> IncomingMessage:
    text = f"@小满 周末去哪 {number}" if line.mentions else f"说到第 {number} 句"
    return IncomingMessage(
        chat=GROUP,
        message_id=f"m{number}",
        sender_id=str(line.sender),
        sender_name=f"成员{line.sender}",
        text=text,
        sent_at=datetime.now(UTC),
        addresses_bot=line.mentions,
    )


def _turn(number: int) -> IncomingMessage:
    """Return the three-member room's message ``number`` (from 0): members take turns."""
    mentions = number % ROUND in MENTIONED_AT
    text = f"@小满 这个怎么弄 {number}" if mentions else f"聊到第 {number} 句"
    sender = number % 3
    return IncomingMessage(
        chat=GROUP,
        message_id=f"t{number}",
        sender_id=str(sender),
        sender_name=f"成员{sender}",
        text=text,
        sent_at=datetime.now(UTC),
        addresses_bot=mentions,
    )


def _pacing(seconds: float) -> dict[str, float]:
    """Return the default pacing, every duration scaled (1 s lasts ``seconds``)."""
    return {
        "debounce_min_s": 5.0 * seconds,
        "debounce_max_s": 15.0 * seconds,
        "max_wait_s": 60.0 * seconds,
        "max_delay_s": 10.0 * seconds,
        "typing_chars_per_s": 1000.0,
    }


async def _three_members(*, rounds: int, second_s: float, workdir: Path) -> list[Figure]:
    """Play the three-member room; report @ → LLM call for each @, and the calls per @."""
    groups = {"continue_s": 4.0 * second_s, "answer_within_s": 20.0 * second_s}
    loop = asyncio.get_running_loop()
    asked: list[float] = []
    async with (
        FakeLLMServer() as llm,
        harness(
            fresh_path(workdir, "busy-room-3"), llm, pacing=_pacing(second_s), groups=groups
        ) as bot,
    ):
        answer_afresh(llm, _ANSWER)
        await bot.say("先热个身", chat=PRIVATE)
        await bot.settle()
        warm_calls = len(llm.requests)
        start = loop.time()
        for number in range(rounds * ROUND):
            await asyncio.sleep(max(0.0, start + number * TURN_S * second_s - loop.time()))
            message = _turn(number)
            await bot.inbox.receive_many((message,))
            if message.addresses_bot:
                asked.append(loop.time())
        await bot.settle()
        calls = llm.request_times[warm_calls:]
    waits = [min((t for t in calls if t >= at), default=float("inf")) - at for at in asked]
    target_ms = (20.0 * second_s + OVERHEAD_TARGET_S) * 1e3
    note = f"answer_within_s {20.0 * second_s * 1e3:g} ms (scaled) + 50 ms"
    return [
        Figure("busyroom.three.mention_to_call.p50", percentile(waits, 0.50) * 1e3, "ms"),
        Figure(
            "busyroom.three.mention_to_call.p95",
            percentile(waits, 0.95) * 1e3,
            "ms",
            at_most(target_ms),
            note=note,
        ),
        Figure("busyroom.three.mention_to_call.max", max(waits) * 1e3, "ms"),
        Figure("busyroom.three.calls_per_mention", len(calls) / len(waits), "calls", exactly(1.0)),
    ]


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Play the room; report asker → LLM call for each @, and the calls per @."""
    scale = QUICK if quick else FULL
    seconds = scale.second_s
    pacing = _pacing(seconds)
    lines = timeline(scale, random.Random(24))
    last_asker_line: dict[int, float] = {}
    loop = asyncio.get_running_loop()
    async with (
        FakeLLMServer() as llm,
        harness(fresh_path(workdir, "busy-room"), llm, pacing=pacing) as bot,
    ):
        answer_afresh(llm, _ANSWER)
        await bot.say("先热个身", chat=PRIVATE)
        await bot.settle()
        warm_calls = len(llm.requests)
        start = loop.time()
        for number, line in enumerate(lines):
            await asyncio.sleep(max(0.0, start + line.at_s * seconds - loop.time()))
            await bot.inbox.receive_many((_message(line, number),))
            if line.asker_of is not None:
                last_asker_line[line.asker_of] = loop.time()
        await bot.settle()
        calls = llm.request_times[warm_calls:]
    waits = [
        min((t for t in calls if t >= asked), default=float("inf")) - asked
        for asked in last_asker_line.values()
    ]
    target_ms = (15.0 * seconds + OVERHEAD_TARGET_S) * 1e3
    note = f"debounce_max_s {15.0 * seconds * 1e3:g} ms (scaled) + 50 ms"
    return [
        Figure("busyroom.asker_to_call.p50", percentile(waits, 0.50) * 1e3, "ms"),
        Figure(
            "busyroom.asker_to_call.p95",
            percentile(waits, 0.95) * 1e3,
            "ms",
            at_most(target_ms),
            note=note,
        ),
        Figure("busyroom.asker_to_call.max", max(waits) * 1e3, "ms"),
        Figure("busyroom.calls_per_mention", len(calls) / len(waits), "calls", exactly(1.0)),
        Figure("busyroom.mentions", float(len(waits)), "n"),
        *await _three_members(
            rounds=QUICK_ROUNDS if quick else FULL_ROUNDS, second_s=seconds, workdir=workdir
        ),
    ]
