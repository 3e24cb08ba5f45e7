"""Memory from the chat: admin commands, the summary in the prompt, recall, isolation."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bot.days import chat_day
from bot.models import ChatKey, ChatKind, ChatMessage
from bot.prompt import estimate_prompt_tokens
from fakes.harness import GROUP, PRIVATE, Harness, harness, push_day_summary
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

ADMIN = {"bot": {"admins": ["test:7"]}}
OTHER_GROUP = ChatKey("test", ChatKind.GROUP, "-200")


def today(bot: Harness) -> date:
    config = bot.config
    return chat_day(
        datetime.now(UTC), zone=config.bot.zone, boundary=config.memory.day_boundary_time
    )


async def push(
    bot: Harness, chat: ChatKey, day: date, text: str, *, keywords: tuple[str, ...] = ()
) -> None:
    async with await SqliteStore.open(bot.config.database_path) as store:
        await push_day_summary(store, chat, day, text, keywords=keywords)


async def command(bot: Harness, text: str, *, chat: ChatKey = PRIVATE, sender_id: str = "7") -> str:
    return await bot.command(text, chat=chat, sender_id=sender_id)


async def test_pop_down_to_the_initial_persona_and_one_more(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Pops take the newest summary one at a time; past the initial persona a polite refusal."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        d = today(bot)
        for back in (3, 2, 1):
            await push(bot, PRIVATE, d - timedelta(days=back), f"第{back}天前的事")
        answers = [await command(bot, "/pop") for _ in range(4)]
        listing = await command(bot, "/summary list")
    assert answers[0].startswith(
        f"Popped the summary of {d - timedelta(days=1)}. 2 summaries remain"
    )
    assert answers[1].startswith(
        f"Popped the summary of {d - timedelta(days=2)}. 1 summaries remain"
    )
    assert answers[2].startswith(
        f"Popped the summary of {d - timedelta(days=3)}. 0 summaries remain"
    )
    assert answers[3] == "Nothing to pop: only the initial persona is left."
    assert "has no summaries yet" in listing


async def test_restore_undoes_the_last_pop_only_if_nothing_newer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Restore brings back the last popped summary, unless a newer one was pushed since."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        d = today(bot)
        await push(bot, PRIVATE, d - timedelta(days=2), "旧的")
        await command(bot, "/summary pop")
        restored = await command(bot, "/summary restore")
        await command(bot, "/summary pop")
        await push(bot, PRIVATE, d - timedelta(days=1), "新的")
        refused = await command(bot, "/summary restore")
        shown = await command(bot, "/summary show")
    assert restored == f"Restored the summary of {d - timedelta(days=2)}."
    assert refused.startswith("Nothing to restore")
    assert shown.splitlines()[2] == "新的"


async def test_non_admin_is_refused_and_nothing_changes(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A non-admin (even one named like an admin) gets a refusal and the stack is untouched."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await push(bot, GROUP, today(bot) - timedelta(days=1), "群里的事")
        refused = await command(bot, "/pop", chat=GROUP, sender_id="8")
        listing = await command(bot, "/summary list", chat=GROUP)
    assert refused == "Sorry, only admins can use that command."
    assert "1. " in listing
    assert llm.requests == []


async def test_admin_names_another_chat_from_private(tmp_path: Path, llm: FakeLLMServer) -> None:
    """From a private chat an admin may act on another chat by naming its key last."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await push(bot, GROUP, today(bot) - timedelta(days=1), "群里的事")
        answer = await command(bot, f"/summary pop {GROUP}")
        listing = await command(bot, f"/summary list {GROUP}")
    assert answer.startswith("Popped the summary of")
    assert "has no summaries yet" in listing


async def test_summary_shapes_the_next_reply_and_never_crosses_chats(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A chat's summary is in its own prompt, and a canary of one group never reaches another."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await push(
            bot,
            GROUP,
            today(bot) - timedelta(days=1),
            "CANARY-ALPHA 约了周六爬山",
            keywords=("爬山",),
        )
        await bot.say("小满，周六几点？", chat=GROUP, sender_id="1", addresses_bot=True)
        await bot.say(
            "小满，上次爬山是什么时候？ CANARY-ALPHA",
            chat=OTHER_GROUP,
            sender_id="1",
            addresses_bot=True,
        )
        await bot.settle()
        recalled = await command(bot, "/recall CANARY-ALPHA 爬山", chat=OTHER_GROUP)
    system = {
        r["messages"][1]["content"].split("\n")[-1]: r["messages"][0]["content"]
        for r in llm.requests
    }
    group_prompt = next(s for u, s in system.items() if "周六几点" in u)
    other_prompt = next(s for u, s in system.items() if "上次爬山" in u)
    assert "CANARY-ALPHA 约了周六爬山" in group_prompt
    assert "CANARY-ALPHA 约了周六爬山" not in other_prompt
    assert recalled.startswith("Nothing recalled")


async def test_yesterday_question_recalls_yesterdays_summary(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """ "昨天发生了什么" brings back yesterday's summary even when it left the persona."""
    async with harness(tmp_path, llm, memory={"context_budget_tokens": 500}) as bot:
        d = today(bot)
        await push(
            bot, PRIVATE, d - timedelta(days=1), "YESTERDAY-MARK 小明说他找到了新工作。" * 20
        )
        await push(bot, PRIVATE, d - timedelta(days=0), "今天的事")
        await bot.say("昨天发生了什么？")
        await bot.platform.wait_for_sends(1)
    system = llm.requests[0]["messages"][0]["content"]
    assert "What you remember that may help" in system
    assert "YESTERDAY-MARK" in system.split("What you remember that may help")[1]


async def test_keyword_recall_finds_an_old_summary(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Without a date, the best keyword match among older summaries is recalled."""
    async with harness(tmp_path, llm, memory={"context_budget_tokens": 500}, **ADMIN) as bot:
        d = today(bot)
        await push(
            bot,
            PRIVATE,
            d - timedelta(days=40),
            "大家周末去香山爬山，看了红叶。",
            keywords=("爬山", "香山"),
        )
        for back in range(1, 20):
            await push(
                bot,
                PRIVATE,
                d - timedelta(days=back),
                f"第{back}天：聊了工作和天气，没什么特别的。" * 3,
            )
        await bot.say("上次爬山是什么时候？")
        await bot.platform.wait_for_sends(1)
        shown = await command(bot, "/recall 上次爬山是什么时候")
    system = llm.requests[0]["messages"][0]["content"]
    assert "香山爬山" in system.split("What you remember that may help")[1]
    assert shown.startswith("Recalled by keywords")


async def test_summary_list_of_a_year_leads_with_totals_and_names_the_newest(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """365 summaries do not fit one message: totals come first, then the newest 30."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        first = today(bot) - timedelta(days=365)
        async with await SqliteStore.open(bot.config.database_path) as store:
            for n in range(365):
                await push_day_summary(
                    store, PRIVATE, first + timedelta(days=n), f"第{n}天，聊了很多事情。"
                )
        listing = await command(bot, "/summary list")
    lines = listing.splitlines()
    assert lines[0].startswith(f"memory of {PRIVATE}: 365 summaries, ")
    assert lines[1].startswith(f"1. {first + timedelta(days=364)} · 第364天")
    assert lines[30].startswith(f"30. {first + timedelta(days=335)} · ")
    assert lines[31] == f"… and 335 older, back to {first} (/summary show N shows any of them)"
    assert len(listing) <= bot.platform.text_limit


async def test_recall_of_a_whole_month_keeps_the_request_within_budget(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Asked about last month, the newest days asked about are recalled and the whole
    request still fits ``memory.context_budget_tokens``."""
    budget = 1500
    async with harness(tmp_path, llm, memory={"context_budget_tokens": budget}) as bot:
        month_start = (today(bot).replace(day=1) - timedelta(days=1)).replace(day=1)
        last_month = [month_start + timedelta(days=n) for n in range(28)]
        for day in last_month:
            await push(bot, PRIVATE, day, f"DAY-{day.isoformat()} 聊了工作、天气和周末的计划。" * 4)
        await bot.say("上个月我们都聊了什么？")
        await bot.platform.wait_for_sends(1)
    request = llm.requests[0]["messages"]
    persona, recalled = request[0]["content"].split("What you remember that may help")
    tokens = estimate_prompt_tokens([ChatMessage(m["role"], m["content"]) for m in request])
    # The newest days are in the persona already; recall goes on from the day before them.
    shown = [day for day in last_month if f"DAY-{day.isoformat()}" in persona + recalled]
    assert tokens <= budget
    assert "DAY-" in recalled
    assert shown == last_month[-len(shown) :]
    assert len(shown) < len(last_month)


async def test_a_day_with_no_summary_falls_back_to_keywords(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A question naming today (which has no summary yet) still recalls by its keywords."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await push(
            bot,
            PRIVATE,
            today(bot) - timedelta(days=40),
            "大家周末去香山爬山，看了红叶。",
            keywords=("爬山", "香山"),
        )
        # Forty days back is far outside the persona share only if the stack is long.
        for back in range(1, 30):
            await push(bot, PRIVATE, today(bot) - timedelta(days=back), "聊了工作。" * 200)
        shown = await command(bot, "/recall 今天又想起香山爬山了")
    assert shown.startswith("Recalled by keywords")
    assert "香山爬山" in shown


async def test_recall_command_leaves_out_what_the_prompt_holds(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/recall shows what a batch would get: yesterday's summary is in the persona already,
    and another day's keyword match is no stand-in for the day asked about."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await push(
            bot, PRIVATE, today(bot) - timedelta(days=40), "OLD-DAY 吃了火锅。", keywords=("火锅",)
        )
        for back in range(30, 1, -1):  # long days push the old one out of the persona
            await push(bot, PRIVATE, today(bot) - timedelta(days=back), "聊了工作。" * 200)
        await push(bot, PRIVATE, today(bot) - timedelta(days=1), "IN-PERSONA 聊了火锅。")
        shown = await command(bot, "/recall 昨天聊火锅了吗")
    assert shown.startswith("Nothing recalled for that question")
    assert "not repeated" in shown
    assert "OLD-DAY" not in shown


async def test_summary_run_creates_and_refuses_a_second(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/summary run summarises yesterday with one LLM call and refuses to write it twice."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        yesterday = today(bot) - timedelta(days=1)
        async with await SqliteStore.open(bot.config.database_path) as store:
            message = bot.message("明天一起吃火锅")
            at = datetime.now(UTC) - timedelta(days=1)
            await store.add_message(replace(message, sent_at=at), received_at=at)
        llm.reply_json(
            {
                "summary": f"{yesterday} 小明约了火锅。",
                "topics": ["火锅"],
                "key_points": [],
                "keywords": ["火锅"],
            }
        )
        first = await command(bot, "/summary run")
        second = await command(bot, f"/summary run {yesterday}")
        prompt = await command(bot, "/prompt")
    assert first.startswith(f"Summarised {yesterday}")
    assert second == f"{yesterday} already has a summary; /pop it first to write it again."
    assert "小明约了火锅" in prompt
    assert len(llm.requests) == 1


async def test_recall_names_the_days_already_in_the_prompt(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Asked about yesterday, whose summary the persona holds, /recall says so plainly."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        d = today(bot)
        await push(bot, PRIVATE, d - timedelta(days=2), "前天的事")
        await push(bot, PRIVATE, d - timedelta(days=1), "昨天的事")
        answer = await command(bot, "/recall 昨天聊了什么")

    yesterday, before = d - timedelta(days=1), d - timedelta(days=2)
    assert answer == (
        f"Nothing recalled for that question (dates asked about: {yesterday}).\n"
        f"Already in the prompt, so not repeated: {yesterday}. "
        f"The prompt holds the summaries of 2 day(s): {before} … {yesterday}."
    )


async def test_summary_run_of_today_says_it_is_partial(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/summary run of the current day answers that it is partial, and /summary list marks it."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        d = today(bot)
        async with await SqliteStore.open(bot.config.database_path) as store:
            await store.add_message(bot.message("今天一起吃火锅"), received_at=datetime.now(UTC))
        llm.reply_json({"summary": f"{d} 小明约了火锅。", "keywords": ["火锅"]})
        answer = await command(bot, f"/summary run {d}")
        listing = await command(bot, "/summary list")
    assert answer == (
        f"Summarised {d} so far (partial: the day has not ended). Once it has, the nightly"
        " run summarises the whole day in its place."
    )
    assert listing.splitlines()[1].endswith(" (partial: the day had not ended)")
