"""Token accounting and the caps of ``[budget]`` over the real core (SQLite, the openai SDK
against the fake LLM server that reports ``usage`` as providers do, the pipeline), with the
wall clock set by the test.

Every figure is the fake's own report: what the provider said a call cost is what is kept,
shown and priced; a provider that reports nothing is counted offline and marked so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.budget import format_cost
from bot.models import ChatKey, ChatKind, ChatMessage
from bot.prompt import estimate_prompt_tokens, estimate_tokens
from bot.trace import Trace
from fakes.clock import Clock
from fakes.harness import GROUP, PRIVATE, Harness, harness, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ADMIN = {"admins": ["test:7"]}
SMART = {"reply_mode": "smart", "talk_value": 1.0, "max_share": 1.0}
NOON = datetime(2026, 11, 20, 4, 0, tzinfo=UTC)  # 12:00 in Asia/Shanghai
BEFORE_DAWN = datetime(2026, 11, 19, 19, 30, tzinfo=UTC)  # 03:30, the chat day ends at 04:00


def reported(llm: FakeLLMServer, index: int) -> tuple[int, int]:
    """Return the prompt and completion tokens the fake reported for one call."""
    usage = llm.completions[index]["usage"]
    return usage["prompt_tokens"], usage["completion_tokens"]


async def newest_trace(bot: Harness, chat: ChatKey = PRIVATE) -> Trace:
    [shown] = await bot.ops.traces.recent(chat, count=1)
    return shown.trace


async def usage_by_kind(bot: Harness) -> dict[str, tuple[int, int, int, int]]:
    """Return today's kept usage by kind: calls, prompt, completion, estimated calls."""
    report = await bot.ops.cost.report(days=1)
    found: dict[str, tuple[int, int, int, int]] = {}
    for row in report.rows:
        tokens = row.spent.tokens
        found[row.kind] = (
            tokens.calls,
            tokens.prompt_tokens,
            tokens.completion_tokens,
            tokens.estimated_calls,
        )
    return found


async def test_each_call_keeps_the_tokens_its_provider_reported(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A reply call and the splitter it needed are kept by kind with the fake's usage, and
    the trace adds them up."""
    llm.reply("随便说点什么，不是 JSON")
    llm.reply_json(replies_json("随便说点什么"))
    async with harness(tmp_path, llm, now=Clock(NOON, running=False).now) as bot:
        await bot.say("在吗")
        await bot.settle()
        kept = await usage_by_kind(bot)
        trace = await newest_trace(bot)
    (reply_in, reply_out), (split_in, split_out) = reported(llm, 0), reported(llm, 1)
    assert kept == {"reply": (1, reply_in, reply_out, 0), "splitter": (1, split_in, split_out, 0)}
    tokens = trace.tokens
    assert (tokens.prompt_tokens, tokens.completion_tokens) == (
        reply_in + split_in,
        reply_out + split_out,
    )


async def test_a_summary_call_is_kept_as_its_own_kind(tmp_path: Path, llm: FakeLLMServer) -> None:
    """``/summary run`` for today keeps its call as a ``summary`` with the fake's usage."""
    llm.reply_json(replies_json("好的"))
    llm.reply_json({"summary": "2026-11-20 聊了天气。", "keywords": ["天气"]})
    async with harness(tmp_path, llm, now=Clock(NOON, running=False).now, bot=ADMIN) as bot:
        await bot.say("今天天气不错")
        await bot.settle()
        answer = await bot.command("/summary run 2026-11-20")
        kept = await usage_by_kind(bot)
    assert answer.startswith("Summarised 2026-11-20")
    assert kept["summary"] == (1, *reported(llm, 1), 0)


async def test_a_provider_that_reports_no_usage_is_counted_offline(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Without ``usage`` in the answer the tokens are counted offline from the request the
    provider received and the answer it gave, and every face says they were."""
    llm.report_usage = False
    llm.reply_json(replies_json("你好呀"))
    async with harness(tmp_path, llm, now=Clock(NOON, running=False).now, bot=ADMIN) as bot:
        await bot.say("你好")
        await bot.settle()
        kept = await usage_by_kind(bot)
        trace = await newest_trace(bot)
        status = await bot.command("/status")
    sent = [ChatMessage(m["role"], m["content"]) for m in llm.requests[0]["messages"]]
    answer = llm.completions[0]["choices"][0]["message"]["content"]
    prompt, completion = estimate_prompt_tokens(sent), estimate_tokens(answer)
    assert "usage" not in llm.completions[0]
    assert kept == {"reply": (1, prompt, completion, 1)}
    assert (trace.llm_calls[0].estimated, trace.tokens.estimated_calls) == (True, 1)
    assert "; some counted offline" in status


async def test_cost_is_the_reported_tokens_at_the_prices_on_every_face(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Prices set, the trace, /status and the cost report all give the fake's tokens at
    those prices, written the same way."""
    budget = {"price_in_per_million": 0.15, "price_out_per_million": 0.6, "currency": "CNY"}
    llm.reply_json(replies_json("好呀", "走吧"))
    async with harness(
        tmp_path, llm, now=Clock(NOON, running=False).now, bot=ADMIN, budget=budget
    ) as bot:
        await bot.say("去散步吗？")
        await bot.settle()
        trace = await newest_trace(bot)
        status = await bot.command("/status")
        report = await bot.ops.cost.report(days=7)
    prompt, completion = reported(llm, 0)
    cost = (prompt * 0.15 + completion * 0.6) / 1_000_000
    shown = format_cost(cost, "CNY")
    assert (trace.cost, trace.currency) == (cost, "CNY")
    assert (report.total.cost, report.total.tokens.total) == (cost, prompt + completion)
    assert (
        f"LLM today: {prompt + completion:,} tokens here ({shown}), "
        f"{prompt + completion:,} in all ({shown})"
    ) in status.splitlines()


async def test_over_the_soft_cap_the_optional_calls_stop(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Past daily_tokens an unaddressed question stays out and the splitter gives way to a
    split by hand; an addressed batch is still answered. The cap is logged once."""
    llm.reply_json(replies_json("第一句"))
    llm.reply("这不是 JSON。第二句话在这里")
    llm.reply_json(replies_json("在的"))
    groups = SMART
    with captured_logs() as logs:
        async with harness(
            tmp_path,
            llm,
            now=Clock(NOON, running=False).now,
            groups=groups,
            budget={"daily_tokens": 1},
        ) as bot:
            await bot.say("你好")  # spends past the cap
            await bot.settle()
            await bot.say("讲个笑话？")
            await bot.settle()
            split = await newest_trace(bot)
            await bot.say("有人知道几点了吗？", chat=GROUP, addresses_bot=False)
            await bot.settle()
            unaddressed = await newest_trace(bot, GROUP)
            await bot.say("小满几点了", chat=GROUP, addresses_bot=True)
            await bot.settle()
            addressed = await newest_trace(bot, GROUP)
    assert [call.kind for call in split.llm_calls] == ["reply"]
    assert (split.tier, split.guards) == ("text-split", ("splitter skipped: soft cap reached",))
    assert unaddressed.gate == ("question", "soft cap reached")
    assert (addressed.gate, addressed.why) == (("addressed",), "answered")
    assert len(llm.requests) == 3
    assert len([line for line in logs if "budget: the soft cap of 1 tokens" in line]) == 1


async def test_over_the_soft_cap_always_mode_answers_only_the_addressed(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """In ``always`` mode too, an unaddressed batch is optional: past the soft cap it makes
    no call, while an @ is answered."""
    llm.reply_json(replies_json("第一句"))
    llm.reply_json(replies_json("在的"))
    async with harness(
        tmp_path,
        llm,
        now=Clock(NOON, running=False).now,
        groups={"reply_mode": "always"},
        budget={"daily_tokens": 1},
    ) as bot:
        await bot.say("今天好热", chat=GROUP, sender_id="51", addresses_bot=False)
        await bot.settle()
        await bot.say("真的好热", chat=GROUP, sender_id="52", addresses_bot=False)
        await bot.settle()
        held = await newest_trace(bot, GROUP)
        await bot.say("小满你热吗", chat=GROUP, sender_id="52", addresses_bot=True)
        await bot.settle()
        addressed = await newest_trace(bot, GROUP)
    assert (held.why, held.gate) == ("over budget", ("always", "soft cap reached"))
    assert (addressed.why, len(llm.requests)) == ("answered", 2)


async def test_a_chat_over_its_own_cap_stays_out_while_others_speak(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """chat_daily_tokens holds one chat back, not the others."""
    other = ChatKey("test", ChatKind.GROUP, "-200")
    llm.default = None
    for text in ("一", "二", "三"):
        llm.reply_json(replies_json(text))
    async with harness(
        tmp_path,
        llm,
        now=Clock(NOON, running=False).now,
        groups=SMART,
        budget={"chat_daily_tokens": 1},
    ) as bot:
        for chat, sender in ((GROUP, "51"), (GROUP, "52"), (other, "53")):
            await bot.say("有人在吗？", chat=chat, sender_id=sender, addresses_bot=False)
            await bot.settle()
        held = await newest_trace(bot, GROUP)
        spoke = await newest_trace(bot, other)
    assert held.gate == ("question", "chat soft cap reached")
    assert spoke.why == "answered"
    assert len(llm.requests) == 2


async def test_the_hard_cap_stops_every_call_until_the_next_chat_day(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Past hard_daily_tokens an addressed message gets no call (it stays stored), a
    summary waits, /status says until when; the cap is logged once a day. At the chat
    day's boundary calls start again, and the held message is in the next prompt."""
    clock = Clock(BEFORE_DAWN, running=False)
    llm.reply_json(replies_json("早"))
    llm.reply_json(replies_json("早上好"))
    with captured_logs() as logs:
        async with harness(
            tmp_path, llm, now=clock.now, bot=ADMIN, budget={"hard_daily_tokens": 1}
        ) as bot:
            await bot.say("这么早就醒了")
            await bot.settle()
            await bot.say("你说呢？HELD-1")
            await bot.settle()
            held = await newest_trace(bot)
            await bot.say("还在吗？HELD-2")
            await bot.settle()
            status = await bot.command("/status")
            summary = await bot.command("/summary run 2026-11-19")
            stored = [m.text for m in await bot.ops.status.messages(PRIVATE, limit=10)]
            clock.jump(minutes=31)  # 04:01: a new chat day
            await bot.say("新的一天")
            await bot.settle()
            morning = await newest_trace(bot)
    assert (held.why, held.gate, held.llm_calls) == ("over budget", ("hard cap reached",), ())
    assert (
        "hard cap reached: the bot stays silent, no LLM call until 2026-11-20 04:00"
        " (messages are kept)"
    ) in status.splitlines()
    assert summary.startswith("The summary of 2026-11-19 waits")
    assert {"你说呢？HELD-1", "还在吗？HELD-2"} <= set(stored)
    assert morning.why == "answered"
    assert len(llm.requests) == 2
    assert "HELD-2" in str(llm.requests[1]["messages"][-1]["content"])
    hard = [line.rsplit(" ", 2)[-2:] for line in logs if "budget: the hard cap of 1" in line]
    assert hard == [["2026-11-20", "04:00"], ["2026-11-21", "04:00"]]  # once each chat day


async def test_the_soft_cap_lifts_at_the_chat_day_boundary(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An unaddressed question held back by the soft cap at 03:50 goes through at 04:10."""
    clock = Clock(BEFORE_DAWN, running=False)
    llm.reply_json(replies_json("早"))
    llm.reply_json(replies_json("有的"))
    groups: dict[str, Any] = SMART
    async with harness(
        tmp_path, llm, now=clock.now, groups=groups, budget={"daily_tokens": 1}
    ) as bot:
        await bot.say("早")
        await bot.settle()
        clock.jump(minutes=20)
        await bot.say("有人醒着吗？", chat=GROUP, sender_id="51", addresses_bot=False)
        await bot.settle()
        night = await newest_trace(bot, GROUP)
        clock.jump(minutes=20)
        await bot.say("有人醒着吗？", chat=GROUP, sender_id="52", addresses_bot=False)
        await bot.settle()
        morning = await newest_trace(bot, GROUP)
        today = await bot.ops.cost.today()
    assert night.gate == ("question", "soft cap reached")
    assert morning.why == "answered"
    assert today.standing.day == (BEFORE_DAWN + timedelta(hours=8, minutes=40)).date()
    assert today.bot.tokens.total == sum(reported(llm, 1))


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0, "0.00 USD"),
        (0.000056, "0.000056 USD"),
        (0.00021, "0.00021 USD"),
        (0.12, "0.12 USD"),
        (12.345, "12.35 USD"),
        (1234.5, "1,234.50 USD"),
    ],
)
def test_a_cost_is_written_with_two_significant_digits_and_no_exponent(
    amount: float, shown: str
) -> None:
    """Small costs keep two significant digits in plain decimals; from 1 up, two decimals."""
    assert format_cost(amount, "USD") == shown
