"""Footprint of the real process: ``pacebot --help``, ``pacebot run`` ready and idle RSS.

``pacebot run`` starts as an operator starts it, a process of its own with Telegram and
QQ enabled: PTB polls the fake Bot API, nonebot serves the reverse WebSocket on a free
port. Ready is the later of the first ``getUpdates`` the fake server sees and the moment
the QQ port accepts a connection, counted from the spawn. Idle RSS is read from
``/proc/<pid>/smaps_rollup`` once the process has been ready and quiet for a moment
(``Rss``, and ``Pss``, which splits shared library pages among the processes using them),
and again 3 s after it has answered a message on each platform (Telegram through PTB, QQ
through a fake NapCat on the reverse WebSocket) through the fake LLM: the ``openai`` SDK
and the segmenter's dictionary load with the first answer, so the second figure is what a
bot that has talked holds, and the one the memory target (docs/targets.md) means. Then a
third chat, one with a day summary on its prompt stack, asks about it: keyword recall cuts
the question, which loads the segmenter's dictionary (a chat without summaries is not
searched), and RSS is read a third time, 3 s later.

After the first night is a second ``pacebot run`` whose store holds a chat's talk of
yesterday and no summary of it: the start-up catch-up runs the nightly recipe on it (a
summary call through the fake LLM, the day pushed on the chat's stack, its people noted),
then the chat asks about yesterday and is answered from that summary; RSS is read 3 s
after the answer (``footprint.night.rss_after_answer``).
``pacebot --help`` is timed from spawn to exit, the best of a few tries.

pacebot's own modules are compiled to bytecode first, as ``pip install`` does
(:func:`bench.rig.compile_bytecode`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.report import Figure, at_most, exactly
from bench.rig import REPO, compile_bytecode
from bench.stats import median
from bot.models import ChatKey, ChatKind, IncomingMessage
from fakes.bot_api import FakeBotAPI
from fakes.harness import free_port, push_day_summary, replies_json, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

READY_TARGET_S = 1.5
RSS_TARGET_MIB = 100.0
HELP_TARGET_S = 0.3
_MIB = 1024 * 1024
_IDLE_S = 2.0  # quiet time after ready before RSS is read (the nightly catch-up ends)
_AFTER_ANSWER_S = 3.0  # quiet time after the answers before RSS is read
_HELP_TRIES = 5
_CHATTER = 1001
_REMEMBERING = 1002  # a Telegram chat with a day summary to recall
_NIGHT = 1003  # a Telegram chat whose yesterday the first night summarises
_SUMMARY = {
    "summary": "我们约好周六去西湖划船，晚上吃火锅。",
    "topics": ["西湖", "火锅"],
    "key_points": ["周六去西湖划船"],
    "keywords": ["西湖", "划船", "火锅"],
    "people": [{"user_id": str(_NIGHT), "name": "小林", "facts": ["喜欢划船"]}],
}


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure ``--help`` time, and ready time and idle RSS of a Telegram + QQ run."""
    await compile_bytecode()
    helps = [await _help_seconds() for _ in range(2 if quick else _HELP_TRIES)]
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        ready_s, telegram_s, qq_s, memory, talked, recalled = await _run_both(
            api, llm, workdir, quick=quick
        )
    async with FakeBotAPI() as api, FakeLLMServer() as llm:  # its own replies: none left over
        night, remembered = await _after_first_night(api, llm, workdir, quick=quick)
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
            note="Telegram + QQ on, before any message; /proc/<pid>/smaps_rollup",
        ),
        Figure("footprint.run.pss_idle", memory["Pss"] / _MIB, "MiB", note="shared pages split"),
        Figure("footprint.run.anonymous", memory["Anonymous"] / _MIB, "MiB", note="heap"),
        Figure(
            "footprint.run.rss_after_answer",
            talked["Rss"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note="3 s after answering on Telegram and QQ: SDK and dictionary loaded",
        ),
        Figure(
            "footprint.run.pss_after_answer",
            talked["Pss"] / _MIB,
            "MiB",
            note="shared pages split",
        ),
        Figure(
            "footprint.run.anonymous_after_answer", talked["Anonymous"] / _MIB, "MiB", note="heap"
        ),
        Figure(
            "footprint.run.rss_after_recall",
            recalled["Rss"] / _MIB,
            "MiB",
            note="3 s after answering a chat with summaries: the dictionary loaded too",
        ),
        Figure(
            "footprint.night.rss_after_answer",
            night["Rss"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note="a second run: the first night summarised yesterday, then an answer from it",
        ),
        Figure(
            "footprint.night.summary_in_prompt",
            float(remembered),
            "bool",
            target=exactly(1),
            note="the answer's system prompt held the summary the night made",
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


async def _remembered(config: Path) -> None:
    """Give the chat of ``_REMEMBERING`` a summary of yesterday, as the nightly job would."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(_REMEMBERING))
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    database = config.parent / "data" / "pacebot.sqlite3"
    async with await SqliteStore.open(database) as store:
        summary = "一起去杭州西湖划船，晚上吃了火锅。"
        await push_day_summary(store, chat, yesterday, summary, keywords=["杭州", "火锅"])


async def _yesterday_talked(config: Path) -> None:
    """Store a chat's talk of yesterday, answered then, with no summary of it yet."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(_NIGHT))
    noon = datetime.now(UTC).replace(hour=4, minute=0, second=0) - timedelta(days=1)
    lines = ["周六去西湖划船吧", "好呀，晚上再吃火锅", "那就这么定了"]
    database = config.parent / "data" / "pacebot.sqlite3"
    talk = [
        IncomingMessage(
            chat=chat,
            message_id=f"night-{number}",
            sender_id=str(_NIGHT),
            sender_name="小林",
            text=text,
            sent_at=noon + timedelta(minutes=number),
        )
        for number, text in enumerate(lines)
    ]
    async with await SqliteStore.open(database) as store:  # talked over then: none waits
        await store.add_context(talk, received_at=noon)


async def _after_first_night(
    api: FakeBotAPI, llm: FakeLLMServer, workdir: Path, *, quick: bool
) -> tuple[dict[str, int], bool]:
    """Start ``pacebot run`` on a store holding yesterday's talk; once the catch-up has
    summarised it, ask about it; return the memory 3 s after the answer, and whether the
    answer's prompt held the night's summary."""
    config = _config(workdir, api, llm, free_port())
    await _yesterday_talked(config)
    llm.reply_json(_SUMMARY)
    llm.reply_json(replies_json("记得，周六西湖"))
    env = {"PACEBOT_LLM_API_KEY": "sk-footprint", "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, env)
    try:
        await llm.wait_for_requests(1, timeout=30)  # the night's summary
        await _summary_kept(config)
        api.push_message(_NIGHT, "昨天我们约了什么来着？")
        await api.wait_for("sendMessage", timeout=30)
        await asyncio.sleep(0.5 if quick else _AFTER_ANSWER_S)
        remembered = str(_SUMMARY["summary"]) in str(llm.requests[-1]["messages"][0]["content"])
        return smaps_rollup(process.pid), remembered
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 20)


async def _summary_kept(config: Path) -> None:
    """Wait until the night's summary of ``_NIGHT`` is on its stack (read from the side)."""
    database = config.parent / "data" / "pacebot.sqlite3"
    chat = str(ChatKey("telegram", ChatKind.PRIVATE, str(_NIGHT)))

    def kept() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            query = "SELECT count(*) FROM prompt_history WHERE chat_key = ? AND is_deleted = 0"
            (count,) = db.execute(query, (chat,)).fetchone()
            return int(count)

    async with asyncio.timeout(30):
        while not await asyncio.to_thread(kept):  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.05)


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
) -> tuple[float, float, float, dict[str, int], dict[str, int], dict[str, int]]:
    """Start ``pacebot run``; return ready, Telegram and QQ times, and idle memory before
    the first answers, after them, and after one that recalled a summary."""
    qq_port = free_port()
    config = _config(workdir, api, llm, qq_port)
    await _remembered(config)
    env = {"PACEBOT_LLM_API_KEY": "sk-footprint", "TELEGRAM_BOT_TOKEN": api.token}
    started = time.perf_counter()
    process = await start_run(config, env)  # logs only warnings: its stderr stays small
    onebot = FakeOneBot(f"ws://127.0.0.1:{qq_port}/onebot/v11/ws")
    try:
        polling, listening = await asyncio.gather(
            _first_poll(api, started), port_open(qq_port, started)
        )
        await onebot.connect_when_listening()
        await asyncio.sleep(0.5 if quick else _IDLE_S)
        memory = smaps_rollup(process.pid)
        llm.reply_json(replies_json("你好呀"))
        llm.reply_json(replies_json("你好呀"))
        api.push_message(_CHATTER, "在吗？昨天说的那家火锅店叫什么来着")
        await onebot.send_private_message(_CHATTER, "在吗？周末去爬山的人定了吗")
        await api.wait_for("sendMessage", timeout=30)
        await onebot.wait_for_call("send_private_msg", within_s=30)
        await asyncio.sleep(0.5 if quick else _AFTER_ANSWER_S)
        talked = smaps_rollup(process.pid)
        llm.reply_json(replies_json("记得，西湖"))
        api.push_message(_REMEMBERING, "上次去杭州吃的那家火锅叫什么？")
        await api.wait_for(lambda: len(api.calls_to("sendMessage")) >= 2, timeout=30)
        await asyncio.sleep(0.5 if quick else _AFTER_ANSWER_S)
        recalled = smaps_rollup(process.pid)
    finally:
        await onebot.close()
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 20)
    return max(polling, listening), polling, listening, memory, talked, recalled


async def _first_poll(api: FakeBotAPI, started: float) -> float:
    await api.wait_for("getUpdates", timeout=30)
    return time.perf_counter() - started


async def port_open(port: int, started: float) -> float:
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


def smaps_rollup(pid: int) -> dict[str, int]:
    """Return the fields of ``/proc/<pid>/smaps_rollup`` in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) * 1024
    return fields
