"""The composition root: wire the real parts together and run them until told to stop.

Start in order (store, LLM, pipeline recovery, platforms), stop in reverse: platforms
stop taking updates first, then the pipeline persists what is in flight, then the
database closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from loguru import logger

from adapters.console import ConsolePlatform, stdin_reader
from adapters.openai_llm import OpenAILLM
from adapters.qq.platform import QQPlatform  # before logging is set up: nonebot resets loguru
from adapters.telegram.platform import TelegramPlatform
from bot.answer import Answerer
from bot.commands import MENU
from bot.config import Config, Secrets, enabled_platforms, read_persona
from bot.log import setup_logging
from bot.memory import Memory
from bot.pipeline import Pipeline
from bot.ports import MessageSink, Platform
from bot.retries import DEFAULT_RETRIES, Retries
from scheduler.jobs import start_scheduler
from scheduler.nightly import run_nightly
from storage.sqlite import SqliteStore


def utc_now() -> datetime:
    """Return the current time, timezone-aware."""
    return datetime.now(UTC)


def freeze_startup_heap() -> None:
    """Keep what start-up loaded out of every later full garbage collection.

    The libraries (PTB, nonebot, pydantic, openai, …) leave some 160,000 objects that live
    as long as the process. Left in the collector's care, each full collection walks them
    all again and stalls the event loop for 70–170 ms; frozen, the longest stall while
    re-arming 10,000 chats drops below 10 ms (docs/benchmarks.md). A second call only
    collects and freezes what came since.
    """
    gc.collect()
    gc.freeze()


@dataclass(frozen=True, slots=True)
class Parts:
    """The store, the main LLM and the memory built on them."""

    store: SqliteStore
    llm: OpenAILLM
    memory: Memory


@contextlib.asynccontextmanager
async def opened_parts(config: Config, secrets: Secrets) -> AsyncIterator[Parts]:
    """Open the store and the LLM client; close them on exit."""
    persona = read_persona(config)
    async with contextlib.AsyncExitStack() as stack:
        store = await SqliteStore.open(config.database_path)  # warms jieba up too
        stack.push_async_callback(store.close)
        llm = OpenAILLM.from_config(config.llm, api_key=secrets.llm_api_key)
        stack.push_async_callback(llm.aclose)
        memory = Memory(config, store, llm, initial_persona=persona, now=utc_now)
        yield Parts(store, llm, memory)


@contextlib.asynccontextmanager
async def running_core(
    config: Config,
    secrets: Secrets,
    platforms: dict[str, Platform],
    *,
    nightly: bool = True,
    retries: Retries = DEFAULT_RETRIES,
) -> AsyncIterator[Pipeline]:
    """Recover and run the pipeline (and the nightly job); stop both on exit."""
    async with opened_parts(config, secrets) as parts, contextlib.AsyncExitStack() as stack:
        splitter = OpenAILLM.splitter_from_config(config.llm, api_key=secrets.splitter_api_key)
        stack.push_async_callback(splitter.aclose)
        answerer = Answerer(
            config, parts.store, parts.llm, splitter=splitter, memory=parts.memory, now=utc_now
        )
        pipeline = Pipeline(
            config, parts.store, platforms, answerer, parts.memory, now=utc_now, retries=retries
        )
        stack.push_async_callback(pipeline.stop)
        freeze_startup_heap()  # everything is wired: before re-arming makes garbage
        await pipeline.recover()
        if nightly:
            job = functools.partial(run_nightly, parts.memory, parts.store, config)
            scheduler = start_scheduler(config, job)
            stack.callback(scheduler.shutdown, wait=False)
            catch_up = asyncio.create_task(job(), name="nightly:catch-up")
            stack.push_async_callback(_cancel, catch_up)
        yield pipeline


async def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


class PlatformAdapter(Platform, Protocol):
    """A platform that receives on its own once started."""

    async def start(self, sink: MessageSink) -> None: ...

    async def stop(self) -> None: ...


def admin_ids(config: Config, platform: str) -> list[int]:
    """Return the numeric ids of the admins on ``platform``."""
    prefix = f"{platform}:"
    return [int(a.removeprefix(prefix)) for a in config.bot.admins if a.startswith(prefix)]


def build_platforms(
    config: Config, secrets: Secrets, *, telegram_poll_timeout_s: float = 10.0
) -> dict[str, PlatformAdapter]:
    """Build (not start) every enabled platform."""
    platforms: dict[str, PlatformAdapter] = {}
    if secrets.telegram_token is not None:
        platforms["telegram"] = TelegramPlatform(
            token=secrets.telegram_token,
            api_base_url=config.telegram.api_base_url,
            bot_name=config.bot.name,
            aliases=config.bot.aliases,
            poll_timeout_s=telegram_poll_timeout_s,
            menu=MENU,
            menu_chat_ids=admin_ids(config, "telegram"),
        )
    if config.qq.enabled:
        platforms["qq"] = QQPlatform(
            host=config.qq.host,
            port=config.qq.port,
            access_token=secrets.onebot_access_token,
            bot_name=config.bot.name,
            aliases=config.bot.aliases,
        )
    return platforms


@contextlib.asynccontextmanager
async def running_bot(
    config: Config,
    secrets: Secrets,
    *,
    telegram_poll_timeout_s: float = 10.0,
    adapters: Mapping[str, PlatformAdapter] | None = None,
) -> AsyncIterator[Pipeline]:
    """Start the core and every enabled platform; stop them in reverse on exit.

    The platforms exist before the core recovers, so replies queued before a restart
    find their platform; they start taking updates only once the core is running, and
    stop taking them before the core stops.
    """
    if adapters is None:
        adapters = build_platforms(config, secrets, telegram_poll_timeout_s=telegram_poll_timeout_s)
    platforms: dict[str, Platform] = dict(adapters)
    async with contextlib.AsyncExitStack() as stack:
        pipeline = await stack.enter_async_context(running_core(config, secrets, platforms))
        for adapter in adapters.values():
            await adapter.start(pipeline)
            stack.push_async_callback(adapter.stop)
        yield pipeline


async def run(config: Config, secrets: Secrets) -> None:
    """Run every enabled platform until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    adapters = build_platforms(config, secrets)
    async with running_bot(config, secrets, adapters=adapters):
        logger.info("pacebot running: {}; Ctrl-C to stop", ", ".join(enabled_platforms(config)))
        stopped = asyncio.create_task(stop.wait(), name="run:stop")
        tasks: set[asyncio.Task[Any]] = {stopped}
        telegram = adapters.get("telegram")
        if isinstance(telegram, TelegramPlatform) and len(adapters) == 1:
            # Alone, a Telegram that gives up for good (a rejected token) leaves nothing
            # to run: stop and say why rather than idle on.
            tasks.add(asyncio.create_task(telegram.wait_ready(), name="run:telegram"))
        try:
            while not stopped.done():
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done - {stopped}:
                    task.result()  # a start that gave up raises its PacebotError here
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        logger.info("stopping: no new updates; unsent replies stay queued")


async def chat_in_console(config: Config, secrets: Secrets) -> None:
    """Chat in the terminal until the input ends or Ctrl-C."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    console = ConsolePlatform(bot_name=config.bot.name)
    platforms: dict[str, Platform] = {"console": console}
    async with running_core(config, secrets, platforms) as pipeline:
        reader = await stdin_reader()
        logger.info("console ready; end the input (Ctrl-D) to finish")
        reading = asyncio.create_task(console.read_input(pipeline, reader), name="console:input")
        stopped = asyncio.create_task(stop.wait(), name="console:stop")
        done, _ = await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if reading in done:
            reading.result()
            answering = asyncio.create_task(pipeline.drain(), name="console:drain")
            await asyncio.wait({answering, stopped}, return_when=asyncio.FIRST_COMPLETED)
            answering.cancel()
        reading.cancel()
        stopped.cancel()


def start_logging(
    config: Config, secrets: Secrets, *, level: str, stderr_level: str | None = None
) -> None:
    """Log at ``level`` to stderr and ``<data_dir>/logs``, scrubbing these secrets."""
    setup_logging(
        level=level, log_dir=config.log_dir, secrets=secrets.every, stderr_level=stderr_level
    )
