"""The memory tool through the real core, the openai SDK and the fake LLM server."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bot.memory.tool import MemoryQuery, parse_query
from fakes.harness import PRIVATE, harness, push_day_summary, replies_json, wait_until
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore
from tests.log_capture import captured_logs

TOOL_ON = {"memory_tool": True}
HOTPOT_DAY = "2026-11-01 小明说学校旁边那家火锅店太辣了，下次换一家。"


async def seed(path: Path) -> None:
    async with await SqliteStore.open(path) as store:
        await push_day_summary(store, PRIVATE, date(2026, 11, 1), HOTPOT_DAY)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_off_by_default_no_tools_are_offered(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Without llm.memory_tool the reply call carries no tools: one call per batch."""
    async with harness(tmp_path, llm) as h:
        await h.say("在吗")
        await h.settle()

    assert len(llm.requests) == 1
    assert "tools" not in llm.requests[0]


async def test_a_search_is_answered_and_asked_once_more(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The model's search_memory call gets recall's answer, then a second call replies."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    llm.call_tool("search_memory", {"query": "火锅店"})
    llm.reply_json(replies_json("那家太辣了，换一家吧"))
    async with harness(tmp_path, llm, llm=TOOL_ON) as h:
        await h.say("上次说的那家店叫啥")
        await h.settle()

    assert len(llm.requests) == 2
    first, second = llm.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["search_memory"]
    assert first["response_format"] == {"type": "json_object"}
    assert second["tool_choice"] == "none"
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "search_memory"
    assert "火锅店太辣" in tool_messages(second)[0]["content"]
    assert h.platform.texts() == ["那家太辣了，换一家吧"]


async def test_the_trace_shows_each_call_and_the_search_between(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The trace lists the reply call, the search and its result, then the second call."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    llm.call_tool("search_memory", {"query": "火锅店"})
    llm.reply_json(replies_json("那家太辣了"))
    async with harness(tmp_path, llm, llm=TOOL_ON, bot={"admins": ["test:7"]}) as h:
        await h.say("上次说的那家店叫啥")
        await h.settle()
        shown = await h.command("/trace", sender_id="7")
        async with await SqliteStore.open(h.config.database_path) as store:
            [kept] = await store.recent_traces(PRIVATE, count=1)

    calls = shown.split("LLM calls:\n")[1].splitlines()[:3]
    assert calls[0].startswith("- reply · gpt-4o-mini · ")
    usage = llm.completions[0]["usage"]
    assert calls[0].endswith(
        f" · finish tool_calls, tokens {usage['prompt_tokens']}→{usage['completion_tokens']}"
    )
    asked = json.dumps({"query": "火锅店"})  # as the model wrote it: \u-escaped
    assert calls[1].startswith(f"- tool search_memory {asked} → [Memory of 2026-11-01 ")
    assert calls[2].startswith("- reply+memory · gpt-4o-mini · ")
    assert [(s.name, s.after_call) for s in kept.trace.tool_steps] == [("search_memory", 0)]
    assert "火锅店太辣" in kept.trace.tool_steps[0].result


async def test_never_a_third_call(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A model that searches again in its second answer is not asked a third time."""
    llm.call_tool("search_memory", {"query": "x"})
    llm.call_tool("search_memory", {"query": "y"}, content="")
    async with harness(tmp_path, llm, llm=TOOL_ON) as h:
        await h.say("你好吗？")
        await h.settle()

    assert len(llm.requests) == 2
    assert h.platform.texts() == []


async def test_bad_arguments_are_answered_not_raised(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Malformed arguments and unknown functions get a short error the model can read."""
    llm.call_tool("search_memory", "{not json")
    llm.reply_json(replies_json("嗯"))
    async with harness(tmp_path, llm, llm=TOOL_ON) as h:
        await h.say("在吗")
        await h.settle()

    assert tool_messages(llm.requests[1])[0]["content"].startswith("bad arguments: ")
    assert h.platform.texts() == ["嗯"]


async def test_provider_refusing_tools_is_asked_again_without_logged_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A 400 to tools re-asks the batch without them; the next batch is not offered them."""
    llm.refuse_tools()
    llm.reply_json(replies_json("在的"))
    llm.reply_json(replies_json("还在"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, llm=TOOL_ON) as h:
            await h.say("在吗")
            await h.settle()
            await h.say("还在吗")
            await h.settle()

    assert ["tools" in request for request in llm.requests] == [True, False, False]
    assert h.platform.texts() == ["在的", "还在"]
    assert sum("refused a request with tools" in line for line in logs) == 1


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"query": " 火锅 "}', MemoryQuery("火锅")),
        ('{"query": "x", "date": "2026-03-05"}', MemoryQuery("x", date(2026, 3, 5))),
        ('{"query": "x", "date": ""}', MemoryQuery("x")),
        ('{"query": ""}', "query must be a non-empty string"),
        ('{"query": "x", "date": "昨天"}', "date must be YYYY-MM-DD"),
        ("[1]", 'arguments must be a JSON object like {"query": "..."}'),
    ],
)
def test_parse_query(arguments: str, expected: MemoryQuery | str) -> None:
    """Arguments are read leniently where harmless and refused with a reason otherwise."""
    assert parse_query(arguments) == expected


async def test_a_batch_with_a_search_still_embeds_once(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With semantic recall on, the prompt's recall embeds; the model's search does not."""
    await seed(tmp_path / "data" / "pacebot.sqlite3")
    llm.call_tool("search_memory", {"query": "火锅店"})
    llm.reply_json(replies_json("嗯"))
    memory = {"embeddings": {"model": "fake-embed"}}
    async with harness(tmp_path, llm, llm=TOOL_ON, memory=memory) as h:
        await wait_until(lambda: len(llm.embedding_requests) == 1)  # the start-up back-fill
        await h.say("上次说的那家店叫啥")
        await h.settle()

    assert [request["input"] for request in llm.embedding_requests[1:]] == [["上次说的那家店叫啥"]]
    assert "火锅店太辣" in tool_messages(llm.requests[1])[0]["content"]
