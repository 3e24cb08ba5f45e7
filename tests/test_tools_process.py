"""Tools through a real `pacebot run` process on QQ, and `pacebot check` over them.

Everything goes over the real wires: nonebot2 fed by the OneBot client, the openai SDK in
the process against the fake LLM server, the mcp SDK starting the test MCP server as a
subprocess and reaching another one over streamable HTTP, and the fake SearXNG.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fakes.harness import free_port, replies_json, run_pacebot, start_run
from fakes.mcp_server import WEATHER_CANARY, http_server
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.process import CHECK_KEY, check_config, check_online, connected_onebot, console_config
from fakes.search_engine import FakeSearch

KEY = "sk-tools-process-key-123456"
ALICE = 42
ADMIN = 7
GROUP = 555


def tools_toml(tmp_path: Path, *, http_url: str, search_url: str, more: str = "") -> str:
    """Return the [tools] tables: a stdio server, an HTTP one, SearXNG."""
    log = tmp_path / "calls.log"
    return f"""
[tools]
enabled = true
max_rounds = 2

[[tools.mcp]]
name = "local"
command = "{sys.executable}"
args = ["-m", "fakes.mcp_server"]
env = {{ MCP_CALL_LOG = "{log}" }}
allow = ["weather"]

[[tools.mcp]]
name = "remote"
url = "{http_url}"
allow = ["slow"]
{more}
[tools.web_search]
provider = "searxng"
base_url = "{search_url}"
"""


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def texts(call_params: dict[str, Any]) -> str:
    return "".join(s["data"]["text"] for s in call_params["message"] if s["type"] == "text")


async def ask(onebot: FakeOneBot, words: str, *, user: int = ALICE) -> str:
    """Say ``words`` to the bot in private; return the text of its next message."""
    before = len(onebot.calls_of("send_private_msg"))
    await onebot.send_private_message(user, words)
    calls = await onebot.wait_for_call("send_private_msg", count=before + 1, within_s=15)
    return texts(calls[before].params)


async def stop(process: asyncio.subprocess.Process) -> str:
    """SIGTERM the process; return its stderr once it has exited."""
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    return err.decode()


@pytest.fixture
async def remote() -> AsyncIterator[str]:
    async with http_server() as url:
        yield url


@pytest.fixture
async def search() -> AsyncIterator[FakeSearch]:
    async with FakeSearch() as engine:
        yield engine


async def test_run_answers_with_mcp_tools_and_web_search_never_for_chatter(
    tmp_path: Path, llm: FakeLLMServer, remote: str, search: FakeSearch
) -> None:
    """An addressed question is answered with the stdio server's tool, another with a web
    search and the HTTP server's tool at once, each in two calls; the group's chatter is
    answered without tools; /tools lists what is offered and each server's state."""
    port = free_port()
    tables = (
        f"\n[qq]\nenabled = true\nport = {port}\n"
        '\n[groups]\nreply_mode = "smart"\ninterests = ["天气"]\ntalk_value = 1.0\n'
        + tools_toml(tmp_path, http_url=remote, search_url=search.base_url)
    )
    config = console_config(tmp_path, llm.base_url, bot=f'admins = ["qq:{ADMIN}"]\n', tables=tables)
    llm.call_tool("weather", {"city": "杭州"})
    llm.reply_json(replies_json("杭州晴，21 度"))
    llm.call_tools(("web_search", {"query": "杭州 明天"}), ("slow", {"seconds": 0}))
    llm.reply_json(replies_json("明天多云"))
    llm.reply_json(replies_json("是啊，好天气"))
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": KEY})
    try:
        onebot = await connected_onebot(port)
        try:
            first = await ask(onebot, "杭州今天天气怎么样？")
            second = await ask(onebot, "明天呢？")
            await onebot.send_group_message(GROUP, ALICE, "今天天气真不错")
            [group] = await onebot.wait_for_call("send_group_msg", count=1, within_s=15)
            calls_before_commands = len(llm.requests)
            shown = await ask(onebot, "/tools", user=ADMIN)
        finally:
            await onebot.close()
    finally:
        err = await stop(process)

    assert process.returncode == 0, err
    assert (first, second, texts(group.params)) == ("杭州晴，21 度", "明天多云", "是啊，好天气")
    assert calls_before_commands == len(llm.requests) == 5
    assert [offered(request) for request in llm.requests] == [
        ["web_search", "weather", "slow"],
        ["web_search", "weather", "slow"],
        ["web_search", "weather", "slow"],
        ["web_search", "weather", "slow"],
        [],
    ]
    assert WEATHER_CANARY in tool_results(llm.requests[1])[0]
    assert tool_results(llm.requests[3]) == [
        '<tool-result name="web_search">\n1. 杭州天气预报\nhttps://weather.example.org/hangzhou\n'
        "杭州今天多云，18 到 24 度。\n</tool-result>",
        '<tool-result name="slow">\nslept 0 s\n</tool-result>',
    ]
    assert search.queries == ["杭州 明天"]
    assert shown.splitlines() == [
        "Offered to messages that address the bot, for at most 2 extra call(s): "
        "web_search, weather, slow",
        f"- searxng at {search.base_url} (web search): running; offers web_search",
        "- local (stdio): running; offers weather",
        "- remote (http): running; offers slow",
    ]
    assert "tools: MCP server local ready, offering weather" in err
    assert (KEY in err, "Traceback" in err) == (False, False)


async def test_check_lists_the_servers_and_online_their_tools(
    tmp_path: Path, remote: str, search: FakeSearch
) -> None:
    """check names each server and warns of an allow list that takes all; --online
    connects to each, lists its tools with those offered marked, and fails for one that
    cannot start."""
    more = '\n[[tools.mcp]]\nname = "gone"\ncommand = "no-such-mcp-server"\nallow = ["*"]\n'
    async with FakeLLMServer(api_key=CHECK_KEY) as llm:
        tools = tools_toml(tmp_path, http_url=remote, search_url=search.base_url, more=more)
        config = check_config(tmp_path, llm, more=tools)
        offline = await run_pacebot(
            "check", "-c", str(config), env={"PACEBOT_LLM_API_KEY": CHECK_KEY}
        )
        code, out, err = await check_online(config)

    assert offline[0] == 0
    assert [line for line in offline[1].splitlines() if "tools" in line] == [
        "tools: at most 2 extra call(s) per batch, 10 s per tool call",
        f"tools: MCP server local (stdio: {sys.executable} -m fakes.mcp_server), offering weather",
        f"tools: MCP server remote (http: {remote}), offering slow",
        "tools: MCP server gone (stdio: no-such-mcp-server), offering *",
        '! tools.mcp (name "gone"): allow = ["*"] offers every tool the server has, and any it'
        " adds later; name the tools instead",
        f"tools: web_search through searxng at {search.base_url}",
    ]
    assert code == 1
    listed = "weather, env, slow, crash, fail, inject, forbidden"
    assert [line for line in out.splitlines() if "MCP server" in line][-2:] == [
        "✓ MCP server local: connected; tools: " + listed.replace("weather", "weather (offered)"),
        "✓ MCP server remote: connected; tools: " + listed.replace("slow", "slow (offered)"),
    ]
    assert f"✓ web search searxng at {search.base_url}: answered (1 result(s))" in out
    assert err.splitlines()[-1] == (
        "✗ MCP server gone: its command 'no-such-mcp-server' was not found"
    )
    assert search.queries == ["pacebot"]


async def test_check_names_a_bad_server_in_tomls_words(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A server without an allow list, with both command and url, or with a bad tool
    name is refused by check, each named by its item and name."""
    bad = """
[tools]
enabled = true

[[tools.mcp]]
name = "a"
command = "x"

[[tools.mcp]]
name = "b"
command = "x"
url = "http://127.0.0.1:1/mcp"
allow = ["t"]

[[tools.mcp]]
name = "c"
url = "http://127.0.0.1:1/mcp"
allow = ["get.weather"]
"""
    code, _, err = await run_pacebot("check", "-c", str(check_config(tmp_path, llm, more=bad)))

    assert code == 1
    assert err.splitlines() == [
        "✗ invalid configuration:",
        '  - tools.mcp (item 1, name "a"): allow: required',
        '  - tools.mcp (item 2, name "b"): set either command (a stdio server) or url (a '
        "streamable-HTTP server)",
        '  - tools.mcp (item 3, name "c"): allow = ["get.weather"]: "get.weather" is not a tool'
        ' name: 1 to 64 letters, digits, "-" or "_"; or "*" for every tool of the server',
    ]
