"""The memory tool through a real `pacebot run` process on QQ.

A day summary is pushed onto the chat's prompt stack before the start, as an earlier
night would have left it. Then everything goes over the real wires: nonebot2 fed by the
OneBot client, the openai SDK in the process against the fake LLM server, SQLite.
"""

from __future__ import annotations

import asyncio
import json
import signal
from datetime import date
from pathlib import Path
from typing import Any

from bot.config.model import load_config
from bot.models import ChatKey, ChatKind
from fakes.harness import free_port, push_day_summary, replies_json, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.process import connected_onebot, console_config
from storage.sqlite import SqliteStore

KEY = "sk-memory-tool-process-key-123456"
ALICE = 42
CHAT = ChatKey("qq", ChatKind.PRIVATE, str(ALICE))
HOTPOT_DAY = "MEMORY-CANARY 小明说学校旁边那家火锅店太辣了，下次换一家。"


async def start_with_memory_tool(tmp_path: Path, llm: FakeLLMServer) -> tuple[Path, int]:
    """Write a QQ config with llm.memory_tool on and push 2026-11-01's summary; return both."""
    port = free_port()
    config = console_config(
        tmp_path,
        llm.base_url,
        bot=f'admins = ["qq:{ALICE}"]\n',
        tables=f"\n[qq]\nenabled = true\nport = {port}\n",
    )
    toml = config.read_text(encoding="utf-8").replace("[llm]\n", "[llm]\nmemory_tool = true\n")
    config.write_text(toml, encoding="utf-8")
    async with await SqliteStore.open(load_config(config).database_path) as store:
        await push_day_summary(store, CHAT, date(2026, 11, 1), HOTPOT_DAY)
    return config, port


async def ask(onebot: FakeOneBot, words: str) -> str:
    """Say ``words`` to the bot in private as Alice; return the text of its next message."""
    before = len(onebot.calls_of("send_private_msg"))
    await onebot.send_private_message(ALICE, words)
    calls = await onebot.wait_for_call("send_private_msg", count=before + 1, within_s=10)
    segments = calls[before].params["message"]
    return "".join(s["data"]["text"] for s in segments if s["type"] == "text")


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def stop(process: asyncio.subprocess.Process) -> str:
    """SIGTERM the process; return its stderr once it has exited."""
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    return err.decode()


async def test_run_answers_a_search_then_asks_once_more(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A search is answered from the stored day, then one more call; /trace shows the step."""
    config, port = await start_with_memory_tool(tmp_path, llm)
    llm.call_tool("search_memory", {"query": "火锅店"})
    llm.reply_json(replies_json("那家太辣了，换一家吧"))
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": KEY})
    try:
        onebot = await connected_onebot(port)
        try:
            answer = await ask(onebot, "上次说的那家店叫啥")
            calls_before_trace = len(llm.requests)
            trace = await ask(onebot, "/trace")
        finally:
            await onebot.close()
    finally:
        err = await stop(process)

    assert process.returncode == 0, err
    assert answer == "那家太辣了，换一家吧"
    assert calls_before_trace == len(llm.requests) == 2
    first, second = llm.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["search_memory"]
    assert tool_results(first) == []
    [result] = tool_results(second)
    assert result.startswith("[Memory of 2026-11-01")
    assert "MEMORY-CANARY" in result
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "search_memory"
    calls = trace.split("LLM calls:\n")[1].splitlines()
    asked = json.dumps({"query": "火锅店"})
    assert calls[0].startswith("- reply · gpt-4o-mini · ")
    assert calls[1].startswith(f"- tool search_memory {asked} → [Memory of 2026-11-01 ")
    assert calls[2].startswith("- reply+memory · gpt-4o-mini · ")
    assert "reply 1: sent · 那家太辣了，换一家吧" in trace.splitlines()
    assert KEY not in err
    assert KEY not in str(llm.requests)


async def test_run_asks_again_without_tools_when_the_provider_refuses_them(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A 400 to the tools re-asks the batch without them; the chat is answered; logged once."""
    config, port = await start_with_memory_tool(tmp_path, llm)
    llm.refuse_tools()
    llm.reply_json(replies_json("在的"))
    llm.reply_json(replies_json("还在"))
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": KEY})
    try:
        onebot = await connected_onebot(port)
        try:
            first = await ask(onebot, "在吗")
            second = await ask(onebot, "还在吗")
        finally:
            await onebot.close()
    finally:
        err = await stop(process)

    assert process.returncode == 0, err
    assert (first, second) == ("在的", "还在")
    assert ["tools" in request for request in llm.requests] == [True, False, False]
    assert err.count("refused a request with tools") == 1
    assert "Traceback" not in err
