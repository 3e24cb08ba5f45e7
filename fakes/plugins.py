"""nonebot plugins that tests and benchmarks write to a folder and load, as an operator would.

:func:`write_plugins` writes them as modules into a folder, to be put on the path:

- ``pacebot_test_plugin``: a blocking ``/天气`` (answers "晴，25°C"), a non-blocking
  ``/回声`` (echoes), a blocking ``/炸`` that raises, a ``to_me`` + keyword ``抽签``, a
  lower-priority keyword matcher for 天气 (which ``/天气``'s block must stop), a
  catch-all that records every text it sees in ``SEEN``, ``/两句`` that sends twice, and
  a non-blocking keyword ``慢慢来`` that records its text in ``STALLED`` and runs until
  the test sets ``RELEASE``. The catch-all, ``/天气`` and ``/回声`` take any adapter's
  events (both QQ roads).
- ``pacebot_test_extras``: built on ``nonebot-plugin-localstore`` (writes ``started.txt``
  in its data folder at import), ``nonebot-plugin-apscheduler`` (``/稍后`` answers, then a
  job says "时间到了" 0.1 s later) and ``nonebot-plugin-alconna`` (``/掷骰 N``).
- ``pacebot_broken_plugin``: raises at import.
- ``pacebot_unstartable_plugin``: its start-up function raises; it has a ``/坏`` command.
- ``pacebot_bench_plugin``: one non-blocking matcher that runs for every message and does
  nothing, for the ingest benchmark.
"""

from __future__ import annotations

from pathlib import Path

TEST_PLUGIN = """
import asyncio

from nonebot import on_command, on_keyword, on_message
from nonebot.adapters import Event
from nonebot.adapters.onebot.v11 import MessageEvent
from nonebot.rule import to_me

SEEN: list[str] = []
KEYWORD_SEEN: list[str] = []
STALLED: list[str] = []
RELEASE = asyncio.Event()  # a test sets a new one, and sets it to let the stalled go

everything = on_message(priority=1, block=False)


@everything.handle()
async def _(event: Event) -> None:
    SEEN.append(event.get_plaintext())


slow = on_keyword({"慢慢来"}, priority=1, block=False)


@slow.handle()
async def _(event: Event) -> None:
    STALLED.append(event.get_plaintext())
    await asyncio.wait_for(RELEASE.wait(), 10)


weather = on_command("天气", priority=5, block=True)


@weather.handle()
async def _() -> None:
    await weather.finish("晴，25°C")


echo = on_command("回声", priority=5, block=False)


@echo.handle()
async def _(event: Event) -> None:
    await echo.send("回声: " + event.get_plaintext().removeprefix("/回声").strip())


boom = on_command("炸", priority=5, block=True)


@boom.handle()
async def _() -> None:
    raise ValueError("the plugin broke")


draw = on_keyword({"抽签"}, rule=to_me(), priority=5, block=True)


@draw.handle()
async def _() -> None:
    await draw.finish("上上签")


twice = on_command("两句", priority=5, block=True)


@twice.handle()
async def _() -> None:
    await twice.send("第一句")
    await twice.finish("第二句")


weather_word = on_keyword({"天气"}, priority=9, block=False)


@weather_word.handle()
async def _(event: MessageEvent) -> None:
    KEYWORD_SEEN.append(event.get_plaintext())
"""

EXTRAS_PLUGIN = """
from datetime import UTC, datetime, timedelta

from nonebot import on_command, require
from nonebot.adapters.onebot.v11 import Bot, MessageEvent

require("nonebot_plugin_alconna")
require("nonebot_plugin_apscheduler")
require("nonebot_plugin_localstore")

import nonebot_plugin_localstore as localstore
from arclet.alconna import Alconna, Args
from nonebot_plugin_alconna import Match, on_alconna
from nonebot_plugin_apscheduler import scheduler

STARTED = localstore.get_plugin_data_file("started.txt")
STARTED.write_text("loaded", encoding="utf-8")

dice = on_alconna(Alconna("掷骰", Args["sides", int]), use_cmd_start=True, block=True)


@dice.handle()
async def _(sides: Match[int]) -> None:
    await dice.finish(f"掷出了 {sides.result} 面骰")


later = on_command("稍后", block=True)


@later.handle()
async def _(bot: Bot, event: MessageEvent) -> None:
    user = event.user_id

    async def remind() -> None:
        await bot.send_private_msg(user_id=user, message="时间到了")

    scheduler.add_job(remind, "date", run_date=datetime.now(UTC) + timedelta(seconds=0.1))
    await later.finish("好的，稍后提醒你")
"""

BROKEN_PLUGIN = """
raise RuntimeError("this plugin is broken")
"""

UNSTARTABLE_PLUGIN = """
from nonebot import get_driver, on_command

bad = on_command("坏", block=True)


@bad.handle()
async def _() -> None:
    await bad.finish("should never be said")


@get_driver().on_startup
async def _() -> None:
    raise OSError("cannot reach its service")
"""

BENCH_PLUGIN = """
from nonebot import on_message

one = on_message(priority=1, block=False)


@one.handle()
async def _() -> None:
    pass
"""

PLUGINS = {
    "pacebot_test_plugin": TEST_PLUGIN,
    "pacebot_test_extras": EXTRAS_PLUGIN,
    "pacebot_broken_plugin": BROKEN_PLUGIN,
    "pacebot_unstartable_plugin": UNSTARTABLE_PLUGIN,
    "pacebot_bench_plugin": BENCH_PLUGIN,
}


def write_plugins(folder: Path) -> Path:
    """Write every plugin of this module into ``folder`` (made if missing); return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for module, source in PLUGINS.items():
        (folder / f"{module}.py").write_text(source.lstrip(), encoding="utf-8")
    return folder
