"""The composition root: wire the real parts together and run them until told to stop.

Start in order (store, LLM, pipeline recovery, platforms), stop in reverse: platforms
stop taking updates first, then the pipeline persists what is in flight, then the
database closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from loguru import logger

from adapters.console import ConsolePlatform, stdin_reader
from adapters.openai_llm import OpenAILLM
from adapters.telegram import TelegramPlatform
from bot.answer import Answerer
from bot.config import Config, Secrets, enabled_platforms, read_persona
from bot.log import setup_logging
from bot.pipeline import Pipeline
from bot.ports import Platform
from storage.sqlite import SqliteStore


def utc_now() -> datetime:
    """Return the current time, timezone-aware."""
    return datetime.now(UTC)


@contextlib.asynccontextmanager
async def running_core(
    config: Config, secrets: Secrets, platforms: dict[str, Platform]
) -> AsyncIterator[Pipeline]:
    """Open the store and LLM clients, recover, and yield the running pipeline."""
    persona = read_persona(config)
    async with contextlib.AsyncExitStack() as stack:
        store = await SqliteStore.open(config.database_path)
        stack.push_async_callback(store.close)
        llm = OpenAILLM.from_config(config.llm, api_key=secrets.llm_api_key)
        stack.push_async_callback(llm.aclose)
        splitter = OpenAILLM.splitter_from_config(config.llm, api_key=secrets.splitter_api_key)
        stack.push_async_callback(splitter.aclose)
        answerer = Answerer(
            config, store, llm, splitter=splitter, persona=lambda: persona, now=utc_now
        )
        pipeline = Pipeline(config, store, platforms, answerer, now=utc_now)
        stack.push_async_callback(pipeline.stop)
        await pipeline.recover()
        yield pipeline


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


@contextlib.asynccontextmanager
async def running_bot(
    config: Config, secrets: Secrets, *, telegram_poll_timeout_s: float = 10.0
) -> AsyncIterator[Pipeline]:
    """Start the core and every enabled platform; stop them in reverse on exit."""
    platforms: dict[str, Platform] = {}
    async with contextlib.AsyncExitStack() as stack:
        pipeline = await stack.enter_async_context(running_core(config, secrets, platforms))
        if secrets.telegram_token is not None:
            telegram = TelegramPlatform(
                token=secrets.telegram_token,
                api_base_url=config.telegram.api_base_url,
                bot_name=config.bot.name,
                aliases=config.bot.aliases,
                poll_timeout_s=telegram_poll_timeout_s,
            )
            platforms["telegram"] = telegram
            await telegram.start(pipeline)
            stack.push_async_callback(telegram.stop)  # first to stop: no new updates
        yield pipeline


async def run(config: Config, secrets: Secrets) -> None:
    """Run every enabled platform until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with running_bot(config, secrets):
        logger.info("pacebot running: {}; Ctrl-C to stop", ", ".join(enabled_platforms(config)))
        await stop.wait()
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
