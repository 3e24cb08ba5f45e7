"""LLM economy: calls per chatter message, and prompt size as a chat grows old.

**Calls.** Seeded conversations run through the real core (``running_core``: SQLite,
pipeline, the openai SDK against the fake LLM server, a recording platform). In each
turn a person sends 1–6 messages (1 most often) with typing gaps of 0.5–20 s (median
3 s), waits for the bot's answer, then reads and thinks 10–60 s. The same conversations
run twice in the same process: with the default pacing (5–15 s debounce, 60 s max wait),
and naively (no debounce, one message per batch: one call per message). All durations
are scaled (1 s lasts 20 ms in the full run) so a run takes seconds; all waits alike.

**Prompt size.** Two chats are stored with the dataset builder: one with a single busy
chat day (its 1,000 messages more than fill what the budget leaves for the recent
conversation), one with a year of such days and 365 summaries on its prompt stack. A new
message in each goes through the real pipeline; the tokens of the request the fake LLM
receives are counted with the bot's own estimate. A quiet chat (60 messages a day) is
measured at 1, 30 and 365 days too, to show the prompt growing to the budget and then
staying flat. Every chat has also learned three facts a day about its chatter, through
the store's own path, so a year old chat's person is at the ``memory.facts_per_person``
cap and the "people here" part is measured beside the whole prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.dataset import CHAT_LINES, TOPICS, ChatHistory, build, chat_keys
from bench.report import Figure, at_most, exactly
from bench.rig import answer_afresh, fresh_path
from bot.config.model import Config
from bot.models import ChatKey, ChatKind, ChatMessage, PersonNote
from bot.prompt import estimate_prompt_tokens, estimate_tokens
from fakes.harness import Harness, harness
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

FLAT_TARGET = 0.05  # prompt growth from 1 day to 1 year
FACTS_PER_DAY = 3  # learned about the chat's chatter each day of its history
_BURST_WEIGHTS = {1: 35, 2: 25, 3: 17, 4: 11, 5: 7, 6: 5}  # messages per turn
_ANSWER = [
    {"content": "哈哈，真的吗", "send_delay_seconds": 0},
    {"content": "那后来怎么样了？", "send_delay_seconds": 2},
]


@dataclass(frozen=True, slots=True)
class Scale:
    chats: int
    turns: int
    time_scale: float  # one second of a real conversation lasts this long here
    busy_day_messages: int
    quiet_day_messages: int

    def scaled(self, seconds: float) -> float:
        return seconds * self.time_scale

    def pacing(self, *, naive: bool) -> dict[str, Any]:
        """The default pacing, scaled; naive: no debounce and one message per batch."""
        return {
            "debounce_min_s": 0.0 if naive else self.scaled(5.0),
            "debounce_max_s": 0.0 if naive else self.scaled(15.0),
            "max_wait_s": self.scaled(60.0),
            "max_delay_s": self.scaled(10.0),
            "max_batch": 1 if naive else 30,
        }


FULL = Scale(chats=20, turns=10, time_scale=0.02, busy_day_messages=1000, quiet_day_messages=60)
QUICK = Scale(chats=3, turns=2, time_scale=0.004, busy_day_messages=40, quiet_day_messages=10)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a person: what they type and the gaps before each message (seconds)."""

    gaps_s: tuple[float, ...]  # before each message; the first is the thinking time
    texts: tuple[str, ...]


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure calls per message (paced vs naive) and prompt tokens (1 day vs 1 year)."""
    scale = QUICK if quick else FULL
    conversations = _conversations(random.Random(6), scale)
    paced = await _converse(fresh_path(workdir, "paced"), conversations, scale, naive=False)
    naive = await _converse(fresh_path(workdir, "naive"), conversations, scale, naive=True)
    figures = [
        Figure("economy.messages", paced.messages, "msgs"),
        Figure("economy.paced.calls_per_message", paced.calls / paced.messages, "calls/msg"),
        Figure("economy.naive.calls_per_message", naive.calls / naive.messages, "calls/msg"),
        Figure(
            "economy.paced_vs_naive",
            paced.calls / max(naive.calls, 1),
            "ratio",
            note="LLM calls, paced / naive, same conversations",
        ),
        Figure(
            "economy.paced.calls_per_batch",
            paced.calls / max(paced.batches, 1),
            "calls/batch",
            target=exactly(1.0),
        ),
        Figure("economy.paced.messages_per_batch", paced.messages / max(paced.batches, 1), "msgs"),
        Figure(
            "economy.paced.replies_cancelled", paced.cancelled / max(paced.replies, 1), "fraction"
        ),
        Figure(
            "economy.naive.replies_cancelled", naive.cancelled / max(naive.replies, 1), "fraction"
        ),
    ]
    figures += await _prompt_sizes(fresh_path(workdir, "prompt"), scale)
    return figures


async def _learn_facts(config: Config, histories: Iterable[ChatHistory], *, now: datetime) -> None:
    """Teach each chat ``FACTS_PER_DAY`` facts about its chatter for every day it lived.

    The same path as the nightly job's, so the per-person cap crowds the old ones out.
    """
    rng = random.Random(13)
    today = now.date()
    async with await SqliteStore.open(config.database_path) as store:
        for history in histories:
            for back in range(history.days, 0, -1):
                day = today - timedelta(days=back)
                facts = tuple(
                    f"{day:%m月%d日}说在准备{rng.choice(TOPICS)}，打算月底前弄完"
                    for _ in range(FACTS_PER_DAY)
                )
                note = PersonNote("7", "小明", facts)
                keep = config.memory.facts_per_person
                await store.add_facts(history.chat, day, [note], keep=keep, now=now)


def _people_part(system: str) -> str:
    """Return the "people here" part of a system prompt ("" when it has none)."""
    start = system.find("People here")
    if start < 0:
        return ""
    end = system.find("\n\n", start)
    return system[start : end if end >= 0 else None]


def _conversations(rng: random.Random, scale: Scale) -> list[list[Turn]]:
    sizes, weights = zip(*_BURST_WEIGHTS.items(), strict=True)
    conversations = []
    for _ in range(scale.chats):
        turns = []
        for _ in range(scale.turns):
            count = rng.choices(sizes, weights)[0]
            thinking = rng.uniform(10.0, 60.0)
            typing = [min(20.0, max(0.5, rng.lognormvariate(1.1, 0.8))) for _ in range(count - 1)]
            texts = tuple(rng.choice(CHAT_LINES) for _ in range(count))
            turns.append(Turn((thinking, *typing), texts))
        conversations.append(turns)
    return conversations


@dataclass(frozen=True, slots=True)
class _Tally:
    messages: int
    calls: int
    batches: int  # batches that went to the LLM (answered, silent or failed)
    replies: int
    cancelled: int


async def _converse(
    tmp: Path, conversations: Sequence[Sequence[Turn]], scale: Scale, *, naive: bool
) -> _Tally:
    chats = [ChatKey("test", ChatKind.PRIVATE, str(100 + n)) for n in range(len(conversations))]
    pacing = scale.pacing(naive=naive)
    async with FakeLLMServer() as llm, harness(tmp, llm, pacing=pacing) as bot:
        answer_afresh(llm, _ANSWER)
        await asyncio.gather(
            *(
                _person(bot, chat, turns, scale)
                for chat, turns in zip(chats, conversations, strict=True)
            )
        )
        await bot.settle()
        calls = len(llm.requests)
        path = bot.config.database_path
    with contextlib.closing(sqlite3.connect(path)) as db:
        states = dict(db.execute("SELECT state, count(*) FROM batches GROUP BY state").fetchall())
        outbox = dict(db.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall())
        (messages,) = db.execute("SELECT count(*) FROM messages WHERE from_bot = 0").fetchone()
    asked = sum(states.get(state, 0) for state in ("answered", "silent", "failed"))
    return _Tally(
        messages=int(messages),
        calls=calls,
        batches=asked,
        replies=sum(outbox.values()),
        cancelled=outbox.get("cancelled", 0),
    )


async def _person(bot: Harness, chat: ChatKey, turns: Sequence[Turn], scale: Scale) -> None:
    """Chat like a person: a burst, wait for the answer, think, the next burst."""
    for turn in turns:
        answered = len(bot.platform.texts(chat))
        for gap_s, text in zip(turn.gaps_s, turn.texts, strict=True):
            await asyncio.sleep(scale.scaled(gap_s))
            await bot.say(text, chat=chat)
        # Read the answer before the next turn (or give up after the longest wait).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(scale.scaled(90.0)):
                while len(bot.platform.texts(chat)) <= answered:  # noqa: ASYNC110 - a recording fake
                    await asyncio.sleep(scale.scaled(0.5))


async def _prompt_sizes(tmp: Path, scale: Scale) -> list[Figure]:
    """Tokens of the request for a new message in chats of growing age."""
    busy, quiet = scale.busy_day_messages, scale.quiet_day_messages
    keys = chat_keys(5, platform="test", group_every=0)  # the recording platform's name
    ages = {
        "busy.1d": ChatHistory(keys[0], days=1, messages=busy),
        "busy.365d": ChatHistory(keys[1], days=365, messages=365 * busy, summaries=365),
        "quiet.1d": ChatHistory(keys[2], days=1, messages=quiet),
        "quiet.30d": ChatHistory(keys[3], days=30, messages=30 * quiet, summaries=29),
        "quiet.365d": ChatHistory(keys[4], days=365, messages=365 * quiet, summaries=365),
    }
    async with FakeLLMServer() as llm:  # one reply at once: nothing to wait for
        # The harness keeps its database at <tmp>/data/pacebot.sqlite3.
        await build(tmp / "data" / "pacebot.sqlite3", list(ages.values()), now=datetime.now(UTC))
        async with harness(tmp, llm) as bot:
            await _learn_facts(bot.config, ages.values(), now=datetime.now(UTC))
            tokens, people = {}, {}
            for name, history in ages.items():
                before = len(llm.requests)
                question = "还记得我们上次聊的那家火锅店吗？"
                await bot.say(question, chat=history.chat, message_id=f"new-{name}")
                await bot.settle()
                request = llm.requests[before]
                messages = [ChatMessage(m["role"], str(m["content"])) for m in request["messages"]]
                tokens[name] = estimate_prompt_tokens(messages)
                people[name] = estimate_tokens(_people_part(messages[0].content))
            budget = bot.config.memory.context_budget_tokens
            people_budget = int(budget * bot.config.memory.people_share)
    figures = [
        Figure(f"economy.prompt.{name}", count, "tokens", limit="economy.prompt.budget")
        for name, count in tokens.items()
    ]
    figures.append(Figure("economy.prompt.budget", budget, "tokens"))
    figures += [
        Figure(
            f"economy.prompt.people.{name}", count, "tokens", limit="economy.prompt.people_budget"
        )
        for name, count in people.items()
    ]
    figures.append(Figure("economy.prompt.people_budget", people_budget, "tokens"))
    figures.append(
        Figure(
            "economy.prompt.growth_1d_to_1y",
            abs(tokens["busy.365d"] / tokens["busy.1d"] - 1),
            "fraction",
            target=at_most(FLAT_TARGET),
            note="busy chat: |1 year / 1 day − 1|",
        )
    )
    figures.append(
        Figure(
            "economy.prompt.growth_30d_to_1y",
            abs(tokens["quiet.365d"] / tokens["quiet.30d"] - 1),
            "fraction",
            target=at_most(FLAT_TARGET),
            note="quiet chat: |1 year / 30 days − 1|",
        )
    )
    return figures
