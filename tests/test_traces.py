"""Batch traces: what /trace and `pacebot trace` show, kept bounded, free of secrets."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from bot.trace import Trace, trace_from_json, trace_to_json
from fakes.harness import GROUP, PRIVATE, TEST_KEY, Harness, harness, push_day_summary
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

ADMIN = {"bot": {"admins": ["test:7"]}}


def reported(llm: FakeLLMServer, index: int) -> str:
    """Return "prompt→completion", the tokens the fake server reported for one call."""
    usage = llm.completions[index]["usage"]
    return f"{usage['prompt_tokens']}→{usage['completion_tokens']}"


def reported_total(llm: FakeLLMServer, index: int) -> str:
    """Return the trace's tokens line for one call as the fake server reported it."""
    usage = llm.completions[index]["usage"]
    prompt, completion = usage["prompt_tokens"], usage["completion_tokens"]
    return f"tokens {prompt + completion:,} (prompt {prompt:,}, completion {completion:,})"


async def command(bot: Harness, text: str, *, sender_id: str = "7") -> str:
    return await bot.command(text, sender_id=sender_id)


async def test_trace_shows_the_whole_path_of_an_answer(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Why, message ids, tokens by part, recall, the LLM call, the tier and each fate."""
    llm.reply(
        '```json\n{"replies": [{"content": "CANARY-REPLY 好的", "send_delay_seconds": 0}]}\n```'
    )
    async with harness(tmp_path, llm, **ADMIN) as bot:
        today = bot.ops.memory.today()
        async with await SqliteStore.open(bot.config.database_path) as store:
            await push_day_summary(store, PRIVATE, today - timedelta(days=1), "一起去爬山了")
        await bot.say("昨天我们干嘛了？", message_id="m1")
        await bot.settle()
        shown = await command(bot, "/trace")

    lines = shown.splitlines()
    assert lines[0].startswith("batch 1 of test:private:42, ")
    assert lines[0].endswith(": answered")
    assert lines[1] == "messages: m1 (小明)"
    assert lines[2].startswith("prompt ~")
    for part in ("persona", "summaries", "people 0", "recalled 0", "history", "batch", "contract"):
        assert part in lines[2]
    yesterday = today - timedelta(days=1)
    assert lines[3] == (
        f"recall (dates): dates asked {yesterday}; date hits none; keyword hits none; "
        f"vector hits none; already in the prompt {yesterday}"
    )
    assert lines[4] == "LLM calls:"
    assert lines[5].startswith("- reply · gpt-4o-mini · ")
    assert lines[5].endswith(f"finish stop, tokens {reported(llm, 0)}")
    assert lines[6] == f"{reported_total(llm, 0)}, no prices set"
    assert lines[7] == "replies read by: fenced"
    assert lines[8] == "reply 1: sent · CANARY-REPLY 好的"
    assert "raw output:" in shown
    assert TEST_KEY not in shown


async def test_failed_and_unaddressed_batches_leave_traces(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A failed call says why and names the error; an unaddressed group batch says so."""
    llm.fail(500)
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await bot.say("在吗")
        await bot.say("大家好", chat=GROUP, addresses_bot=False)
        await bot.settle()
        async with await SqliteStore.open(bot.config.database_path) as store:
            [failed] = await store.recent_traces(PRIVATE, count=5)
            [skipped] = await store.recent_traces(GROUP, count=5)

    assert failed.trace.why == "failed"
    assert failed.trace.error is not None
    assert "HTTP 500" in failed.trace.error
    assert [call.kind for call in failed.trace.llm_calls] == ["reply"]
    assert failed.trace.llm_calls[0].error == failed.trace.error
    assert failed.fates == ()
    assert skipped.trace.why == "not addressed"
    assert skipped.trace.llm_calls == ()


async def test_garbage_goes_through_the_splitter_and_the_trace_says_so(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Two calls are listed (reply, splitter) and the tier is the splitter's."""
    llm.reply("随便说点什么，不是 JSON")
    llm.reply_json({"replies": [{"content": "随便说点什么", "send_delay_seconds": 0}]})
    async with harness(tmp_path, llm, **ADMIN) as bot:
        await bot.say("在吗")
        await bot.settle()
        async with await SqliteStore.open(bot.config.database_path) as store:
            [shown] = await store.recent_traces(PRIVATE, count=1)

    assert [call.kind for call in shown.trace.llm_calls] == ["reply", "splitter"]
    assert shown.trace.tier == "splitter"
    assert shown.trace.raw_output == "随便说点什么，不是 JSON"


async def test_only_the_newest_traces_are_kept(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With trace_keep = 2, three batches leave the two newest; /trace 3 says how many."""
    async with harness(tmp_path, llm, memory={"trace_keep": 2}, **ADMIN) as bot:
        for text in ("一", "二", "三"):
            await bot.say(text)
            await bot.settle()
        async with await SqliteStore.open(bot.config.database_path) as store:
            shown = await store.recent_traces(PRIVATE, count=10)
        second = await command(bot, "/trace 2")
        too_far = await command(bot, "/trace 3")
        bad = await command(bot, "/trace " + "9" * 5000)

    assert [s.trace.batch_id for s in shown] == [3, 2]
    assert second.startswith("batch 2 of test:private:42")
    assert too_far == "usage: /trace [N], N = 1 for the newest batch, up to 2"
    assert bad == too_far


async def test_trace_is_for_admins_only(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Anyone else gets the refusal."""
    async with harness(tmp_path, llm, **ADMIN) as bot:
        refused = await command(bot, "/trace", sender_id="8")
        empty = await command(bot, "/trace")

    assert refused == "Sorry, only admins can use that command."
    assert empty == "No batch of test:private:42 has a trace yet."


def test_a_trace_survives_its_json() -> None:
    """What the store keeps reads back equal."""
    from datetime import UTC, date, datetime

    from bot.trace import LLMCall, RecallFound, ToolStep

    trace = Trace(
        chat=PRIVATE,
        batch_id=3,
        at=datetime(2026, 11, 22, 4, 5, tzinfo=UTC),
        why="answered",
        message_ids=("1", "2"),
        prompt_tokens=(("persona", 10), ("batch", 3)),
        recall=RecallFound("dates", (date(2026, 11, 21),), (date(2026, 11, 21),)),
        llm_calls=(
            LLMCall("reply", "m", 12.5, "tool_calls", 40, 2),
            LLMCall("reply+memory", "m", 9),
        ),
        tool_steps=(ToolStep("search_memory", '{"query": "山"}', "爬山", after_call=0),),
        raw_output="{}",
        tier="json",
    )

    assert trace_from_json(trace_to_json(trace)) == trace


@pytest.mark.parametrize(
    ("language", "second", "first", "sent"),
    [
        ("en", "batch 2 of test:private:42", "batch 1 of test:private:42", "reply 1: sent"),
        ("zh", "test:private:42 的第 2 批", "test:private:42 的第 1 批", "第 1 条回复：sent"),
    ],
)
async def test_pacebot_trace_prints_from_the_shell(
    tmp_path: Path, llm: FakeLLMServer, language: str, second: str, first: str, sent: str
) -> None:
    """`pacebot trace --chat KEY -n 2` prints the two newest traces in bot.language, no key."""
    async with harness(tmp_path, llm) as bot:
        for text in ("一", "二"):
            await bot.say(text)
            await bot.settle()
    config = tmp_path / "config.toml"
    config.write_text(f'[bot]\ndata_dir = "{tmp_path / "data"}"\nlanguage = "{language}"\n')
    env = {k: v for k, v in os.environ.items() if k != "PACEBOT_LLM_API_KEY"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "trace",
        "-c",
        str(config),
        "--chat",
        str(PRIVATE),
        "-n",
        "2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    text = out.decode()

    assert process.returncode == 0, err.decode()
    assert text.index(second) < text.index(first)
    assert sent in text


async def test_trace_answers_in_chinese(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With bot.language = "zh" /trace's labels, usage and "nothing yet" are Chinese."""
    llm.reply_json({"replies": [{"content": "好的", "send_delay_seconds": 0}]})
    async with harness(tmp_path, llm, bot={"admins": ["test:7"], "language": "zh"}) as bot:
        empty = await command(bot, "/trace")
        await bot.say("在吗", message_id="m1")
        await bot.settle()
        shown = await command(bot, "/trace")
        usage = await command(bot, "/trace x")
        too_far = await command(bot, "/trace 2")

    lines = shown.splitlines()
    assert empty == "test:private:42 还没有任何一批消息的处理记录。"
    assert lines[0].startswith("test:private:42 的第 1 批，")
    assert lines[0].endswith("：answered")
    assert lines[1] == "消息：m1（小明）"
    assert lines[2].startswith("提示词约 ")
    assert lines[3] == (
        "回忆（nothing）：问到的日期 无；按日期找到 无；按关键词找到 无；按语义找到 无；"
        "已在提示词里 无"
    )
    assert lines[4] == "LLM 调用："
    assert lines[5].startswith("- reply · gpt-4o-mini · ")
    assert re.search(r" 毫秒 · 结束原因 stop，token \d+→\d+$", lines[5])
    assert re.fullmatch(r"token [\d,]+（输入 [\d,]+，输出 [\d,]+），未设置价格", lines[6])
    assert lines[7:9] == ["回复解析方式：json", "第 1 条回复：sent · 好的"]
    assert lines[9] == "原始输出："
    assert usage == "用法：/trace [N]，N = 1 表示最新的一批，最多 50"
    assert too_far == "test:private:42 保留了 1 条处理记录：N 请在 1（最新）到 1 之间选择。"
