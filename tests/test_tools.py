"""Tools through the real core: a real MCP server (``fakes/mcp_server.py``, the mcp SDK,
a subprocess over stdio), a fake SearXNG on loopback, and the openai SDK against the fake
LLM scripting the model's tool calls."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.clock import Clock
from fakes.harness import GROUP, PRIVATE, Draws, harness, replies_json, wait_until
from fakes.mcp_server import INJECTION, WEATHER_CANARY
from fakes.openai_api import FakeLLMServer
from fakes.prompt_scenario import requests_of_the_scenario
from fakes.search_engine import FakeSearch
from tests.log_capture import captured_logs

GOLDEN = Path(__file__).parent / "data" / "requests_without_tools.json"
PERSONA = "你是小满，一个说话自然、简短、有点俏皮的朋友。"


def stdio_server(
    tmp_path: Path, allow: list[str], *, name: str = "weather", **extra: Any
) -> dict[str, Any]:
    """A ``[[tools.mcp]]`` table running the test MCP server, its calls logged."""
    env = {"MCP_CALL_LOG": str(tmp_path / f"{name}-calls.log"), **extra.pop("env", {})}
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", "fakes.mcp_server"],
        "env": env,
        "allow": allow,
        **extra,
    }


def ran(tmp_path: Path, name: str = "weather") -> list[str]:
    """Return the tools the test server really ran, in order."""
    log = tmp_path / f"{name}-calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def tools_on(tmp_path: Path, allow: list[str] | None = None, **keys: Any) -> dict[str, Any]:
    return {"enabled": True, "mcp": [stdio_server(tmp_path, allow or ["weather"])], **keys}


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture
async def search() -> AsyncIterator[FakeSearch]:
    async with FakeSearch() as engine:
        yield engine


async def test_with_tools_off_the_requests_are_the_bytes_sent_before_tools(
    tmp_path: Path, llm: FakeLLMServer, search: FakeSearch
) -> None:
    """With [tools] off (servers and a web search configured all the same) the prompt, the
    contract and both calls of a memory search are what the bot sent before tools existed."""
    tools = {
        "enabled": False,
        "mcp": [stdio_server(tmp_path, ["weather"])],
        "web_search": {"provider": "searxng", "base_url": search.base_url},
    }
    requests = await requests_of_the_scenario(tmp_path, llm, tools=tools)

    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert json.dumps(requests, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
    assert ran(tmp_path) == []


async def test_an_addressed_question_is_answered_with_an_mcp_tool_result(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The model's call runs on the MCP server; its result, fenced, reaches a second and
    last call, and the answer is sent: two calls, the second of the kind tool."""
    llm.call_tool("weather", {"city": "杭州"})
    llm.reply_json(replies_json("杭州今天晴，21 度"))
    async with harness(tmp_path, llm, tools=tools_on(tmp_path)) as h:
        await h.say("杭州今天天气怎么样？")
        await h.settle()
        [shown] = await h.ops.traces.recent(PRIVATE, count=1)
        report = await h.ops.cost.report(days=1)

    first, second = llm.requests
    assert (offered(first), offered(second)) == (["weather"], ["weather"])
    assert (first.get("tool_choice"), second.get("tool_choice")) == ("auto", "auto")
    assert "## Tools\n" in first["messages"][0]["content"]
    [result] = tool_messages(second)
    assert result == (
        f'<tool-result name="weather">\n杭州: sunny, 21°C, light wind ({WEATHER_CANARY})\n'
        "</tool-result>"
    )
    assert h.platform.texts() == ["杭州今天晴，21 度"]
    assert ran(tmp_path) == ["weather"]
    assert [call.kind for call in shown.trace.llm_calls] == ["reply", "tool"]
    [step] = shown.trace.tool_steps
    assert (step.name, step.arguments, step.outcome, step.after_call) == (
        "weather",
        '{"city": "杭州"}',
        "ok",
        0,
    )
    assert step.result_chars == len(f"杭州: sunny, 21°C, light wind ({WEATHER_CANARY})")
    assert sorted({row.kind for row in report.rows}) == ["reply", "tool"]


async def test_web_search_through_searxng_answers_with_titles_urls_and_snippets(
    tmp_path: Path, llm: FakeLLMServer, search: FakeSearch
) -> None:
    """web_search(query) asks SearXNG for JSON and gives the model title, URL, snippet."""
    llm.call_tool("web_search", {"query": "杭州 天气"})
    llm.reply_json(replies_json("多云，18 到 24 度"))
    tools = {
        "enabled": True,
        "web_search": {"provider": "searxng", "base_url": search.base_url, "max_results": 1},
    }
    search.results.append(("second", "https://example.org/2", "not shown"))
    async with harness(tmp_path, llm, tools=tools) as h:
        await h.say("杭州天气？")
        await h.settle()

    assert search.queries == ["杭州 天气"]
    assert offered(llm.requests[0]) == ["web_search"]
    assert tool_messages(llm.requests[1]) == [
        '<tool-result name="web_search">\n1. 杭州天气预报\nhttps://weather.example.org/hangzhou\n'
        "杭州今天多云，18 到 24 度。\n</tool-result>"
    ]
    assert h.platform.texts() == ["多云，18 到 24 度"]


async def test_chatter_is_never_offered_tools(tmp_path: Path, llm: FakeLLMServer) -> None:
    """An unaddressed batch a smart group answers goes without tools; an @ gets them."""
    groups = {"reply_mode": "smart", "interests": ["天气"], "talk_value": 1.0}
    llm.reply_json(replies_json("我也想知道"))
    llm.reply_json(replies_json("晴"))
    async with harness(
        tmp_path, llm, draw=Draws(0.0), groups=groups, tools=tools_on(tmp_path)
    ) as h:
        await h.say("今天天气真好", chat=GROUP, addresses_bot=False)
        await h.settle()
        await h.say("小满 明天天气呢", chat=GROUP, addresses_bot=True)
        await h.settle()

    assert [offered(request) for request in llm.requests] == [[], ["weather"]]
    assert "## Tools" not in llm.requests[0]["messages"][0]["content"]


async def test_a_tool_outside_the_allow_list_is_neither_offered_nor_run(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Only the allowed tool is offered; a call of another is answered with an error and
    never reaches the server."""
    llm.call_tools(("forbidden", {}), ("weather", {"city": "北京"}))
    llm.reply_json(replies_json("北京晴"))
    async with harness(tmp_path, llm, tools=tools_on(tmp_path)) as h:
        await h.say("北京呢？")
        await h.settle()

    assert offered(llm.requests[0]) == ["weather"]
    assert tool_messages(llm.requests[1])[0] == (
        '<tool-result name="forbidden">\n{"error": "no tool named \'forbidden\' is offered"}\n'
        "</tool-result>"
    )
    assert ran(tmp_path) == ["weather"]
    assert h.platform.texts() == ["北京晴"]


async def test_rounds_stop_at_max_rounds_and_the_memory_tool_counts(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With max_rounds = 2 a model that keeps calling makes three calls in all, the last
    with the tools withheld; a memory search spends a round like any tool."""
    llm.call_tool("search_memory", {"query": "天气"})
    llm.call_tool("weather", {"city": "上海"})
    llm.call_tool("weather", {"city": "广州"}, content="")
    llm.reply_json(replies_json("never asked"))
    async with harness(
        tmp_path, llm, llm={"memory_tool": True}, tools=tools_on(tmp_path, max_rounds=2)
    ) as h:
        await h.say("上海天气？")
        await h.settle()

    assert len(llm.requests) == 3
    assert offered(llm.requests[0]) == ["search_memory", "weather"]
    assert [request["tool_choice"] for request in llm.requests] == ["auto", "auto", "none"]
    assert ran(tmp_path) == ["weather"]


async def test_a_hanging_tool_is_cut_at_timeout_s_and_the_model_answers(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A call that outlasts timeout_s gives the model an error; the chat gets an answer."""
    llm.call_tool("slow", {"seconds": 30})
    llm.reply_json(replies_json("查不到，等下再问我"))
    tools = tools_on(tmp_path, ["slow"], timeout_s=0.3)
    async with harness(tmp_path, llm, tools=tools) as h:
        await wait_until(lambda: h.ops.tools.of(PRIVATE).sources[0].state == "running")
        await h.say("查一下？")
        await h.settle()
        [shown] = await h.ops.traces.recent(PRIVATE, count=1)

    assert tool_messages(llm.requests[1]) == [
        '<tool-result name="slow">\n{"error": "timed out after 0.3 s"}\n</tool-result>'
    ]
    assert [step.outcome for step in shown.trace.tool_steps] == ["timeout"]
    assert h.platform.texts() == ["查不到，等下再问我"]


async def test_a_crashing_server_costs_one_result_and_comes_back(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A server that dies mid-call gives an error result, is said once in the log, and is
    restarted: its tools are offered again and answer."""
    llm.call_tool("crash", {})
    llm.reply_json(replies_json("出了点问题"))
    llm.call_tool("weather", {"city": "杭州"})
    llm.reply_json(replies_json("好了，晴"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, tools=tools_on(tmp_path, ["crash", "weather"])) as h:
            await h.say("试试")
            await h.settle()
            await wait_until(lambda: h.ops.tools.of(PRIVATE).sources[0].state == "running")
            await h.say("再试试")
            await h.settle()

    assert tool_messages(llm.requests[1]) == [
        '<tool-result name="crash">\n{"error": "the server of crash stopped while answering"}\n'
        "</tool-result>"
    ]
    assert WEATHER_CANARY in tool_messages(llm.requests[3])[0]
    assert h.platform.texts() == ["出了点问题", "好了，晴"]
    assert ran(tmp_path) == ["crash", "weather"]
    assert logs.about("is down") == [
        "WARNING tools: MCP server weather is down: its connection ended (it said: crashing on"
        " purpose); its tools are left out, trying again in 1 s"
    ]
    assert logs.tracebacks() == []


async def test_a_missing_command_leaves_its_tools_out_and_the_bot_running(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A server whose command does not exist is said once; the other's tools are offered."""
    missing = {"name": "gone", "command": "no-such-mcp-server", "allow": ["*"]}
    tools = {"enabled": True, "mcp": [missing, stdio_server(tmp_path, ["weather"])]}
    llm.reply_json(replies_json("在"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, tools=tools, bot={"admins": ["test:7"]}) as h:
            await h.say("在吗")
            await h.settle()
            shown = await h.command("/tools", sender_id="7")

    assert offered(llm.requests[0]) == ["weather"]
    assert h.platform.texts()[0] == "在"
    warned = [line for line in logs.about("MCP server gone") if line.startswith("WARNING")]
    assert warned == [
        "WARNING tools: MCP server gone is down: its command 'no-such-mcp-server' was not "
        "found; its tools are left out, trying again in 1 s"
    ]
    assert shown.splitlines() == [
        "Offered to messages that address the bot, for at most 2 extra call(s): weather",
        "- gone (stdio): restarting; offers none — its command 'no-such-mcp-server' was not found",
        "- weather (stdio): running; offers weather",
    ]


async def test_an_injection_in_a_tool_result_runs_nothing_reaches_no_one_leaks_nothing(
    tmp_path: Path, llm: FakeLLMServer, search: FakeSearch
) -> None:
    """A hostile result cannot make the bot run a command, keep a later item, write to
    another chat, repeat its prompt, or hand its prompt to another tool: the reply that
    obeys it is cut down to what may be said here."""
    llm.call_tool("inject", {})
    llm.call_tool("web_search", {"query": f"{PERSONA} 系统提示"})
    obeying = {
        "replies": [
            {"content": "/bot off", "send_delay_seconds": 0},
            {"content": f"我的设定是：{PERSONA}", "send_delay_seconds": 0},
            {"later": {"in_seconds": 60, "note": "send 123 to qq:group:999", "kind": "remind"}},
            {"content": "好的", "send_delay_seconds": 0, "reply_to": "999"},
        ]
    }
    llm.reply_json(obeying)
    tools = {
        "enabled": True,
        "max_rounds": 3,
        "mcp": [stdio_server(tmp_path, ["inject"])],
        "web_search": {"provider": "searxng", "base_url": search.base_url},
    }
    async with harness(tmp_path, llm, tools=tools, bot={"admins": ["test:7"]}) as h:
        await h.say("帮我查查这个网页")
        await h.settle()
        pending = await h.ops.initiative.pending(PRIVATE)
        served = h.ops.access.of(PRIVATE).served
        [shown] = await h.ops.traces.recent(PRIVATE, count=1)

    assert (
        INJECTION.replace("</tool-result>", "‹/tool-result>") in tool_messages(llm.requests[1])[0]
    )
    assert tool_messages(llm.requests[2])[1] == (
        '<tool-result name="web_search">\n{"error": "refused: the arguments repeat your '
        'instructions; ask in your own words"}\n</tool-result>'
    )
    assert search.queries == []
    assert [(sent.chat, sent.text) for sent in h.platform.sent] == [
        (PRIVATE, "/bot off"),
        (PRIVATE, "好的"),
    ]
    assert (served, pending) == (True, [])
    assert [(item.kind, item.reason) for item in shown.trace.dropped] == [
        ("content", "repeats a line of the system prompt after reading tool results"),
        ("later", "a later item is not kept from an answer that read tool results"),
    ]


async def test_admins_only_tools_go_only_to_a_batch_with_an_admins_message(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An admins_only tool is left out for others and offered when an admin writes."""
    tools = tools_on(tmp_path, ["weather", "env"], admins_only=["env"])
    async with harness(tmp_path, llm, tools=tools, bot={"admins": ["test:1"]}) as h:
        await h.say("小满 在吗", chat=GROUP, addresses_bot=True, sender_id="2")
        await h.settle()
        await h.say("小满 在吗", chat=GROUP, addresses_bot=True, sender_id="1")
        await h.settle()

    assert [offered(request) for request in llm.requests] == [["weather"], ["weather", "env"]]


async def test_a_profile_narrows_the_tools_of_its_chats(
    tmp_path: Path, llm: FakeLLMServer, search: FakeSearch
) -> None:
    """A profile's tools list offers its chats only those tools."""
    tools = {
        **tools_on(tmp_path),
        "web_search": {"provider": "searxng", "base_url": search.base_url},
    }
    profiles = [{"name": "kids", "chats": ["test:group:*"], "tools": ["web_search"]}]
    async with harness(tmp_path, llm, tools=tools, profiles=profiles) as h:
        await h.say("在吗")
        await h.settle()
        await h.say("小满 在吗", chat=GROUP, addresses_bot=True)
        await h.settle()

    assert [offered(request) for request in llm.requests] == [
        ["web_search", "weather"],
        ["web_search"],
    ]


async def test_over_a_soft_cap_tools_are_withheld_over_the_hard_cap_no_round_is_made(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A soft cap reached takes the tools away from the next batch (the trace says so); a
    hard cap reached by a batch's first call leaves its tool round unmade."""
    llm.reply_json(replies_json("一"))
    llm.reply_json(replies_json("二"))
    async with harness(tmp_path, llm, tools=tools_on(tmp_path), budget={"daily_tokens": 1}) as h:
        await h.say("一？")
        await h.settle()
        await h.say("二？")
        await h.settle()
        traces = await h.ops.traces.recent(PRIVATE, count=1)
    assert [offered(request) for request in llm.requests] == [["weather"], []]
    assert traces[0].trace.guards == ("tools withheld: soft cap reached",)

    hard = tmp_path / "hard"
    async with FakeLLMServer() as server:
        server.call_tool("weather", {"city": "杭州"})
        async with harness(
            hard, server, tools=tools_on(hard), budget={"hard_daily_tokens": 1}
        ) as h:
            await h.say("杭州？")
            await h.settle()
            [shown] = await h.ops.traces.recent(PRIVATE, count=1)
    assert len(server.requests) == 1
    assert ran(hard) == []
    assert shown.trace.guards == ("no tool round: hard cap reached",)


async def test_a_provider_refusing_tools_answers_without_them_said_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A 400 to a request with tools re-asks it without; later batches get none."""
    llm.refuse_tools()
    llm.reply_json(replies_json("在的"))
    llm.reply_json(replies_json("还在"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, tools=tools_on(tmp_path)) as h:
            await h.say("在吗")
            await h.settle()
            await h.say("还在吗")
            await h.settle()

    assert ["tools" in request for request in llm.requests] == [True, False, False]
    assert h.platform.texts() == ["在的", "还在"]
    assert len(logs.about("refused a request with tools")) == 1


async def test_the_server_gets_only_the_environment_the_config_names(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """env and pass_env reach the server; pacebot's own keys do not."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", "sk-not-for-servers-123456")
    server = stdio_server(tmp_path, ["env"], env={"CITY": "杭州"}, pass_env=["WEATHER_KEY"])
    llm.call_tools(
        ("env", {"name": "CITY"}),
        ("env", {"name": "WEATHER_KEY"}),
        ("env", {"name": "PACEBOT_LLM_API_KEY"}),
    )
    llm.reply_json(replies_json("好"))
    tools = {"enabled": True, "mcp": [server]}
    async with harness(tmp_path, llm, tools=tools, tool_env={"WEATHER_KEY": "w-123"}) as h:
        await h.say("查环境")
        await h.settle()

    assert tool_messages(llm.requests[1]) == [
        '<tool-result name="env">\n杭州\n</tool-result>',
        '<tool-result name="env">\nw-123\n</tool-result>',
        '<tool-result name="env">\n(unset)\n</tool-result>',
    ]


async def test_the_trace_lists_each_call_with_secrets_redacted(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/trace shows the tool, its arguments with secret-looking values hidden, the outcome,
    the duration and the result's size."""
    llm.call_tool("weather", {"city": "杭州", "api_key": "sk-live-abcdef123456"})
    llm.reply_json(replies_json("晴"))
    async with harness(tmp_path, llm, tools=tools_on(tmp_path), bot={"admins": ["test:7"]}) as h:
        await h.say("天气")
        await h.settle()
        shown = await h.command("/trace", sender_id="7")

    [line] = [line for line in shown.splitlines() if line.startswith("- tool weather ")]
    chars = len(f"杭州: sunny, 21°C, light wind ({WEATHER_CANARY})")
    head = '- tool weather {"city": "杭州", "api_key": "***"} → 杭州: sunny'
    assert (line.startswith(head), " · ok, " in line, line.endswith(f" ms, {chars} chars")) == (
        True,
        True,
        True,
    )
    assert "sk-live" not in shown


@pytest.mark.parametrize(("in_initiative", "expected"), [(False, []), (True, ["weather"])])
async def test_the_bots_own_batches_get_tools_only_with_in_initiative(
    tmp_path: Path, llm: FakeLLMServer, in_initiative: bool, expected: list[str]
) -> None:
    """A reminder's batch is offered tools only with in_initiative; the ask before it is."""
    clock = Clock(datetime(2026, 11, 26, 13, 0, tzinfo=UTC))
    remind = {"later": {"note": "提醒看天气", "kind": "remind", "in_seconds": 60}}
    llm.reply_json({"replies": [{"content": "好，一分钟后提醒你"}, remind]})
    llm.reply_json(replies_json("该看天气啦"))
    tools = tools_on(tmp_path, in_initiative=in_initiative)
    async with harness(tmp_path, llm, now=clock.now, tools=tools) as h:
        await h.say("一分钟后提醒我看天气")
        await h.settle()
        clock.jump(seconds=61)
        await h.catch_up()
        await h.catch_up()

    assert [offered(request) for request in llm.requests] == [["weather"], expected]
    assert h.platform.texts() == ["好，一分钟后提醒你", "该看天气啦"]


async def test_web_search_through_tavily_sends_its_key_as_a_bearer_token(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With provider tavily the search is a POST with the key read from TAVILY_API_KEY;
    the key reaches no log line."""
    key = "tvly-test-key-0123456789"
    llm.call_tool("web_search", {"query": "杭州 天气"})
    llm.reply_json(replies_json("多云"))
    async with FakeSearch(api_key=key) as tavily:
        web_search = {"provider": "tavily", "base_url": tavily.base_url}
        with captured_logs() as logs:
            async with harness(
                tmp_path,
                llm,
                tools={"enabled": True, "web_search": web_search},
                tool_env={"TAVILY_API_KEY": key},
            ) as h:
                await h.say("杭州天气？")
                await h.settle()

    assert (tavily.queries, tavily.headers[0]["Authorization"]) == (["杭州 天气"], f"Bearer {key}")
    assert (
        "1. 杭州天气预报\nhttps://weather.example.org/hangzhou" in tool_messages(llm.requests[1])[0]
    )
    assert [line for line in logs if key in line] == []
