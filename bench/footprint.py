"""Footprint of the real process: ``pacebot --help``, ``pacebot run`` ready and idle RSS.

``pacebot run`` starts as an operator starts it, a process of its own with Telegram and
QQ enabled: PTB polls the fake Bot API, nonebot serves the reverse WebSocket on a free
port. Ready is the later of the first ``getUpdates`` the fake server sees and the moment
the QQ port accepts a connection, counted from the spawn. Idle RSS is read from
``/proc/<pid>/smaps_rollup`` once the process has been ready and quiet for a moment
(``Rss``, and ``Pss``, which splits shared library pages among the processes using them),
and again once it has answered one message through the fake LLM and is quiet again: the
``openai`` SDK and the segmenter's dictionary load with the first answer, so the second
figure is what a bot that has talked holds.
``pacebot --help`` is timed from spawn to exit, the best of a few tries.

pacebot's own modules are compiled to bytecode first, as ``pip install`` does
(:func:`bench.rig.compile_bytecode`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path

from bench.report import Figure, at_most
from bench.rig import REPO, compile_bytecode
from bench.stats import median
from fakes.bot_api import FakeBotAPI
from fakes.harness import free_port, replies_json, start_run
from fakes.openai_api import FakeLLMServer

READY_TARGET_S = 1.5
RSS_TARGET_MIB = 100.0
HELP_TARGET_S = 0.3
_MIB = 1024 * 1024
_IDLE_S = 2.0  # quiet time after ready before RSS is read (the nightly catch-up ends)
_HELP_TRIES = 5
_CHATTER = 1001


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure ``--help`` time, and ready time and idle RSS of a Telegram + QQ run."""
    await compile_bytecode()
    helps = [await _help_seconds() for _ in range(2 if quick else _HELP_TRIES)]
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        ready_s, telegram_s, qq_s, memory, talked = await _run_both(api, llm, workdir, quick=quick)
    return [
        Figure(
            "footprint.help.seconds",
            min(helps),
            "s",
            target=at_most(HELP_TARGET_S),
            note=f"best of {len(helps)}; median {median(helps):.3f} s",
        ),
        Figure("footprint.run.ready", ready_s, "s", target=at_most(READY_TARGET_S)),
        Figure("footprint.run.telegram_polling", telegram_s, "s", note="first getUpdates"),
        Figure("footprint.run.qq_listening", qq_s, "s", note="reverse WebSocket port open"),
        Figure(
            "footprint.run.rss_idle",
            memory["Rss"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note="Telegram + QQ on, /proc/<pid>/smaps_rollup",
        ),
        Figure("footprint.run.pss_idle", memory["Pss"] / _MIB, "MiB", note="shared pages split"),
        Figure("footprint.run.anonymous", memory["Anonymous"] / _MIB, "MiB", note="heap"),
        Figure(
            "footprint.run.rss_after_answer",
            talked["Rss"] / _MIB,
            "MiB",
            note="idle again after one answer: SDK and dictionary loaded",
        ),
    ]


async def _help_seconds() -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "--help",
        cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await process.wait()
    return time.perf_counter() - started


def _config(workdir: Path, api: FakeBotAPI, llm: FakeLLMServer, qq_port: int) -> Path:
    data = workdir / f"footprint-{time.time_ns()}"
    data.mkdir()
    path = data / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "{data / "data"}"
log_level = "WARNING"

[llm]
base_url = "{llm.base_url}"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[qq]
enabled = true
port = {qq_port}
""",
        encoding="utf-8",
    )
    return path


async def _run_both(
    api: FakeBotAPI, llm: FakeLLMServer, workdir: Path, *, quick: bool
) -> tuple[float, float, float, dict[str, int], dict[str, int]]:
    """Start ``pacebot run``; return ready, Telegram and QQ times, idle memory before and
    after one answer."""
    qq_port = free_port()
    config = _config(workdir, api, llm, qq_port)
    env = {"PACEBOT_LLM_API_KEY": "sk-footprint", "TELEGRAM_BOT_TOKEN": api.token}
    started = time.perf_counter()
    process = await start_run(config, env)  # logs only warnings: its stderr stays small
    try:
        polling, listening = await asyncio.gather(
            _first_poll(api, started), _port_open(qq_port, started)
        )
        idle_s = 0.5 if quick else _IDLE_S
        await asyncio.sleep(idle_s)
        memory = _smaps_rollup(process.pid)
        llm.reply_json(replies_json("你好呀"))
        api.push_message(_CHATTER, "在吗？昨天说的那家火锅店叫什么来着")
        await api.wait_for("sendMessage", timeout=30)
        await asyncio.sleep(idle_s)
        talked = _smaps_rollup(process.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 20)
    return max(polling, listening), polling, listening, memory, talked


async def _first_poll(api: FakeBotAPI, started: float) -> float:
    await api.wait_for("getUpdates", timeout=30)
    return time.perf_counter() - started


async def _port_open(port: int, started: float) -> float:
    async with asyncio.timeout(30):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.005)
                continue
            writer.close()
            await writer.wait_closed()
            return time.perf_counter() - started


def _smaps_rollup(pid: int) -> dict[str, int]:
    """Return the fields of ``/proc/<pid>/smaps_rollup`` in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) * 1024
    return fields
