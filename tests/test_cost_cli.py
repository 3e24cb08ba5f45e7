"""``pacebot cost`` as a real process, over a database the real core wrote.

Its figures are the fake LLM's own ``usage``: per chat day, chat and kind, with a total;
``--json`` gives the shape of ``GET /api/cost``. An empty database, or days without a
call, print a table whose total is nothing, and say so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.models import ChatKey, ChatKind
from fakes.clock import Clock
from fakes.harness import GROUP, harness, make_config, replies_json, run_pacebot
from fakes.openai_api import FakeLLMServer

BUDGET = {"price_in_per_million": 2.0, "price_out_per_million": 8.0, "currency": "CNY"}


async def pacebot_cost(config: Path, *args: str) -> tuple[int, str, str]:
    return await run_pacebot("cost", "-c", str(config), *args, env={"COLUMNS": "160"})


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    budget = "\n".join(f"{key} = {json.dumps(value)}" for key, value in BUDGET.items())
    path.write_text(f'[bot]\ndata_dir = "data"\n[budget]\n{budget}\n', encoding="utf-8")
    return path


async def test_cost_on_an_empty_database_prints_a_zero_total(tmp_path: Path) -> None:
    """No call was ever made: the table says so, its total is 0, and ``--json`` agrees."""
    config = write_config(tmp_path)
    code, out, err = await pacebot_cost(config)
    json_code, as_json, _ = await pacebot_cost(config, "--json", "--days", "3")
    lines = out.splitlines()
    assert (code, json_code, err) == (0, 0, "")
    assert lines[0].startswith("No LLM call in chat days ")
    [total] = [line for line in lines if "total" in line and "│" in line]
    assert [cell.strip() for cell in total.split("│")[1:-1]] == [
        "total", "", "", "0", "0", "0", "0", "0.00 CNY"
    ]  # fmt: skip
    shown = json.loads(as_json)
    assert (shown["rows"], shown["total"]["total_tokens"]) == ([], 0)
    assert [day["total_tokens"] for day in shown["days"]] == [0, 0, 0]


async def test_cost_gives_the_fakes_usage_per_day_chat_and_kind(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Calls made yesterday in two chats: today alone has none (a zero total), the last two
    days list each chat's call with the fake's tokens and cost, ``--chat`` only one."""
    yesterday = datetime.now(UTC) - timedelta(days=1)
    other = ChatKey("test", ChatKind.GROUP, "-200")
    llm.reply_json(replies_json("一"))
    llm.reply_json(replies_json("二"))
    config = make_config(tmp_path, llm.base_url, budget=BUDGET)
    async with harness(
        tmp_path, llm, config=config, now=Clock(yesterday, running=False).now
    ) as bot:
        for chat in (GROUP, other):
            await bot.say("小满在吗", chat=chat, addresses_bot=True)
            await bot.settle()
    path = tmp_path / "config.toml"
    path.write_text(
        f'[bot]\ndata_dir = "{config.bot.data_dir}"\n[budget]\n'
        + "\n".join(f"{key} = {json.dumps(value)}" for key, value in BUDGET.items()),
        encoding="utf-8",
    )
    usages = [c["usage"] for c in llm.completions]
    tokens = [(u["prompt_tokens"], u["completion_tokens"]) for u in usages]
    every_in, every_out = sum(p for p, _ in tokens), sum(c for _, c in tokens)

    _, today_only, _ = await pacebot_cost(path, "--days", "1")
    code, table, err = await pacebot_cost(path, "--days", "2")
    _, everything, _ = await pacebot_cost(path, "--days", "2", "--json")
    _, one_chat, _ = await pacebot_cost(path, "--days", "2", "--json", "--chat", str(other))

    assert today_only.startswith("No LLM call in chat days ")
    assert (code, err) == (0, "")
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table.splitlines()]
    rows = [row for row in rows if row and row[2] in {"reply", ""} and row[3]]
    day = f"{bot.ops.memory.today():%Y-%m-%d}"
    assert rows == [
        [day, "test:group:-100", "reply", "1", f"{tokens[0][0]:,}", f"{tokens[0][1]:,}",
         f"{sum(tokens[0]):,}", cost_text(*tokens[0])],
        [day, "test:group:-200", "reply", "1", f"{tokens[1][0]:,}", f"{tokens[1][1]:,}",
         f"{sum(tokens[1]):,}", cost_text(*tokens[1])],
        ["total", "", "", "2", f"{every_in:,}", f"{every_out:,}", f"{every_in + every_out:,}",
         cost_text(every_in, every_out)],
    ]  # fmt: skip
    shown = json.loads(everything)
    assert (shown["total"]["prompt_tokens"], shown["total"]["completion_tokens"]) == (
        every_in,
        every_out,
    )
    assert [d["total_tokens"] for d in shown["days"]] == [every_in + every_out, 0]
    assert json.loads(one_chat)["total"]["total_tokens"] == sum(tokens[1])


def cost_text(prompt: int, completion: int) -> str:
    """The cost of these tokens at BUDGET's prices, as every face writes it."""
    from bot.budget import format_cost

    return format_cost((prompt * 2.0 + completion * 8.0) / 1_000_000, "CNY")


async def test_a_bad_chat_key_is_refused_without_a_traceback(tmp_path: Path) -> None:
    """``--chat`` that is no chat key: exit 2 with the expected form, no traceback."""
    code, _, err = await pacebot_cost(write_config(tmp_path), "--chat", "qq:grp:1")
    assert code == 2
    assert "is not of the form platform:kind:id" in err
    assert "Traceback" not in err


async def test_a_reader_that_leaves_early_ends_cost_quietly(tmp_path: Path) -> None:
    """`pacebot cost | head` with the reader gone: no 'Broken pipe', no traceback, and the
    exit code a shell gives a command SIGPIPE ended (141), as coreutils do."""
    config = write_config(tmp_path)
    reader, writer = os.pipe()
    os.close(reader)  # the reader has left before a line is written
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "adapters.cli", "cost", "-c", str(config),
            stdout=writer, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    finally:
        os.close(writer)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert (process.returncode, err.decode()) == (141, "")


async def test_without_prices_the_cost_says_so(tmp_path: Path) -> None:
    """With no prices in [budget] the cost is 'no prices set', in the table and as JSON,
    never 0.00 USD."""
    config = tmp_path / "config.toml"
    config.write_text('[bot]\ndata_dir = "data"\n', encoding="utf-8")
    code, out, err = await pacebot_cost(config)
    json_code, as_json, _ = await pacebot_cost(config, "--json", "--days", "1")
    [total] = [line for line in out.splitlines() if "total" in line and "│" in line]
    assert (code, json_code, err) == (0, 0, "")
    assert [cell.strip() for cell in total.split("│")[1:-1]][-1] == "no prices set"
    assert json.loads(as_json)["total"]["cost_text"] == "no prices set"
