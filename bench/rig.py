"""What several benchmarks share: a clock tied to the loop, a stall watch, load pacing."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.dataset import CHAT_LINES
from bot.models import ChatKey, ChatMessage, Completion, IncomingMessage, ToolSpec
from fakes.openai_api import FakeLLMServer

REPO = Path(__file__).resolve().parent.parent
_PACKAGES = ("bot", "adapters", "storage", "scheduler")


async def compile_bytecode(source: Path = REPO) -> None:
    """Compile the bot's modules in ``source`` to bytecode, as ``pip install`` does.

    A checkout run with ``PYTHONDONTWRITEBYTECODE`` would compile some 70 modules from
    source at every start (0.2–0.4 s), which no installed bot does.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "compileall",
        "-q",
        *_PACKAGES,
        cwd=source,
        stdout=asyncio.subprocess.DEVNULL,
    )
    await process.wait()


def answer_afresh(llm: FakeLLMServer, plan: Sequence[Mapping[str, Any]]) -> None:
    """Answer every request with ``plan``, each text numbered by the call (``在的3``).

    A model's words differ from one answer to the next; the same words again would be
    dropped as a repeat of the bot's last messages, which no real chat would show.
    """
    numbers = itertools.count(1)

    async def next_answer(_request: dict[str, Any]) -> None:
        number = next(numbers)
        replies = [
            {**item, "content": f"{item['content']}{number}"} if "content" in item else dict(item)
            for item in plan
        ]
        llm.reply(json.dumps({"replies": replies}))

    llm.before_answer = next_answer


def fresh_path(workdir: Path, name: str) -> Path:
    """Return a path under ``workdir`` no earlier run of this invocation has used."""
    return workdir / f"{name}-{time.time_ns()}"


class LoopClock:
    """Aware wall-clock datetimes that advance exactly with the event loop's clock.

    Handing ``now`` to the core lets a benchmark turn a reply's ``due_at`` into the loop
    time the sender should act at, with no drift between the two clocks.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._origin_loop_s = self._loop.time()
        self._origin = datetime.now(UTC)

    def now(self) -> datetime:
        """Return the current time."""
        return self._origin + timedelta(seconds=self._loop.time() - self._origin_loop_s)

    def loop_time(self, moment: datetime) -> float:
        """Return the loop time of ``moment``."""
        return self._origin_loop_s + (moment - self._origin).total_seconds()


@dataclass
class StallWatch:
    """Measure how long the event loop goes without running a ready task.

    A ticker sleeps ``tick_s`` again and again; whatever a tick takes beyond that is a
    stall: time the loop spent in one callback (or in a thread holding the GIL).
    """

    tick_s: float = 0.001
    stalls_s: list[float] = field(default_factory=list)

    @property
    def longest_s(self) -> float:
        return max(self.stalls_s, default=0.0)

    def reset(self) -> None:
        """Forget the stalls seen so far."""
        self.stalls_s.clear()

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[StallWatch]:
        """Tick in the background while the body runs."""
        task = asyncio.create_task(self._tick(), name="bench:stall-watch")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.tick_s)
            self.stalls_s.append(max(0.0, loop.time() - before - self.tick_s))


class NoLLM:
    """An LLM for benchmarks that must not call one: it fails loudly if they do."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        msg = "this benchmark must not call the LLM"
        raise AssertionError(msg)


class MessageMaker:
    """Make realistic normalised messages, numbered per chat."""

    def __init__(self, rng: random.Random, *, now: Callable[[], datetime]) -> None:
        self._rng = rng
        self._now = now
        self._numbers = itertools.count(1)

    def message(self, chat: ChatKey) -> IncomingMessage:
        """Return the next message in ``chat``; groups sometimes address the bot."""
        addressed = not chat.is_group or self._rng.random() < 0.3
        return IncomingMessage(
            chat=chat,
            message_id=str(next(self._numbers)),
            sender_id=str(self._rng.randrange(1000, 1010)),
            sender_name=self._rng.choice(("小明", "阿杰", "Lily", "老王")),
            text=self._rng.choice(CHAT_LINES),
            sent_at=self._now(),
            addresses_bot=addressed,
            chat_title="周末爬山群" if chat.is_group else None,
        )


async def sleep_until(deadline: float) -> None:
    """Sleep until loop time ``deadline`` (at once if it has passed)."""
    loop = asyncio.get_running_loop()
    delay = deadline - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


async def open_loop(
    arrivals: Sequence[float], start: Callable[[int, float], None], *, tick_s: float = 0.001
) -> None:
    """Call ``start(index, arrival)`` for each loop-time arrival once it is due.

    The load does not wait for the system: when the loop falls behind, every overdue
    arrival starts at once, and its latency still counts from when it was due.
    """
    loop = asyncio.get_running_loop()
    index = 0
    while index < len(arrivals):
        now = loop.time()
        while index < len(arrivals) and arrivals[index] <= now:
            start(index, arrivals[index])
            index += 1
        if index < len(arrivals):
            await sleep_until(min(arrivals[index], now + tick_s))
