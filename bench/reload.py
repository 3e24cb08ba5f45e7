"""Live reload as an operator meets it: ``pacebot reload`` → the next batch runs the new config.

A real ``pacebot run`` polls the fake Bot API and answers through the fake LLM. Each round
writes a new persona into ``config.toml``, runs ``pacebot reload`` (check, then SIGHUP), and
the moment the command returns, a chatter says something; the round counts when that
message's LLM call carries the new persona.

Half the rounds reload by ``pacebot reload``, half by a bare SIGHUP (``kill -HUP``, a service
manager's reload). Figures: the command's time (a Python start-up and the config's check
are most of it); per way, from the reload's start to the run logging it applied, and to
the next batch's LLM call (the debounce, 50 ms here, is in it); the rounds whose next call
carried the new persona; and how long one reload holds
the event loop in the running bot (:meth:`adapters.reload.Reloader.reload` reads, checks
and swaps synchronously): a config with three profiles and a persona file, as read on
SIGHUP. What a reload does to ingest under load is :mod:`bench.wire`'s
``wire.telegram+reload`` row.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import time
from pathlib import Path

from adapters.reload import Reloader, running_settings
from bench.report import Figure, at_most, exactly, spread_figures
from bench.rig import fresh_path
from bench.stats import Spread
from bot.config.model import load_config
from fakes.bot_api import FakeBotAPI
from fakes.harness import run_pacebot, start_run
from fakes.openai_api import FakeLLMServer
from fakes.process import console_config

NEXT_BATCH_TARGET_MS = 1000.0
LOG_LINE = "reload asked by SIGHUP: "
KEY = "sk-bench-reload-key-0000000000"
CHATTER = 4242
GAME_PERSONA = "You are the game group's referee. Keep it short.\n"
_PROFILES = """
[[profiles]]
name = "study"
chats = ["telegram:group:-100*"]
persona = "你是学习群的助教，回答简短。"

[[profiles]]
name = "game"
chats = ["qq:group:*"]
persona_file = "game.md"
language = "en"

[[profiles]]
name = "night"
chats = ["telegram:private:*"]
groups.reply_mode = "mention"
"""


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Reload a running ``pacebot run`` ``rounds`` times; time one in-loop reload."""
    rounds = 2 if quick else 10
    base = fresh_path(workdir, "reload")
    figures = await _through_the_process(base / "run", rounds=rounds)
    figures += _in_the_loop(base / "loop", reloads=20 if quick else 200)
    return figures


async def _through_the_process(workdir: Path, *, rounds: int) -> list[Figure]:
    """Reload a running bot ``rounds`` times each way: ``pacebot reload``, then a bare SIGHUP
    (what ``kill -HUP`` and a service manager's reload send)."""
    await asyncio.to_thread(workdir.mkdir, parents=True)
    async with FakeLLMServer() as llm, FakeBotAPI() as api:
        path = _write_config(workdir, llm, api, persona="CANARY-0 你是小满。")
        env = {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": api.token}
        process = await start_run(path, env)
        log = workdir / "data" / "logs" / "pacebot.log"
        commands: list[float] = []
        applied: dict[str, list[float]] = {"command": [], "signal": []}
        next_calls: dict[str, list[float]] = {"command": [], "signal": []}
        carried = 0
        try:
            await api.wait_for("getUpdates", timeout=30)
            for number in range(1, 2 * rounds + 1):
                way = "command" if number % 2 else "signal"
                _write_config(workdir, llm, api, persona=f"CANARY-{number} 你是小满。")
                started = time.monotonic()
                if way == "command":
                    code, _, err = await run_pacebot("reload", "-c", str(path), env=env)
                    if code != 0:
                        msg = f"pacebot reload failed: {err.strip()}"
                        raise RuntimeError(msg)
                    commands.append(time.monotonic() - started)
                else:
                    process.send_signal(signal.SIGHUP)
                api.push_message(CHATTER, f"第{number}句")
                applied[way].append(await _logged(log, LOG_LINE, times=number) - started)
                await llm.wait_for_requests(number, timeout=10)
                next_calls[way].append(time.monotonic() - started)
                system = str(llm.requests[number - 1]["messages"][0]["content"])
                carried += f"CANARY-{number} " in system
        finally:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.communicate(), 20)
    figures = spread_figures("reload.command", Spread.of(commands).scaled(1000), "ms")
    for way in ("command", "signal"):
        figures += [
            *spread_figures(f"reload.by_{way}.applied", Spread.of(applied[way]).scaled(1000), "ms"),
            *spread_figures(
                f"reload.by_{way}.next_batch",
                Spread.of(next_calls[way]).scaled(1000),
                "ms",
                p99_target=at_most(NEXT_BATCH_TARGET_MS),
            ),
        ]
    figures.append(
        Figure("reload.new_config_used", carried / (2 * rounds), "of rounds", target=exactly(1.0))
    )
    return figures


def _in_the_loop(workdir: Path, *, reloads: int) -> list[Figure]:
    """How long one SIGHUP reload holds the event loop: read, check, swap."""
    workdir.mkdir(parents=True)
    (workdir / "game.md").write_text(GAME_PERSONA, encoding="utf-8")
    path = workdir / "config.toml"
    lines = f'[bot]\nname = "小满"\ndata_dir = "data"\npersona = "你是小满。"\n{_PROFILES}'
    path.write_text(lines, encoding="utf-8")
    config = load_config(path)
    reloader = Reloader(path, running_settings(config))
    held = []
    for number in range(reloads):
        path.write_text(lines.replace("你是小满。", f"你是小满{number}。"), encoding="utf-8")
        started = time.perf_counter()
        reloader.reload(by="bench")
        held.append(time.perf_counter() - started)
    return [Figure("reload.loop_held.p50", statistics.median(held) * 1000, "ms")]


def _write_config(workdir: Path, llm: FakeLLMServer, api: FakeBotAPI, *, persona: str) -> Path:
    (workdir / "game.md").write_text(GAME_PERSONA, encoding="utf-8")
    telegram = f'\n[telegram]\nenabled = true\napi_base_url = "{api.base_url}"\n{_PROFILES}'
    return console_config(workdir, llm.base_url, bot=f'persona = "{persona}"\n', tables=telegram)


async def _logged(log: Path, words: str, *, times: int) -> float:
    """Wait until the run's log holds ``words`` ``times`` times; return when it did."""
    async with asyncio.timeout(10):
        while _count(log, words) < times:  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.005)
    return time.monotonic()


def _count(log: Path, words: str) -> int:
    """How many times the log holds ``words`` (none before it exists)."""
    return log.read_text(encoding="utf-8").count(words) if log.exists() else 0
