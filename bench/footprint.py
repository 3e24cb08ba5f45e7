"""Footprint of the real process: ``pacebot --help``, ``pacebot run`` ready and idle RSS.

``pacebot run`` starts as an operator starts it, a process of its own with Telegram and
QQ enabled: PTB polls the fake Bot API, nonebot serves the reverse WebSocket on a free
port. Ready is the later of the first ``getUpdates`` the fake server sees and the moment
the QQ port accepts a connection, counted from the spawn. Idle RSS is read from
``/proc/<pid>/smaps_rollup`` once the process has been ready and quiet for a moment
(``Rss``, and ``Pss``, which splits shared library pages among the processes using them),
and again 3 s after it has answered a message on each platform (Telegram through PTB, QQ
through a fake NapCat on the reverse WebSocket) through the fake LLM: the ``openai`` SDK
loads with the first answer, so the second figure is what a bot that has talked holds,
and the one the memory target (docs/targets.md) means. Then a third chat, one with a day
summary on its prompt stack, asks about it: keyword recall cuts the question and searches
the index (a chat without summaries is not searched), and RSS is read a third time, 3 s
later.
``pacebot --help`` is timed from spawn to exit, the best of a few tries.

Three more runs, each a process of its own, give the rows of a bot as it lives:

- **after the first night**: Telegram and QQ, and a chat that talked yesterday. The
  nightly catch-up at start summarises that day with a real nightly run (the fake LLM
  writes the summary); the two platforms are answered, then the chat asks about
  yesterday and is answered from the summary the night made. RSS 3 s later.
- **with tools**: Telegram and QQ, and ``[tools]`` with one stdio MCP server (the test
  server of ``fakes/mcp_server.py``). A Telegram question is answered through a tool
  call, then QQ is answered. RSS 3 s later; the server's own process is reported beside
  it, not in it.
- **with tools and the official QQ bot**: the same with ``[qq_official]`` on too (the QQ
  Open Platform's fake), which is answered as well.

pacebot's own modules are compiled to bytecode first, as ``pip install`` does
(:func:`bench.rig.compile_bytecode`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.report import Figure, at_most, exactly
from bench.rig import REPO, compile_bytecode
from bench.stats import median
from bot.models import ChatKey, ChatKind
from fakes.bot_api import FakeBotAPI
from fakes.harness import free_port, push_day_summary, replies_json, start_run
from fakes.mcp_server import WEATHER_CANARY
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid
from fakes.store_rows import add, answered_batch, incoming
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
_QQBOT_USER = openid("footprint-user")
_YESTERDAY = (  # what the remembering chat said the day before the run, for the night
    "周末我们去杭州了",
    "在西湖划船，风挺大",
    "晚上吃了一家火锅，叫老码头",
    "下次还想去",
)
_NIGHT_SUMMARY = "周末去杭州西湖划船，晚上吃了老码头火锅。"


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure ``--help`` time, and ready time and idle RSS of a Telegram + QQ run."""
    await compile_bytecode()
    helps = [await _help_seconds() for _ in range(2 if quick else _HELP_TRIES)]
    quiet_s = 0.5 if quick else _AFTER_ANSWER_S
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        ready_s, telegram_s, qq_s, memory, talked, recalled = await _run_both(
            api, llm, workdir, quick=quick
        )
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        night, recalled_night = await _run_first_night(api, llm, workdir, quiet_s=quiet_s)
    async with FakeBotAPI() as api, FakeLLMServer() as llm:
        tools = await _run_with_tools(api, llm, workdir, qqbot=None, quiet_s=quiet_s)
    async with FakeBotAPI() as api, FakeLLMServer() as llm, FakeQQOpenPlatform() as qqbot:
        everything = await _run_with_tools(api, llm, workdir, qqbot=qqbot, quiet_s=quiet_s)
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
            "footprint.night.rss_after_recall",
            night["Rss"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note="a night summarised at start, both platforms answered, then a recall of it",
        ),
        Figure(
            "footprint.night.recalled",
            float(recalled_night),
            "yes",
            target=exactly(1.0),
            note="the recall's request held the summary the night made",
        ),
        *_tools_figures("tools", tools, "Telegram, QQ, one stdio MCP server"),
        *_tools_figures("tools_qqbot", everything, "the official QQ bot too"),
    ]


def _tools_figures(row: str, run: dict[str, float], which: str) -> list[Figure]:
    chats = 3 if row == "tools_qqbot" else 2
    return [
        Figure(
            f"footprint.{row}.rss_after_answer",
            run["Rss"] / _MIB,
            "MiB",
            target=at_most(RSS_TARGET_MIB),
            note=f"{which}; 3 s after a tool call and the other chats answered",
        ),
        Figure(
            f"footprint.{row}.server_rss",
            run["server"] / _MIB,
            "MiB",
            note="the MCP server's own process, beside pacebot's",
        ),
        Figure(
            f"footprint.{row}.answered",
            run["answered"],
            "chats",
            target=exactly(chats),
            note="Telegram through the tool, QQ" + (", the official QQ bot" if chats == 3 else ""),
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


def _config(
    workdir: Path, api: FakeBotAPI, llm: FakeLLMServer, qq_port: int, *, more: str = ""
) -> Path:
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
{more}""",
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
    started = time.perf_counter()
    async with _pacebot(config, api, qq_port) as (process, onebot):
        polling, listening = await asyncio.gather(
            _first_poll(api, started), port_open(qq_port, started)
        )
        await onebot.connect_when_listening()
        await asyncio.sleep(0.5 if quick else _IDLE_S)
        memory = smaps_rollup(process.pid)
        await _answer_both(api, llm, onebot)
        await asyncio.sleep(0.5 if quick else _AFTER_ANSWER_S)
        talked = smaps_rollup(process.pid)
        llm.reply_json(replies_json("记得，西湖"))
        api.push_message(_REMEMBERING, "上次去杭州吃的那家火锅叫什么？")
        await api.wait_for(lambda: len(api.calls_to("sendMessage")) >= 2, timeout=30)
        await asyncio.sleep(0.5 if quick else _AFTER_ANSWER_S)
        recalled = smaps_rollup(process.pid)
    return max(polling, listening), polling, listening, memory, talked, recalled


async def _yesterday_said(config: Path) -> None:
    """Store what the chat of ``_REMEMBERING`` said yesterday, answered, not summarised."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(_REMEMBERING))
    noon = datetime.now(UTC) - timedelta(days=1)
    database = config.parent / "data" / "pacebot.sqlite3"
    said = [
        incoming(chat, str(900_000 + n), text, sent_at=noon + timedelta(minutes=n))
        for n, text in enumerate(_YESTERDAY, start=1)
    ]
    async with await SqliteStore.open(database) as store:
        await add(store, *said)
        # answered yesterday, so that nothing of it waits for an answer at the start
        await answered_batch(store, chat, [], now=noon + timedelta(hours=1))


async def _run_first_night(
    api: FakeBotAPI, llm: FakeLLMServer, workdir: Path, *, quiet_s: float
) -> tuple[dict[str, int], bool]:
    """Start a run whose catch-up summarises yesterday; answer both platforms, then the
    chat that talked yesterday asks about it. Return memory 3 s later, and whether the
    recall's request held the night's summary."""
    qq_port = free_port()
    config = _config(workdir, api, llm, qq_port)
    await _yesterday_said(config)
    summary = {"summary": _NIGHT_SUMMARY, "topics": ["旅行"], "keywords": ["杭州", "火锅"]}
    llm.reply_json(summary)  # the nightly catch-up's call comes first, at start
    async with _pacebot(config, api, qq_port) as (process, onebot):
        await _up(api, onebot, qq_port)
        await llm.wait_for_requests(1, timeout=30)  # the night's summary call
        await _summary_kept(config, _REMEMBERING)
        await _answer_both(api, llm, onebot)
        llm.reply_json(replies_json("老码头，在西湖边上"))
        api.push_message(_REMEMBERING, "昨天说的那家火锅店叫什么来着？")
        await api.wait_for(lambda: len(api.calls_to("sendMessage")) >= 2, timeout=30)
        await asyncio.sleep(quiet_s)
        memory = smaps_rollup(process.pid)
    recalled = _NIGHT_SUMMARY in json.dumps(llm.requests[-1], ensure_ascii=False)
    return memory, recalled


async def _summary_kept(config: Path, chat_id: int) -> None:
    """Wait until the night's summary of a Telegram private chat is on its stack, read
    from the side (the run writes it)."""
    database = config.parent / "data" / "pacebot.sqlite3"
    chat = str(ChatKey("telegram", ChatKind.PRIVATE, str(chat_id)))

    def kept() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            query = "SELECT count(*) FROM prompt_history WHERE chat_key = ? AND is_deleted = 0"
            (count,) = db.execute(query, (chat,)).fetchone()
            return int(count)

    async with asyncio.timeout(30):
        while not await asyncio.to_thread(kept):  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.05)


async def _run_with_tools(
    api: FakeBotAPI,
    llm: FakeLLMServer,
    workdir: Path,
    *,
    qqbot: FakeQQOpenPlatform | None,
    quiet_s: float,
) -> dict[str, float]:
    """Start a run with Telegram, QQ and one stdio MCP server, and the official QQ bot
    too when ``qqbot`` is given; answer a Telegram question through a tool, then QQ (and
    the official QQ bot). Return pacebot's RSS 3 s later, the server's, and how many of
    the chats were answered."""
    qq_port = free_port()
    more = _TOOLS.format(python=sys.executable) + (_qq_official(qqbot) if qqbot else "")
    config = _config(workdir, api, llm, qq_port, more=more)
    secret = {"QQ_BOT_SECRET": qqbot.secret} if qqbot is not None else {}
    answered: list[bool] = []
    async with _pacebot(config, api, qq_port, secret) as (process, onebot):
        await _up(api, onebot, qq_port)
        llm.call_tool("weather", {"city": "杭州"})
        llm.reply_json(replies_json("杭州今天晴，21 度"))
        api.push_message(_CHATTER, "杭州今天天气怎么样？")
        await api.wait_for("sendMessage", timeout=30)
        llm.reply_json(replies_json("在呢"))
        await onebot.send_private_message(_CHATTER, "在吗？")
        answered += [
            any(WEATHER_CANARY in json.dumps(r, ensure_ascii=False) for r in llm.requests),
            bool(await onebot.wait_for_call("send_private_msg", within_s=30)),
        ]
        if qqbot is not None:
            await qqbot.wait_until(lambda: qqbot.connected, within_s=30)
            llm.reply_json(replies_json("你好呀"))
            await qqbot.c2c_message(_QQBOT_USER, "你好")
            answered.append(
                bool(await qqbot.wait_until(lambda: qqbot.sent_to(_QQBOT_USER), within_s=30))
            )
        await asyncio.sleep(quiet_s)
        rss = smaps_rollup(process.pid)["Rss"]
        server = sum(smaps_rollup(pid)["Rss"] for pid in children(process.pid))
    return {"Rss": rss, "server": server, "answered": float(sum(answered))}


_TOOLS = """
[tools]
enabled = true

[[tools.mcp]]
name = "weather"
command = "{python}"
args = ["-m", "fakes.mcp_server"]
allow = ["weather"]
"""


def _qq_official(qqbot: FakeQQOpenPlatform) -> str:
    """The ``[qq_official]`` table of a bot on the QQ Open Platform's fake."""
    return f"""
[qq_official]
enabled = true
app_id = "{qqbot.app_id}"
api_base = "{qqbot.api_base}"
auth_base = "{qqbot.auth_url}"
"""


async def _answer_both(api: FakeBotAPI, llm: FakeLLMServer, onebot: FakeOneBot) -> None:
    """Have a Telegram chat and a QQ chat each answered once."""
    llm.reply_json(replies_json("你好呀"))
    llm.reply_json(replies_json("你好呀"))
    api.push_message(_CHATTER, "在吗？昨天说的那家火锅店叫什么来着")
    await onebot.send_private_message(_CHATTER, "在吗？周末去爬山的人定了吗")
    await api.wait_for("sendMessage", timeout=30)
    await onebot.wait_for_call("send_private_msg", within_s=30)


@contextlib.asynccontextmanager
async def _pacebot(
    config: Path, api: FakeBotAPI, qq_port: int, env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, FakeOneBot]]:
    """Run ``pacebot run -c config`` (with ``env`` beside the LLM key and the Telegram
    token) and a OneBot client for its QQ port; stop both after."""
    secrets = {"PACEBOT_LLM_API_KEY": "sk-footprint", "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, {**secrets, **(env or {})})  # logs only warnings
    onebot = FakeOneBot(f"ws://127.0.0.1:{qq_port}/onebot/v11/ws")
    try:
        yield process, onebot
    finally:
        await onebot.close()
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), 20)


async def _up(api: FakeBotAPI, onebot: FakeOneBot, qq_port: int) -> None:
    """Wait until the run polls Telegram and ``onebot`` is connected to its QQ port."""
    await asyncio.gather(api.wait_for("getUpdates", timeout=30), port_open(qq_port, 0.0))
    await onebot.connect_when_listening()


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


def children(pid: int) -> list[int]:
    """Return the processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found
