"""Tools: what they cost in calls and time, that chatter gets none, and a run with servers.

**Calls.** Through the real core (``fakes.harness``, the openai SDK against the fake LLM,
the test MCP server of ``fakes/mcp_server.py`` as a real stdio subprocess): private chats
each ask a question the model answers with one tool call; the LLM calls per batch and,
from each batch's trace, the calls beyond the rounds it used (target: exactly 1, the
reply call). A greedy model that calls a tool in every answer: calls per batch
(target ≤ 1 + ``max_rounds``). A ``smart`` group where every unaddressed batch goes to
the LLM: how many of those calls offered tools (target 0).

**A hanging tool.** The model calls a tool that never answers, ``timeout_s`` = 1 s: the
time from the first call's request to the second's (target ≤ ``timeout_s`` + 1 s).

**Tools off.** The requests of ``fakes/prompt_scenario.py`` with ``[tools]`` configured but
off, compared byte for byte with those the bot sent before tools existed.

**A run with two servers.** ``pacebot run`` on QQ alone, as its own process, without and
with ``[tools]`` on and two stdio MCP servers: ready (the QQ port open), RSS idle, and RSS
3 s after answering a question through a tool; the servers' own RSS beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.footprint import children, port_open, smaps_rollup
from bench.report import Figure, at_most, exactly
from bench.rig import compile_bytecode, fresh_path
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.harness import Draws, free_port, harness, replies_json, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.prompt_scenario import requests_of_the_scenario

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "requests_without_tools.json"
MAX_ROUNDS = 2
HANG_TIMEOUT_S = 1.0
RSS_TARGET_MIB = 100.0
_MIB = 1024 * 1024
_AFTER_ANSWER_S = 3.0


def _server(name: str, allow: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", "fakes.mcp_server"],
        "allow": allow,
    }


def _tools(**keys: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "max_rounds": MAX_ROUNDS,
        "mcp": [_server("weather", ["weather", "slow"])],
        **keys,
    }


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Count the calls, time a hanging tool, compare the prompt, run the process."""
    batches = 3 if quick else 20
    figures = [
        *await _addressed(batches, workdir),
        *await _greedy(batches, workdir),
        *await _unaddressed(batches, workdir),
        *await _hanging(workdir),
        *await _off(workdir),
    ]
    await compile_bytecode()
    return figures + await _runs(workdir, quick=quick)


def _private(number: int, text: str) -> IncomingMessage:
    chat = ChatKey("test", ChatKind.PRIVATE, str(number))
    return IncomingMessage(chat, f"{number}", "7", "小明", text, datetime.now(UTC), True)


async def _addressed(batches: int, workdir: Path) -> list[Figure]:
    async with (
        FakeLLMServer() as llm,
        harness(fresh_path(workdir, "tools-addressed"), llm, tools=_tools()) as bot,
    ):
        over: list[int] = []
        for number in range(1, batches + 1):
            llm.call_tool("weather", {"city": "杭州"})
            llm.reply_json(replies_json(f"晴{number}"))
            message = _private(number, "杭州天气怎么样？")
            await bot.inbox.receive_many((message,))
            await bot.settle()
            [shown] = await bot.ops.traces.recent(message.chat, count=1)
            rounds = sum(call.kind == "tool" for call in shown.trace.llm_calls)
            over.append(len(shown.trace.llm_calls) - rounds)
        calls = len(llm.requests) / batches
    return [
        Figure("tools.addressed.calls_per_batch", calls, "calls", note="one tool round each"),
        Figure(
            "tools.addressed.calls_over_rounds",
            float(max(over)),
            "calls",
            target=exactly(1.0),
            note="calls − rounds used, the worst batch",
        ),
    ]


async def _greedy(batches: int, workdir: Path) -> list[Figure]:
    async with FakeLLMServer() as llm:

        async def always_a_tool(_request: dict[str, Any]) -> None:
            llm.call_tool("weather", {"city": "上海"}, content="")

        llm.before_answer = always_a_tool
        async with harness(fresh_path(workdir, "tools-greedy"), llm, tools=_tools()) as bot:
            for number in range(1, batches + 1):
                await bot.inbox.receive_many((_private(number, "上海天气？"),))
                await bot.settle()
        calls = len(llm.requests) / batches
    return [
        Figure(
            "tools.greedy.calls_per_batch",
            calls,
            "calls",
            target=at_most(1.0 + MAX_ROUNDS),
            note=f"a model that always calls a tool; max_rounds = {MAX_ROUNDS}",
        )
    ]


async def _unaddressed(batches: int, workdir: Path) -> list[Figure]:
    groups = {
        "reply_mode": "smart",
        "interests": ["天气"],
        "talk_value": 1.0,
        "unaddressed_calls_per_hour": 10_000,
        "max_share": 1.0,
    }
    group = ChatKey("test", ChatKind.GROUP, "-100")
    async with (
        FakeLLMServer() as llm,
        harness(
            fresh_path(workdir, "tools-chatter"),
            llm,
            tools=_tools(),
            groups=groups,
            draw=Draws(0.0),
        ) as bot,
    ):
        for number in range(1, batches + 1):
            llm.reply_json(replies_json(f"是啊{number}"))
            await bot.say(f"今天天气不错{number}", chat=group, addresses_bot=False)
            await bot.settle()
        offered = sum(bool(request.get("tools")) for request in llm.requests)
        calls = len(llm.requests)
    return [
        Figure("tools.unaddressed.calls", float(calls), "calls", note="smart, talk_value 1"),
        Figure("tools.unaddressed.offered", float(offered), "calls", target=exactly(0.0)),
    ]


async def _hanging(workdir: Path) -> list[Figure]:
    tools = _tools(timeout_s=HANG_TIMEOUT_S)
    async with (
        FakeLLMServer() as llm,
        harness(fresh_path(workdir, "tools-hang"), llm, tools=tools) as bot,
    ):
        llm.call_tool("slow", {"seconds": 60})
        llm.reply_json(replies_json("查不到"))
        await bot.say("查一下？")
        await bot.settle()
        first, second = llm.request_times[:2]
    return [
        Figure(
            "tools.hang.delay",
            second - first,
            "s",
            target=at_most(HANG_TIMEOUT_S + 1.0),
            note=f"first call's request to the second's; timeout_s = {HANG_TIMEOUT_S:g}",
        )
    ]


async def _off(workdir: Path) -> list[Figure]:
    tools = {"enabled": False, "mcp": [_server("weather", ["weather"])]}
    async with FakeLLMServer() as llm:
        requests = await requests_of_the_scenario(
            fresh_path(workdir, "tools-off"), llm, tools=tools
        )
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    same = json.dumps(requests, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
    return [
        Figure(
            "tools.off.identical",
            float(same),
            "yes",
            target=exactly(1.0),
            note="the requests before tools existed, byte for byte",
        )
    ]


async def _runs(workdir: Path, *, quick: bool) -> list[Figure]:
    quiet_s = 0.5 if quick else _AFTER_ANSWER_S
    async with FakeLLMServer() as llm:
        plain = await _run(workdir, llm, tools=False, quiet_s=quiet_s)
        tooled = await _run(workdir, llm, tools=True, quiet_s=quiet_s)
    return [
        Figure("tools.run.ready_without", plain["ready"], "s", note="QQ alone, tools off"),
        Figure("tools.run.ready", tooled["ready"], "s", note="QQ alone, two stdio servers"),
        Figure("tools.run.rss_idle_without", plain["idle"] / _MIB, "MiB"),
        Figure("tools.run.rss_idle", tooled["idle"] / _MIB, "MiB", note="two stdio servers"),
        Figure("tools.run.rss_after_answer_without", plain["talked"] / _MIB, "MiB"),
        Figure(
            "tools.run.rss_after_answer",
            tooled["talked"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note="3 s after an answer through a tool; pacebot's process alone",
        ),
        Figure(
            "tools.run.server_rss",
            tooled["servers"] / _MIB,
            "MiB",
            note="the two MCP server processes together",
        ),
    ]


def _config(workdir: Path, llm: FakeLLMServer, port: int, *, tools: bool) -> Path:
    folder = fresh_path(workdir, "tools-run")
    folder.mkdir()
    servers = "".join(
        f"""
[[tools.mcp]]
name = "{name}"
command = "{sys.executable}"
args = ["-m", "fakes.mcp_server"]
allow = ["weather"]
"""
        for name in ("one", "two")
    )
    table = f"\n[tools]\nenabled = true\n{servers}" if tools else ""
    path = folder / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "{folder / "data"}"
log_level = "WARNING"

[llm]
base_url = "{llm.base_url}"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[qq]
enabled = true
port = {port}
{table}""",
        encoding="utf-8",
    )
    return path


async def _run(
    workdir: Path, llm: FakeLLMServer, *, tools: bool, quiet_s: float
) -> dict[str, float]:
    port = free_port()
    config = _config(workdir, llm, port, tools=tools)
    started = time.perf_counter()
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": "sk-bench-tools"})
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws")
    try:
        ready = await port_open(port, started)
        await onebot.connect_when_listening()
        await asyncio.sleep(quiet_s)
        idle = smaps_rollup(process.pid)["Rss"]
        if tools:
            llm.call_tool("weather", {"city": "杭州"})
        llm.reply_json(replies_json("晴" if tools else "在"))
        await onebot.send_private_message(1001, "杭州天气？")
        await onebot.wait_for_call("send_private_msg", within_s=30)
        await asyncio.sleep(quiet_s)
        talked = smaps_rollup(process.pid)["Rss"]
        servers = sum(smaps_rollup(pid)["Rss"] for pid in children(process.pid))
    finally:
        await onebot.close()
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 30)
    return {"ready": ready, "idle": idle, "talked": talked, "servers": servers}
