"""The QQ loss window: how long a OneBot event lives only in the bot's memory.

OneBot v11 has no acknowledgement and NapCat never sends an event twice, so an event
``pacebot run`` has read from the reverse WebSocket but not yet committed is lost if the
process dies then (docs/reliability.md). This benchmark measures that window on a real
``pacebot run`` process with QQ enabled, fed by the fake OneBot client:

- **stored**: bursts of 1, 10 and 100 events written at once; for each event, the time
  from its write to the moment a second SQLite connection sees it committed (polled
  every millisecond, so a figure may be up to a millisecond late), and for each burst the
  time from its last write until all of it is committed: a SIGKILL after that loses
  nothing of it.
- **killed**: a burst of 100 written at once and SIGKILL a set time after its last write
  (0 to 100 ms); the events lost, read from the database the dead process left.

``PACEBOT_BENCH_SOURCE=<checkout>`` runs the bot from another checkout, to measure an
earlier version the same way (the fakes and this driver stay the current ones)::

    git worktree add /tmp/before 6cd278c   # the last version storing event by event
    PACEBOT_BENCH_SOURCE=/tmp/before python -m bench qqwindow
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import Figure, spread_figures
from bench.rig import REPO, compile_bytecode, fresh_path
from bench.stats import Spread, median
from fakes.harness import free_port, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer

_POLL_S = 0.001
_SETTLE_S = 0.3  # after a burst is stored, before the next: its batch opens and closes


@dataclass(frozen=True, slots=True)
class Scale:
    bursts: tuple[tuple[int, int], ...]  # (events per burst, rounds)
    kill_after_ms: tuple[int, ...]
    kill_rounds: int


FULL = Scale(
    bursts=((1, 30), (10, 15), (100, 10)), kill_after_ms=(0, 10, 25, 50, 100), kill_rounds=3
)
QUICK = Scale(bursts=((1, 2), (10, 2)), kill_after_ms=(0, 50), kill_rounds=1)


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Measure how long OneBot events wait to be committed, and what a SIGKILL loses."""
    scale = QUICK if quick else FULL
    source = _source()
    await compile_bytecode(source)  # as installed: restarts stay fast
    async with FakeLLMServer() as llm:
        bot = Bot(source, workdir, llm)
        try:
            await bot.start()
            figures = [await _stored(bot, size, rounds) for size, rounds in scale.bursts]
            kills = [
                await _killed(bot, after_ms, scale.kill_rounds) for after_ms in scale.kill_after_ms
            ]
        finally:
            await bot.stop()
    return [*itertools.chain.from_iterable(figures), *kills]


def _source() -> Path:
    """The checkout the bot runs from: this one, or ``PACEBOT_BENCH_SOURCE``."""
    return Path(os.environ.get("PACEBOT_BENCH_SOURCE") or REPO).resolve()


@dataclass
class Bot:
    """``pacebot run`` with QQ only, the fake OneBot client and a reader of its database."""

    source: Path
    workdir: Path
    llm: FakeLLMServer
    port: int = field(default_factory=free_port)
    process: asyncio.subprocess.Process | None = None
    users: Iterator[int] = field(default_factory=lambda: itertools.count(20_001))

    def __post_init__(self) -> None:
        self.data = fresh_path(self.workdir, "qqwindow")
        self.data.mkdir()
        self.onebot = FakeOneBot(
            f"ws://127.0.0.1:{self.port}/onebot/v11/ws", heartbeat_interval_s=0
        )
        self.config = self.data / "config.toml"
        self.config.write_text(
            f"""
[bot]
data_dir = "{self.data / "data"}"
log_level = "WARNING"

[llm]
base_url = "{self.llm.base_url}"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[qq]
enabled = true
port = {self.port}
""",
            encoding="utf-8",
        )

    @property
    def where(self) -> str:
        return "this checkout" if self.source == REPO else str(self.source)

    @property
    def database(self) -> Path:
        return self.data / "data" / "pacebot.sqlite3"

    async def start(self) -> None:
        env = {"PYTHONPATH": str(self.source), "PACEBOT_LLM_API_KEY": "sk-window"}
        self.process = await start_run(self.config, env, cwd=self.source)  # warnings only
        await self.onebot.connect_when_listening()
        await self._warm_up()

    async def _warm_up(self) -> None:
        """Have one message answered: the first LLM call loads the SDK, which stalls the
        loop once; the figures are of a bot that has talked."""
        asked = len(self.llm.requests)
        await self.burst(1)
        await self.llm.wait_for_requests(asked + 1, timeout=30)
        await asyncio.sleep(_SETTLE_S)

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        self.process = None
        await self.onebot.close()

    async def stop(self) -> None:
        await self.onebot.close()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(self.process.wait(), 30)
            self.process = None

    async def burst(self, size: int) -> dict[str, float]:
        """Write ``size`` events of one private chat at once; return when each was written."""
        user = next(self.users)
        loop = asyncio.get_running_loop()

        async def one(n: int) -> tuple[str, float]:
            message_id = await self.onebot.send_private_message(user, f"第{n}条 burst")
            return str(message_id), loop.time()

        return dict(await asyncio.gather(*(one(n) for n in range(size))))

    def stored(self, message_ids: set[str]) -> set[str]:
        """Which of ``message_ids`` are committed, as another connection sees them."""
        with contextlib.closing(sqlite3.connect(self.database, timeout=5)) as db:
            rows = db.execute("SELECT message_id FROM messages WHERE chat_key LIKE 'qq:%'")
            return message_ids & {message_id for (message_id,) in rows}


async def _stored(bot: Bot, size: int, rounds: int) -> list[Figure]:
    """Per event: write → committed; per burst: last write → all of it committed."""
    loop = asyncio.get_running_loop()
    waits: list[float] = []
    tails: list[float] = []
    with contextlib.closing(sqlite3.connect(bot.database, timeout=5)) as db:
        for _ in range(rounds):
            (newest,) = db.execute("SELECT coalesce(max(rowid), 0) FROM messages").fetchone()
            written = await bot.burst(size)
            seen: dict[str, float] = {}
            async with asyncio.timeout(30):
                while len(seen) < size:
                    rows = db.execute(
                        "SELECT rowid, message_id FROM messages WHERE rowid > ?", (newest,)
                    ).fetchall()
                    now = loop.time()
                    for rowid, message_id in rows:
                        newest = max(newest, rowid)
                        if message_id in written:
                            seen.setdefault(message_id, now)
                    await asyncio.sleep(_POLL_S)
            waits += [seen[message_id] - at for message_id, at in written.items()]
            tails.append(max(seen.values()) - max(written.values()))
            await asyncio.sleep(_SETTLE_S)
    name = f"qqwindow.burst{size}"
    return [
        *spread_figures(f"{name}.stored", Spread.of(waits).scaled(1000), "ms"),
        Figure(
            f"{name}.all_stored_after_last",
            median(tails) * 1000,
            "ms",
            note=f"median of {rounds} bursts; max {max(tails) * 1000:.1f} ms",
        ),
    ]


async def _killed(bot: Bot, after_ms: int, rounds: int) -> Figure:
    """Events of a 100-event burst lost to a SIGKILL ``after_ms`` after its last write."""
    lost: list[int] = []
    for _ in range(rounds):
        written = await bot.burst(100)
        await asyncio.sleep(after_ms / 1000)
        await bot.kill()
        lost.append(len(written) - len(bot.stored(set(written))))
        await bot.start()
        await asyncio.sleep(_SETTLE_S)
    return Figure(
        f"qqwindow.kill_{after_ms}ms_after_100.lost",
        median(lost),
        "events",
        note=f"of 100, median of {rounds} kills: {lost}; the bot ran from {bot.where}",
    )
