"""Openers through the real core, each guard with a canary: on an injected clock and draw.

The chat talks at 10:00 in Shanghai (the harness's zone), the bot answers, and the clock
jumps through the silence. ``draw`` is fixed, so an opener falls exactly
``after_silence_s`` after the last message (0.0) or 1.25 × that (1.0), and a moment moved
into the hours lands on the window's start.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.initiative.openers import OpenerFacts, opener_refusal
from bot.models import ChatKey
from fakes.clock import Clock
from fakes.harness import GROUP, PRIVATE, Harness, harness, make_config, user_prompt
from fakes.openai_api import FakeLLMServer

TEN_AM = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai
EIGHT_PM = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # 20:00
HOUR_S = 3600.0
QUIET_MARK = "the chat has been quiet"


def openers(**overrides: Any) -> dict[str, Any]:
    return {
        "openers": True,
        "after_silence_s": 8 * HOUR_S,
        "active_within_s": 3 * 24 * HOUR_S,
        "hours": "09:00-22:00",
        "max_openers_per_day": 1,
        **overrides,
    }


def opener_calls(llm: FakeLLMServer) -> int:
    return sum(QUIET_MARK in user_prompt(r) for r in llm.requests)


async def talk(bot: Harness, *, chat: ChatKey = PRIVATE, sender_id: str = "7") -> None:
    """Say something the bot answers (the fake LLM's default reply), and wait for it."""
    await bot.say("今天好累", chat=chat, sender_id=sender_id, addresses_bot=True)
    await bot.settle()


async def silence(bot: Harness, clock: Clock, hours: float) -> int:
    """Let ``hours`` pass, looking each quarter hour; return the opener calls so far."""
    for _ in range(round(hours * 4)):
        clock.jump(minutes=15)
        await bot.catch_up()
    return opener_calls(bot.llm)


async def test_an_opener_comes_once_after_a_silence(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Silent 8 h after a talk: none before, one LLM call at 8 h whose prompt says the
    chat has been quiet, its message sent once; a day more brings no second one."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, llm.base_url, initiative=openers())
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        before = await silence(bot, clock, 7.75)
        llm.reply_json({"replies": [{"content": "今天过得怎么样？"}]})
        at_eight = await silence(bot, clock, 0.5)
        day_after = await silence(bot, clock, 24)
        view = await bot.ops.initiative.view(PRIVATE)
    assert (before, at_eight, day_after) == (0, 1, 1)
    assert bot.platform.texts() == ["好的", "今天过得怎么样？"]
    assert [(o.outcome) for o in view.openers] == ["answered"]


async def test_an_empty_reply_is_a_fine_opener(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The model answers an opener with no reply: nothing is sent, the trace says opener
    and silent, and it counts as the day's opener."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, llm.base_url, initiative=openers())
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        llm.reply_json({"replies": []})
        calls = await silence(bot, clock, 8.25)
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
        view = await bot.ops.initiative.view(PRIVATE)
    assert (calls, bot.platform.texts()) == (1, ["好的"])
    assert (trace.trace.why, trace.trace.outcome, len(trace.trace.llm_calls)) == (
        "opener",
        "silent",
        1,
    )
    assert [o.outcome for o in view.openers] == ["silent"]


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 1), (1.0, 0)])
async def test_no_opener_where_nobody_talked_lately(
    tmp_path: Path, llm: FakeLLMServer, draw: float, expected: int
) -> None:
    """active_within_s = 8.5 h: an opener drawn at 8 h comes; one drawn at 10 h does not,
    since by then nobody talked with the bot within 8.5 h."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, llm.base_url, initiative=openers(active_within_s=8.5 * HOUR_S))
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: draw) as bot:
        await talk(bot)
        assert await silence(bot, clock, 11) == expected


async def test_an_opener_waits_for_the_hours(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A talk at 20:00 puts the opener at 04:00, outside 09:00-22:00: nothing until 09:00,
    then one, in the first hour of the window."""
    clock = Clock(EIGHT_PM)
    config = make_config(tmp_path, llm.base_url, initiative=openers())
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        by_nine = await silence(bot, clock, 12.75)  # to 08:45
        after_nine = await silence(bot, clock, 0.5)
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
    local = trace.trace.at.astimezone(bot.config.bot.zone)
    assert (by_nine, after_nine, f"{local:%H}") == (0, 1, "09")


@pytest.mark.parametrize(("cap", "expected"), [(1, 1), (2, 2)])
async def test_openers_per_chat_day_are_capped(
    tmp_path: Path, llm: FakeLLMServer, cap: int, expected: int
) -> None:
    """after_silence_s = 1 h, a person answering each opener: with max_openers_per_day =
    1 the second opener of the day does not come, with 2 it does."""
    clock = Clock(TEN_AM)
    config = make_config(
        tmp_path,
        llm.base_url,
        initiative=openers(after_silence_s=HOUR_S, max_openers_per_day=cap),
    )
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        await silence(bot, clock, 1.25)
        await talk(bot)  # answering the opener
        assert await silence(bot, clock, 1.5) == expected


async def test_never_two_openers_in_a_row(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Nobody answers an opener: the next silence brings none, though the cap allows five."""
    clock = Clock(TEN_AM)
    config = make_config(
        tmp_path,
        llm.base_url,
        initiative=openers(after_silence_s=HOUR_S, max_openers_per_day=5),
    )
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        assert await silence(bot, clock, 6) == 1
    assert bot.platform.texts() == ["好的", "好的"]


@pytest.mark.parametrize(("quiet", "expected"), [(False, 1), (True, 0)])
async def test_no_opener_in_a_quiet_chat(
    tmp_path: Path, llm: FakeLLMServer, quiet: bool, expected: int
) -> None:
    """A chatter's /quiet (24 h) keeps the opener away; without it, it comes."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, llm.base_url, initiative=openers())
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        if quiet:
            assert (await bot.command("/quiet")).startswith("Quiet until 2026-11-27 10:00")
        assert await silence(bot, clock, 8.5) == expected


@pytest.mark.parametrize(("in_groups", "expected"), [(False, 0), (True, 1)])
async def test_openers_in_groups_only_when_on(
    tmp_path: Path, llm: FakeLLMServer, in_groups: bool, expected: int
) -> None:
    """A group where the bot was @-mentioned and answered gets an opener only with
    openers_in_groups."""
    clock = Clock(TEN_AM)
    config = make_config(tmp_path, llm.base_url, initiative=openers(openers_in_groups=in_groups))
    async with harness(tmp_path, llm, config=config, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot, chat=GROUP)
        assert await silence(bot, clock, 8.5) == expected


async def test_no_opener_while_openers_are_off(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With the default openers = false a silent chat stays silent."""
    clock = Clock(TEN_AM)
    async with harness(tmp_path, llm, now=clock.now, draw=lambda: 0.0) as bot:
        await talk(bot)
        assert await silence(bot, clock, 9) == 0


FACTS = OpenerFacts(
    last_message_at=TEN_AM,
    last_chatter_at=TEN_AM,
    last_talked_at=TEN_AM,
    last_opener_at=None,
    openers_today=0,
    waiting=0,
)
LATER = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)  # 18:00 in Shanghai, 8 h on


@pytest.mark.parametrize(
    ("change", "chat", "quiet_until", "config", "expected"),
    [
        ({}, PRIVATE, None, {}, None),
        ({}, PRIVATE, None, {"openers": False}, "openers are off"),
        ({}, GROUP, None, {}, "openers in groups are off"),
        (
            {},
            PRIVATE,
            datetime(2026, 11, 26, 11, 0, tzinfo=UTC),
            {},
            "quiet until 2026-11-26 19:00",
        ),
        (
            {"last_talked_at": None},
            PRIVATE,
            None,
            {},
            "nobody talked with the bot in the last 259200 s",
        ),
        ({"waiting": 1}, PRIVATE, None, {}, "the chat is not quiet"),
        ({"last_message_at": LATER}, PRIVATE, None, {}, "the chat is not quiet"),
        ({}, PRIVATE, None, {"hours": "19:00-22:00"}, "outside the hours 19:00-22:00"),
        ({"openers_today": 1}, PRIVATE, None, {}, "1 opener(s) this chat day already"),
        ({"last_opener_at": TEN_AM}, PRIVATE, None, {}, "nobody wrote since the last opener"),
        ({"last_opener_at": LATER}, PRIVATE, None, {}, "nobody wrote since the last opener"),
    ],
)
def test_each_guard_refuses_an_opener_for_its_reason(
    tmp_path: Path,
    change: dict[str, Any],
    chat: ChatKey,
    quiet_until: datetime | None,
    config: dict[str, Any],
    expected: str | None,
) -> None:
    """Every guard, alone, keeps an otherwise due opener back, and says which it is."""
    initiative = make_config(tmp_path, "http://127.0.0.1:9/v1", initiative=openers(**config))
    facts = replace(FACTS, **change)
    refusal = opener_refusal(
        chat,
        facts,
        now=LATER,
        quiet_until=quiet_until,
        config=initiative.initiative,
        zone=initiative.bot.zone,
    )
    assert refusal == expected
