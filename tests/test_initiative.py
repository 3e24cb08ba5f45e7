"""Initiative through the real core: later items kept and run once, on an injected clock.

Each test runs the real pipeline, SQLite and the ``openai`` SDK against the fake LLM
server with a recording platform, on a :class:`~fakes.clock.Clock` that jumps hours
instead of sleeping. Private chats are the harness's ``test:private:42``, in
``Asia/Shanghai``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.initiative.promises import NOTE_CHARS_MAX
from bot.models import ChatKey
from fakes.clock import Clock
from fakes.harness import GROUP, PRIVATE, Harness, RecordingPlatform, harness, user_prompt
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

EVENING = datetime(2026, 11, 26, 13, 0, tzinfo=UTC)  # 21:00 in Shanghai
NINE_NEXT_MORNING = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)
REASON = "Nobody wrote: you are writing first"


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def later(note: str, *, kind: str = "remind", **when: Any) -> dict[str, Any]:
    return {"later": {"note": note, "kind": kind, **when}}


def initiative_requests(llm: FakeLLMServer) -> list[dict[str, Any]]:
    return [r for r in llm.requests if REASON in user_prompt(r)]


async def promise_one(bot: Harness, item: dict[str, Any], *, chat: ChatKey = PRIVATE) -> None:
    """Ask in ``chat`` and have the model answer with a text and ``item``."""
    bot.llm.reply_json(plan({"content": "好，到时候提醒你"}, item))
    await bot.say("到时候提醒我一下", chat=chat, addresses_bot=True)
    await bot.settle()


async def test_a_reminder_arrives_once_at_its_time(tmp_path: Path, llm: FakeLLMServer) -> None:
    """ "明早九点提醒我交作业" at 21:00: nothing before nine; at nine one LLM call whose prompt
    gives the note as the reason, one message sent; looking again sends nothing more."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("提醒小明交作业", at="2026-11-27 09:00"))
        [item] = await bot.ops.initiative.pending(PRIVATE)
        clock.jump_to(NINE_NEXT_MORNING - timedelta(minutes=2))
        await bot.catch_up()
        early = len(llm.requests)
        llm.reply_json(plan({"content": "九点了，该交作业啦"}))
        clock.jump(seconds=121)
        await bot.catch_up()
        await bot.catch_up()
        pending = await bot.ops.initiative.pending(PRIVATE)
        [trace, asked] = await bot.ops.traces.recent(PRIVATE, count=2)
    assert (item.due_at, item.kind, item.note, item.asker_id) == (
        NINE_NEXT_MORNING,
        "remind",
        "提醒小明交作业",
        "7",
    )
    assert (early, len(llm.requests), len(initiative_requests(llm))) == (1, 2, 1)
    assert "提醒小明交作业" in user_prompt(initiative_requests(llm)[0])
    assert bot.platform.texts() == ["好，到时候提醒你", "九点了，该交作业啦"]
    assert pending == []
    assert (trace.trace.why, trace.trace.outcome, trace.trace.note) == (
        "remind",
        "answered",
        "提醒小明交作业",
    )
    assert [(p.kind, p.due_at) for p in asked.trace.promised] == [("remind", NINE_NEXT_MORNING)]


async def test_a_followup_may_come_to_nothing(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A follow-up the model answers with an empty list sends nothing: silent, one call."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("问问考得怎么样", kind="followup", in_seconds=3600))
        llm.reply_json(plan())
        clock.jump(seconds=3601)
        await bot.catch_up()
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
    assert (len(initiative_requests(llm)), bot.platform.texts()) == (1, ["好，到时候提醒你"])
    assert (trace.trace.why, trace.trace.outcome) == ("followup", "silent")


async def test_a_reminder_whose_call_fails_is_sent_as_written(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The LLM answers 500 when a reminder falls due: its note is sent as it was written,
    and the trace says the call failed."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("记得交作业", in_seconds=60))
        llm.fail(500)
        clock.jump(seconds=61)
        await bot.catch_up()
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
    assert bot.platform.texts() == ["好，到时候提醒你", "记得交作业"]
    assert (trace.trace.why, trace.trace.outcome, trace.trace.tier) == ("remind", "failed", "note")


async def test_a_reminder_the_model_leaves_unsaid_is_sent_as_written(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A reminder is always delivered: an empty reply list sends its note instead."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("记得交作业", in_seconds=60))
        llm.reply_json(plan())
        clock.jump(seconds=61)
        await bot.catch_up()
    assert bot.platform.texts() == ["好，到时候提醒你", "记得交作业"]


async def test_a_followup_whose_call_fails_is_dropped_and_logged(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The LLM fails when a follow-up falls due: nothing is sent, one line says so."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("问问面试", kind="followup", in_seconds=60))
        llm.fail(500)
        clock.jump(seconds=61)
        with captured_logs() as logs:
            await bot.catch_up()
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
    assert bot.platform.texts() == ["好，到时候提醒你"]
    assert (trace.trace.why, trace.trace.outcome) == ("followup", "failed")
    origin = llm.base_url.removesuffix("/v1")
    assert logs.about("followup got no usable answer") == [
        "WARNING the followup got no usable answer: "
        f"LLM gpt-4o-mini at {origin}: HTTP 500 server error: fake error 500"
    ]


async def test_after_downtime_fresh_items_run_and_stale_ones_are_dropped(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Down for two hours: an item 100 s past due runs at start-up, one 6,700 s past due
    (stale_after_s = 300) is dropped with a log line and never sent."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        llm.reply_json(
            plan(
                {"content": "好"},
                later("十分钟后喝水", in_seconds=600),
                later("两小时后出门", in_seconds=7200),
            )
        )
        await bot.say("提醒我两件事")
        await bot.settle()
    clock.jump(seconds=7300)
    llm.reply_json(plan({"content": "该出门了"}))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, now=clock.now) as bot:
            await bot.catch_up()
    assert bot.platform.texts() == ["该出门了"]
    assert len(initiative_requests(llm)) == 1
    dropped = [line for line in logs if "dropped: it fell due" in line]
    assert len(dropped) == 1
    assert "remind #1" in dropped[0]


async def test_bad_later_items_are_refused_in_the_trace_and_the_rest_is_sent(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A plan with later items in a bad format, in the past, in year 9999, negative or
    10^12 seconds away, with a 10 kB note, nested in another, and 50 good ones: its text is
    sent, max_pending_per_chat (5) are kept, each refusal is in the trace; no traceback."""
    clock = Clock(EVENING)
    bad = [
        later("格式不对", at="明早九点"),
        later("过去了", at="2026-11-25 09:00"),
        later("太远了", at="9999-12-31 23:59"),
        later("负数", in_seconds=-5),
        later("太久了", in_seconds=10**12),
        later("x" * 10_240, in_seconds=60),
        {"later": {"note": "外层", "in_seconds": 60, "later": later("内层", in_seconds=60)}},
    ]
    good = [later(f"第{n}件事", in_seconds=60 + n) for n in range(50)]
    async with harness(tmp_path, llm, now=clock.now) as bot:
        llm.reply_json(plan({"content": "收到"}, *bad, *good))
        with captured_logs() as logs:
            await bot.say("记一下这些")
            await bot.settle()
        [shown] = await bot.ops.traces.recent(PRIVATE, count=1)
        pending = await bot.ops.initiative.pending(PRIVATE)
    reasons = [item.reason for item in shown.trace.dropped]
    assert bot.platform.texts() == ["收到"]
    assert [item.note for item in pending] == [f"第{n}件事" for n in range(5)]
    assert reasons[0] == "replies.7.later.later: Extra inputs are not permitted"
    assert [r.split(": ", 1)[-1] for r in reasons[1:7]] == [
        "'at' '明早九点' is not a local time YYYY-MM-DD HH:MM",
        "'at' '2026-11-25 09:00' is in the past (now 2026-11-26 21:00)",
        "'at' '9999-12-31 23:59' is beyond max_days_ahead (30 days)",
        "'in_seconds' -5 is not in the future",
        "'in_seconds' 1e+12 is beyond max_days_ahead (30 days)",
        f"a note of 10240 characters (at most {NOTE_CHARS_MAX})",
    ]
    assert (
        reasons[7:]
        == ["the chat holds 5 pending later items already (initiative.max_pending_per_chat)"] * 45
    )
    assert logs.tracebacks() == []


async def test_an_initiative_batch_waits_for_the_batch_in_flight(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A reminder falls due while the chat's answer is with the LLM: its call comes only
    after that answer is sent, and its prompt shows that answer."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("提醒喝水", in_seconds=60))
        llm.hang(0.4, content='{"replies": [{"content": "我在想"}]}')
        llm.reply_json(plan({"content": "喝水时间到"}))
        await bot.say("你在干嘛")
        await llm.wait_for_requests(2)
        clock.jump(seconds=61)
        await asyncio.sleep(0.1)  # the clock is re-read meanwhile
        during = len(llm.requests)
        await bot.catch_up()
    [reminder] = initiative_requests(llm)
    assert (during, len(llm.requests)) == (2, 3)
    assert "我在想" in user_prompt(reminder)
    assert bot.platform.texts() == ["好，到时候提醒你", "我在想", "喝水时间到"]


async def test_an_initiative_batch_makes_one_call_and_promises_nothing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With the memory tool on and output that is no JSON, a reminder makes one call (no
    tool, splitter or nudge) and its text is split by hand; a later item in its answer is
    dropped: an initiative batch never promises again."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now, llm={"memory_tool": True}) as bot:
        await promise_one(bot, later("提醒喝水", in_seconds=60))
        llm.reply("该喝水了。记得多喝点。")
        clock.jump(seconds=61)
        await bot.catch_up()
        llm.reply_json(plan({"content": "好"}, later("再提醒", in_seconds=60)))
        await promise_one(bot, later("提醒吃药", in_seconds=60))
        clock.jump(seconds=61)
        await bot.catch_up()
        [again, _, split, _] = await bot.ops.traces.recent(PRIVATE, count=4)
        pending = await bot.ops.initiative.pending(PRIVATE)
    reminders = initiative_requests(llm)
    assert [("tools" in r, "response_format" in r) for r in reminders] == [(False, True)] * 2
    assert ([c.kind for c in split.trace.llm_calls], split.trace.tier) == (
        ["initiative"],
        "text-split",
    )
    assert [d.reason for d in again.trace.dropped] == ["later items are not offered here"]
    assert pending == []


async def test_later_cancel_by_someone_else_is_refused(tmp_path: Path, llm: FakeLLMServer) -> None:
    """In a group, 小明 asks for a reminder: another member's /later cancel is refused and
    it stays; 小明's own cancel works; an admin may cancel anyone's; /later lists them."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now, bot={"admins": ["test:1"]}) as bot:
        await promise_one(bot, later("提醒交作业", in_seconds=3600), chat=GROUP)
        await promise_one(bot, later("提醒开会", in_seconds=7200), chat=GROUP)
        listing = await bot.command("/later", chat=GROUP, sender_id="8")
        refused = await bot.command("/later cancel 1", chat=GROUP, sender_id="8")
        kept = [item.id for item in await bot.ops.initiative.pending(GROUP)]
        own = await bot.command("/later cancel 1", chat=GROUP, sender_id="7")
        admin = await bot.command("/later cancel #2", chat=GROUP, sender_id="1")
        unknown = await bot.command("/later cancel 2", chat=GROUP, sender_id="1")
        left = await bot.ops.initiative.pending(GROUP)
    assert listing.splitlines() == [
        "pending here (2), the soonest first:",
        "#1 · 2026-11-26 22:00 · remind · 提醒交作业",
        "#2 · 2026-11-26 23:00 · remind · 提醒开会",
        "/later cancel <id> cancels one (the one who asked for it, or an admin).",
    ]
    assert (refused, kept) == ("Only the one who asked for #1, or an admin, can cancel it.", [1, 2])
    assert own == "Cancelled #1 (remind, 2026-11-26 22:00): 提醒交作业"
    assert admin == "Cancelled #2 (remind, 2026-11-26 23:00): 提醒开会"
    assert unknown.startswith("There is no pending item #2 here")
    assert left == []


async def test_quiet_pauses_followups_and_never_reminders(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/quiet 2: a follow-up falling due in it is dropped, a reminder still comes; after
    /quiet off a follow-up runs again."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("问问面试", kind="followup", in_seconds=60))
        await promise_one(bot, later("提醒关灯", in_seconds=120))
        quiet = await bot.command("/quiet 2")
        llm.reply_json(plan({"content": "关灯啦"}))
        clock.jump(seconds=121)
        await bot.catch_up()
        ended = await bot.command("/quiet off")
        await promise_one(bot, later("问问晚饭", kind="followup", in_seconds=60))
        llm.reply_json(plan({"content": "晚饭吃了吗"}))
        clock.jump(seconds=61)
        await bot.catch_up()
        again = await bot.command("/quiet off")
        view = await bot.ops.initiative.view(PRIVATE)
    assert quiet == (
        "Quiet until 2026-11-26 23:00: no openers or follow-ups here until then (reminders "
        "still come). /quiet off ends it sooner."
    )
    assert (ended, again) == (
        "Quiet ended: the bot may speak first here again.",
        "This chat is not quiet.",
    )
    said = [text for text in bot.platform.texts() if text in {"关灯啦", "晚饭吃了吗"}]
    assert said == ["关灯啦", "晚饭吃了吗"]
    assert len(initiative_requests(llm)) == 2
    assert [(q.set_by, q.ended_by) for q in view.quiet] == [("test:7", "test:7")]
    assert view.quiet_until is None


async def test_quiet_in_a_group_is_for_admins(tmp_path: Path, llm: FakeLLMServer) -> None:
    """In a group a member's /quiet is refused and changes nothing, and their /help does
    not offer it (it offers /later); an admin's works; in private anyone is offered it."""
    async with harness(tmp_path, llm, bot={"admins": ["test:1"]}) as bot:
        member_help = await bot.command("/help", chat=GROUP, sender_id="8")
        private_help = await bot.command("/help", sender_id="8")
        member = await bot.command("/quiet", chat=GROUP, sender_id="8")
        nothing = await bot.ops.initiative.view(GROUP)
        admin = await bot.command("/quiet 1", chat=GROUP, sender_id="1")
        quiet = await bot.ops.initiative.view(GROUP)
        usage = await bot.command("/quiet soon", chat=GROUP, sender_id="1")
    assert ("/quiet" in member_help, "/later" in member_help) == (False, True)
    assert "/quiet" in private_help
    assert (member, nothing.quiet) == ("In a group, only admins can use /quiet.", [])
    assert (admin.startswith("Quiet until"), quiet.quiet_until is not None) == (True, True)
    assert usage == "usage: /quiet [hours] (default 24, at most 8760) | /quiet off"


async def test_one_wake_up_however_many_items_wait(tmp_path: Path, llm: FakeLLMServer) -> None:
    """300 later items in 60 chats cost one timer and no task: what waits is in SQLite."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        for n in range(60):
            chat = ChatKey.parse(f"test:private:{1000 + n}")
            items = [later(f"事{k}", in_seconds=3600 + 60 * k + n) for k in range(5)]
            llm.reply_json(plan({"content": "好"}, *items))
            await bot.say("记一下", chat=chat)
        await bot.settle()
        loop = asyncio.get_running_loop()
        wakeups = [
            h
            for h in loop._scheduled  # type: ignore[attr-defined]
            if not h.cancelled() and "WakeUp._fire" in repr(h)
        ]
        tasks = [t.get_name() for t in asyncio.all_tasks() if "initiative" in t.get_name()]
        counts = await bot.ops.initiative.pending(ChatKey.parse("test:private:1059"))
    assert (len(wakeups), tasks, len(counts)) == (1, [], 5)


async def test_an_item_found_hours_late_by_a_running_bot_is_dropped(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The machine slept through a reminder's time: found two hours late (stale_after_s =
    300) by the running bot, it is dropped with a log line, not sent."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now) as bot:
        await promise_one(bot, later("提醒开会", in_seconds=60))
        clock.jump(hours=2)
        with captured_logs() as logs:
            await bot.catch_up()
        items = await bot.ops.initiative.view(PRIVATE)
    assert (bot.platform.texts(), initiative_requests(llm), items.pending) == (
        ["好，到时候提醒你"],
        [],
        [],
    )
    assert logs.about("remind #1") == ["INFO remind #1 dropped: stale: 7140 s past due"]


@pytest.mark.parametrize(
    ("budget", "kind", "calls", "texts"),
    [
        ({"hard_daily_tokens": 1}, "remind", 0, ["记得交作业"]),
        ({"daily_tokens": 1}, "followup", 0, []),
        ({"daily_tokens": 1}, "remind", 1, ["到点啦，交作业"]),
    ],
    ids=[
        "hard cap: the reminder goes as written",
        "soft cap: no follow-up",
        "soft cap: the reminder is answered",
    ],
)
async def test_initiative_keeps_to_the_budget(
    tmp_path: Path,
    llm: FakeLLMServer,
    budget: dict[str, int],
    kind: str,
    calls: int,
    texts: list[str],
) -> None:
    """The promise spends the day's cap; when the item falls due a hard cap allows no call
    (a reminder then goes out as its note), a soft cap no optional one (a follow-up), and
    the trace says why no call was made."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now, budget=budget) as bot:
        await promise_one(bot, later("记得交作业", kind=kind, in_seconds=60))
        llm.reply_json(plan({"content": "到点啦，交作业"}))
        clock.jump(seconds=61)
        await bot.catch_up()
        [trace, _] = await bot.ops.traces.recent(PRIVATE, count=2)
    assert (len(initiative_requests(llm)), bot.platform.texts()[1:]) == (calls, texts)
    assert trace.trace.why == kind
    refused = [guard for guard in trace.trace.guards if guard.startswith("no LLM call")]
    assert len(refused) == 1 - calls


async def test_status_names_the_next_later_item_and_a_quiet(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/status says how many later items wait and when the next is due (local time), and
    until when the chat is quiet; a chat with neither says nothing of them."""
    clock = Clock(EVENING)
    async with harness(tmp_path, llm, now=clock.now, bot={"admins": ["test:7"]}) as bot:
        before = await bot.command("/status")
        await promise_one(bot, later("提醒小明交作业", at="2026-11-27 09:00"))
        await bot.command("/quiet 2")
        after = await bot.command("/status")
    assert ("later items" in before, "quiet until" in before) == (False, False)
    assert "later items pending: 1; the next, a remind, at 2026-11-27 09:00 (/later)" in after
    assert "quiet until 2026-11-26 23:00: no openers or follow-ups here" in after


async def test_a_reminder_on_qq_loses_its_links_but_may_say_it_again(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """On QQ with qq.strip_urls a reminder's link becomes [link], as an answer's does; the
    repeat guard does not hold it back: a reminder may say what the bot said before."""
    clock = Clock(EVENING)
    qq_chat = ChatKey.from_text("qq:private:42")
    platform = RecordingPlatform(name="qq")
    async with harness(
        tmp_path, llm, now=clock.now, platform=platform, qq={"strip_urls": True}
    ) as bot:
        bot.llm.reply_json(plan({"content": "记得喝水"}, later("喝水", in_seconds=60)))
        await bot.say("一分钟后提醒我喝水", chat=qq_chat, addresses_bot=True)
        await bot.settle()
        llm.reply_json(plan({"content": "记得喝水"}, {"content": "看 https://example.com/a"}))
        clock.jump(seconds=61)
        await bot.catch_up()
        await bot.settle()
        [trace, _] = await bot.ops.traces.recent(qq_chat, count=2)
    assert platform.texts() == ["记得喝水", "记得喝水", "看 [link]"]
    assert (trace.trace.why, trace.trace.guards) == ("remind", ("1 link(s) replaced with [link]",))
