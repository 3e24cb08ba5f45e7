"""A recording platform for pipeline tests, and a harness that runs the real core.

The harness uses the real parts everywhere but the chat platform: a SQLite file, the
real ``openai`` SDK against :class:`~fakes.openai_api.FakeLLMServer`, and the real
pipeline. Wire tests for Telegram live in ``test_telegram*.py`` and ``test_e2e_telegram.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import socket
import sys
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.app import Core, running_bot, running_core, utc_now
from bot.config.model import Config, parse_config
from bot.conversation import Phase
from bot.errors import MessageRefused, PlatformError
from bot.inbox import Inbox
from bot.memory.stack import render_summary
from bot.models import ChatKey, ChatKind, DaySummary, IncomingMessage
from bot.ops import Ops
from bot.pipeline import Pipeline
from bot.ports import PacingLimits, Platform
from bot.replies.items import ItemKind, Outgoing, Reaction, Text, Voice
from bot.retries import DEFAULT_RETRIES, Retries
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

if TYPE_CHECKING:
    from adapters.openai_audio import OpenAIAudio

PRIVATE = ChatKey("test", ChatKind.PRIVATE, "42")
GROUP = ChatKey("test", ChatKind.GROUP, "-100")
TEST_KEY = "sk-test-0123456789abcdef"


CLOCK_CHECK_S = 0.01
"""How often the harness's initiative re-reads the clock: a test's jump is seen at once."""

UNPACED = PacingLimits(chat_interval_s=0.0, group_per_minute=1000, overall_per_s=1000)


@dataclass(frozen=True, slots=True)
class Sent:
    chat: ChatKey
    text: str
    reply_to: str | None
    at: float  # loop time


@dataclass
class RecordingPlatform:
    """A ``Platform`` that records sends and typing with their loop times."""

    name: str = "test"
    text_limit: int = 4096
    typing_refresh_s: float | None = 0.02
    limits: PacingLimits = field(default_factory=lambda: UNPACED)
    sent: list[Sent] = field(default_factory=list)
    typing: list[tuple[ChatKey, float]] = field(default_factory=list)
    failures: list[PlatformError] = field(default_factory=list)
    send_delay_s: float = 0.0
    reactions: list[tuple[ChatKey, str, str]] = field(default_factory=list)  # chat, emoji, to
    voices: list[tuple[ChatKey, Voice]] = field(default_factory=list)  # spoken, with audio
    shown: list[ItemKind] = field(default_factory=list)  # what each typing call announced
    delivers: frozenset[ItemKind] = frozenset({ItemKind.CONTENT, ItemKind.REACT})
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(9000))

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        return self.delivers

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        if self.send_delay_s:
            await asyncio.sleep(self.send_delay_s)
        if self.failures:
            raise self.failures.pop(0)
        if isinstance(item, Reaction) and item.kind in self.delivers:
            self.reactions.append((chat, item.emoji, item.to))
            return None
        if isinstance(item, Voice) and item.kind in self.delivers and item.audio:
            self.voices.append((chat, item))
            return str(next(self._ids))
        if not isinstance(item, Text):
            msg = f"a {item.kind} item cannot be recorded"
            raise MessageRefused(msg)
        self.sent.append(Sent(chat, item.content, item.reply_to, asyncio.get_running_loop().time()))
        return str(next(self._ids))

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        self.typing.append((chat, asyncio.get_running_loop().time()))
        self.shown.append(kind)

    def texts(self, chat: ChatKey | None = None) -> list[str]:
        return [s.text for s in self.sent if chat is None or s.chat == chat]

    async def wait_for_sends(self, n: int, *, within_s: float = 3.0) -> list[Sent]:
        """Wait until ``n`` messages were sent; fail after ``within_s`` seconds."""
        async with asyncio.timeout(within_s):
            while len(self.sent) < n:  # noqa: ASYNC110 - polling a plain list kept by the fake
                await asyncio.sleep(0.005)
        return list(self.sent)


FAST_PACING = {
    "debounce_min_s": 0.05,
    "debounce_max_s": 0.05,
    "max_wait_s": 1.0,
    "max_delay_s": 1.0,
    "typing_chars_per_s": 1000.0,
}


def make_config(tmp_path: Path, llm_url: str, **sections: Any) -> Config:
    """Return a config for tests: fast pacing, the fake LLM, data under ``tmp_path``; each
    table of ``sections`` adds to the defaults, an array of tables (``profiles``) is
    taken as it is."""
    data: dict[str, Any] = {
        "bot": {"name": "小满", "aliases": ["xiaoman"], "data_dir": str(tmp_path / "data")},
        "pacing": dict(FAST_PACING),
        "llm": {"base_url": llm_url, "timeout_s": 2.0, "max_retries": 0},
    }
    for name, values in sections.items():
        data[name] = values if isinstance(values, list) else {**data.get(name, {}), **values}
    return parse_config(data, base_dir=tmp_path)


class Draws:
    """The gate's random draws, given in advance: each call takes the next one (the last
    one repeats)."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


@dataclass
class Harness:
    config: Config
    core: Core
    platform: RecordingPlatform
    llm: FakeLLMServer
    now: Callable[[], datetime] = utc_now  # the core's clock: messages are sent on it
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def pipeline(self) -> Pipeline:
        return self.core.pipeline

    @property
    def inbox(self) -> Inbox:
        return self.core.inbox

    @property
    def ops(self) -> Ops:
        return self.core.ops

    def message(
        self,
        text: str,
        *,
        chat: ChatKey = PRIVATE,
        sender_id: str = "7",
        sender_name: str = "小明",
        addresses_bot: bool | None = None,
        message_id: str | None = None,
        chat_title: str | None = None,
    ) -> IncomingMessage:
        return IncomingMessage(
            chat=chat,
            message_id=message_id or str(next(self._ids)),
            sender_id=sender_id,
            sender_name=sender_name,
            text=text,
            sent_at=self.now(),
            addresses_bot=(not chat.is_group) if addresses_bot is None else addresses_bot,
            chat_title=chat_title,
        )

    async def say(self, text: str, **kwargs: Any) -> IncomingMessage:
        message = self.message(text, **kwargs)
        await self.inbox.receive_many((message,))
        return message

    async def command(self, text: str, *, chat: ChatKey = PRIVATE, sender_id: str = "7") -> str:
        """Send a command as ``sender_id`` in ``chat``; return the bot's answer to it."""
        before = len(self.platform.sent)
        await self.say(text, chat=chat, sender_id=sender_id, addresses_bot=False)
        sent = await self.platform.wait_for_sends(before + 1)
        return sent[before].text

    async def settle(self) -> None:
        """Answer everything waiting and wait until every reply is out."""
        await self.inbox.drain()

    async def catch_up(self) -> None:
        """After the test moved its clock: let initiative see the time (it re-reads the clock
        every ``CLOCK_CHECK_S``) and hand over what is due, then settle."""
        await asyncio.sleep(2 * CLOCK_CHECK_S)
        await self.settle()


@contextlib.asynccontextmanager
async def harness(
    tmp_path: Path,
    llm_server: FakeLLMServer,
    *,
    platform: RecordingPlatform | None = None,
    config: Config | None = None,
    retries: Retries = DEFAULT_RETRIES,
    now: Callable[[], datetime] = utc_now,
    draw: Callable[[], float] = random.random,
    tool_env: Mapping[str, str] | None = None,
    **sections: dict[str, Any],
) -> AsyncIterator[Harness]:
    """Run the real core (SQLite, openai SDK, pipeline) with a recording platform, on the
    clock ``now`` (e.g. :meth:`fakes.clock.Clock.now`), with the random draw ``draw`` (the
    gate's against ``talk_value``, the openers' moments; e.g. :class:`Draws`); ``tool_env``
    holds the values of the variables ``[tools]`` names."""
    config = config or make_config(tmp_path, llm_server.base_url, **sections)
    platform = platform or RecordingPlatform()
    platforms: dict[str, Platform] = {platform.name: platform}
    embeddings_key = TEST_KEY if config.memory.embeddings.enabled else None
    secrets = Secrets(
        llm_api_key=TEST_KEY,
        splitter_api_key=TEST_KEY,
        embeddings_api_key=embeddings_key,
        voice_api_key=TEST_KEY if config.voice.enabled else None,
        tool_values=tuple((tool_env or {}).items()),
    )
    async with running_core(
        config,
        secrets,
        platforms,
        nightly=False,
        retries=retries,
        now=now,
        draw=draw,
        clock_check_s=CLOCK_CHECK_S,
    ) as core:
        yield Harness(config, core, platform, llm_server, now)


class RecordingSink:
    """A ``MessageSink`` that remembers what adapters gave it and lets tests wait for it.

    ``delay_s`` makes each hand-over slow to store; the first ``failures`` hand-overs
    fail, and ``handovers`` keeps how many messages each one held.
    """

    def __init__(self, *, delay_s: float = 0.0, failures: int = 0) -> None:
        self.received: list[IncomingMessage] = []
        self.edits: list[tuple[ChatKey, str, str]] = []
        self.handovers: list[int] = []
        self.ready: list[str] = []
        self._delay_s = delay_s
        self._failures = failures
        self._changed = asyncio.Condition()

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        self.handovers.append(len(messages))
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        if self._failures:
            self._failures -= 1
            raise RuntimeError("store is down")
        self.received += messages
        async with self._changed:
            self._changed.notify_all()

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        self.edits.append((chat, message_id, text))

    def platform_ready(self, platform: str) -> None:
        self.ready.append(platform)

    async def wait_for(self, count: int, *, within_s: float = 2.0) -> list[IncomingMessage]:
        """Wait until ``count`` messages arrived; return them all."""
        async with asyncio.timeout(within_s), self._changed:
            await self._changed.wait_for(lambda: len(self.received) >= count)
        return list(self.received)


def telegram_config(
    tmp_path: Path, llm_server: FakeLLMServer, api: FakeBotAPI, **sections: Any
) -> Config:
    """Return a test config with Telegram enabled against the fake Bot API."""
    telegram = {"enabled": True, "api_base_url": api.base_url}
    return make_config(tmp_path, llm_server.base_url, telegram=telegram, **sections)


@contextlib.asynccontextmanager
async def telegram_bot(config: Config, api: FakeBotAPI) -> AsyncIterator[Core]:
    """Run pacebot's Telegram (and whatever else ``config`` enables) against the fake
    Bot API, with every key a test config may need; yield once polling has begun."""
    secrets = Secrets(
        TEST_KEY,
        TEST_KEY,
        telegram_token=api.token,
        voice_api_key=TEST_KEY if config.voice.enabled else None,
    )
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates", timeout=10)
        yield core


def speech_client(llm: FakeLLMServer, *, timeout_s: float = 10.0) -> OpenAIAudio:
    """Return the real audio client pointed at the fake server's audio endpoints."""
    from adapters.openai_audio import OpenAIAudio

    return OpenAIAudio(
        base_url=llm.base_url,
        api_key=TEST_KEY,
        stt_model="whisper-1",
        tts_model="tts-1",
        tts_voice="alloy",
        timeout_s=timeout_s,
        max_retries=0,
    )


def user_prompt(request: dict[str, Any]) -> str:
    """Return the user message of a recorded LLM request."""
    return str(request["messages"][-1]["content"])


def replies_json(*contents: str, delay: float = 0.0, **extra: Any) -> dict[str, Any]:
    """Build a reply plan with the same delay between replies."""
    return {"replies": [{"content": c, "send_delay_seconds": delay, **extra} for c in contents]}


PORTS_FROM = 20000
"""The first port :func:`free_port` hands out: below the kernel's ephemeral range (Linux:
32768-60999), so no ``bind(0)`` and no outgoing connection is ever given one of them."""
PORTS_PER_WORKER = 1000
_port_turn = itertools.count(random.randrange(PORTS_PER_WORKER))  # two suites at once differ


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago, and that no other test
    process of this run hands out.

    A port is chosen now and bound later (a ``pacebot run`` starting up), so it must not
    come from the ephemeral range, where another test's connection could take it meanwhile.
    Each pytest-xdist worker (``gw0``, ``gw1``…) takes its own thousand ports.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = PORTS_FROM + (int(worker) % 10 if worker.isdigit() else 0) * PORTS_PER_WORKER
    for _ in range(PORTS_PER_WORKER):
        port = first + next(_port_turn) % PORTS_PER_WORKER
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:  # in use, or a closed server's port still waiting
                continue
            return port
    msg = f"no free port from {first} to {first + PORTS_PER_WORKER - 1}"
    raise RuntimeError(msg)


async def start_run(
    config: Path, env: Mapping[str, str], *, cwd: Path | None = None
) -> asyncio.subprocess.Process:
    """Start ``pacebot run -c config`` as a real process with ``env`` added to ours.

    ``cwd`` runs the pacebot found there (``python -m`` puts it first on the path).
    """
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        "-c",
        str(config),
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
    )


async def run_pacebot(*args: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    """Run one ``pacebot`` command as a real process (``env`` added to ours); return its exit
    code, standard output and standard error."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def dashboard_up(url: str) -> None:
    """Wait until the dashboard of a ``pacebot run`` answers (it starts beside the platforms)."""
    import httpx

    async with httpx.AsyncClient(base_url=url) as client, asyncio.timeout(10):
        while True:
            with contextlib.suppress(httpx.TransportError):
                if (await client.get("/login")).status_code == 200:
                    return
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def qq_bot(
    config: Config, *, self_id: int = 10001, unsupported: Collection[str] = ()
) -> AsyncIterator[tuple[Core, FakeOneBot]]:
    """Run the bot with QQ on (nonebot's reverse WebSocket) and a OneBot client connected to
    it as NapCat would be, answering ``unsupported`` actions as NapCat does unknown ones."""
    voice_key = TEST_KEY if config.voice.enabled else None
    async with running_bot(config, Secrets(TEST_KEY, TEST_KEY, voice_api_key=voice_key)) as core:
        url = f"ws://127.0.0.1:{config.qq.port}/onebot/v11/ws"
        async with FakeOneBot(url, self_id=self_id, unsupported=unsupported) as onebot:
            yield core, onebot


async def wait_until(condition: Callable[[], object], *, within_s: float = 5.0) -> None:
    """Poll ``condition`` until it holds: the adapters and fakes work on tasks of their own."""
    async with asyncio.timeout(within_s):
        while not condition():  # noqa: ASYNC110 - polling plain records from outside
            await asyncio.sleep(0.005)


async def wait_waiting(core: Core, chat: ChatKey, count: int, *, within_s: float = 5.0) -> None:
    """Wait until ``count`` messages of ``chat`` are stored and wait for its quiet timer,
    read as ``/status`` reads them (the store's count, the chat's phase)."""
    async with asyncio.timeout(within_s):
        while (  # noqa: ASYNC110 - polling what /status reads, from outside
            await core.ops.status.waiting_messages(chat) != count
            or core.ops.status.phase(chat) is not Phase.WAITING
        ):
            await asyncio.sleep(0.005)


async def push_day_summary(
    store: SqliteStore, chat: ChatKey, day: date, text: str, *, keywords: Sequence[str] = ()
) -> None:
    """Push a summary of ``day`` onto ``chat``'s prompt stack, as the nightly job would."""
    content = DaySummary(summary=text, keywords=tuple(keywords))
    await store.push_summary(
        chat,
        day,
        content,
        added_prompt=render_summary(day, content),
        full_prompt_before="",
        full_prompt_after="",
        message_count=3,
        now=datetime.now(UTC),
    )
