"""One short conversation whose LLM requests pin down the prompt and the calls.

``tests/test_tools.py`` compares what this conversation sends the LLM with ``[tools]``
off to ``tests/data/requests_without_tools.json``, the requests the bot sent before tools
existed: a private question answered through a memory search (two calls) and an @ in a
group. The clock stands still, so the requests are the same bytes on every run. Should
the prompt change on purpose, write the file anew with
``python -m fakes.prompt_scenario tests/data/requests_without_tools.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from fakes.clock import Clock
from fakes.harness import GROUP, PRIVATE, harness, push_day_summary, replies_json
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

START = datetime(2026, 11, 27, 2, 0, tzinfo=UTC)
HOTPOT_DAY = "2026-11-01 小明说学校旁边那家火锅店太辣了，下次换一家。"


async def requests_of_the_scenario(
    tmp_path: Path, llm: FakeLLMServer, **sections: Any
) -> list[dict[str, Any]]:
    """Run the conversation on a standing clock; return the request bodies the LLM got."""
    async with await SqliteStore.open(tmp_path / "data" / "pacebot.sqlite3") as store:
        await push_day_summary(store, PRIVATE, date(2026, 11, 1), HOTPOT_DAY)
    llm.call_tool("search_memory", {"query": "火锅店"})
    llm.reply_json(replies_json("那家太辣了，换一家吧"))
    llm.reply_json(replies_json("今天晴天"))
    clock = Clock(START, running=False)
    async with harness(tmp_path, llm, now=clock.now, llm={"memory_tool": True}, **sections) as bot:
        await bot.say("上次说的那家店叫啥")
        await bot.settle()
        await bot.say("小满 今天天气怎么样", chat=GROUP, addresses_bot=True)
        await bot.settle()
    return list(llm.requests)


async def _recorded() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        async with FakeLLMServer() as llm:
            return await requests_of_the_scenario(Path(folder), llm)


if __name__ == "__main__":
    requests = asyncio.run(_recorded())
    text = json.dumps(requests, ensure_ascii=False, indent=1) + "\n"
    Path(sys.argv[1]).write_text(text, encoding="utf-8")
