"""The composition root: wire the real parts together and run their lifecycles.

Every ``pacebot`` command ends here once its arguments are parsed. Start in order
(store, LLM, pipeline recovery, platforms), stop in reverse: platforms stop taking
updates first, then the pipeline persists what is in flight, then the database closes.

Outside ``storage/`` and ``scheduler/``, only this module may import ``storage`` or
``scheduler``; the core reaches them through its ports, the command line through here.

A platform's library (python-telegram-bot; nonebot, FastAPI and uvicorn) and the
``openai`` SDK are imported inside the functions that build them, so a command loads
only what its config enables: ``pacebot --help`` and ``check`` load none of them, and
``pacebot console`` or a Telegram-only run never loads nonebot.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import importlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from loguru import logger
from rich.console import Console
from rich.progress import Progress

from adapters.console import ConsolePlatform, stdin_reader
from bot.answer import Answerer
from bot.commands import MENU
from bot.config import (
    Config,
    Secrets,
    enabled_platforms,
    load_config,
    read_persona,
    read_secrets,
)
from bot.errors import ConfigError, PacebotError
from bot.log import setup_logging
from bot.memory import Memory, SummaryResult
from bot.models import ChatKey
from bot.pipeline import Pipeline
from bot.ports import MessageSink, Platform
from bot.retries import DEFAULT_RETRIES, Retries
from bot.semantic import SemanticMemory
from bot.tasks import start_task
from scheduler.jobs import start_scheduler
from scheduler.nightly import days_to_summarise, pending_work, run_nightly, summarise_days
from storage.sqlite import SqliteStore

if TYPE_CHECKING:
    from adapters.openai_llm import OpenAILLM

NOTHING_ENABLED = (
    "no platform is enabled: set enabled = true under [telegram] or [qq], or use `pacebot console`"
)
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR")
# The module that holds each platform; importing it loads that platform's libraries.
PLATFORM_MODULES = {"telegram": "adapters.telegram.platform", "qq": "adapters.qq.platform"}


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
    """Open the store and the LLM client (and the embeddings client, if on); close on exit."""
    from adapters.openai_llm import OpenAILLM

    persona = read_persona(config)
    async with contextlib.AsyncExitStack() as stack:
        store = await SqliteStore.open(config.database_path)  # warms jieba up too
        stack.push_async_callback(store.close)
        llm = OpenAILLM.from_config(config.llm, api_key=secrets.llm_api_key)
        stack.push_async_callback(llm.aclose)
        semantic = None
        if secrets.embeddings_api_key is not None:  # read only when [memory.embeddings] is on
            from adapters.openai_embeddings import OpenAIEmbedder

            embedder = OpenAIEmbedder.from_config(config, api_key=secrets.embeddings_api_key)
            stack.push_async_callback(embedder.aclose)
            semantic = SemanticMemory(store, embedder, timeout_s=config.llm.timeout_s, now=utc_now)
        memory = Memory(config, store, llm, initial_persona=persona, now=utc_now, semantic=semantic)
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
    from adapters.openai_llm import OpenAILLM

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
            catch_up = start_task(
                job(),
                name="nightly:catch-up",
                failure="catching up on missed summaries failed; the nightly run retries",
            )
            stack.push_async_callback(_cancel, catch_up)
        elif parts.memory.semantic is not None:  # the nightly catch-up embeds after it runs
            embedding = start_task(
                parts.memory.embed_pending(),
                name="memory:embed",
                failure="embedding memory rows failed; the nightly run retries",
            )
            stack.push_async_callback(_cancel, embedding)
        yield pipeline


async def _cancel(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it to end; its failure, if any, is already logged."""
    task.cancel()
    await asyncio.wait({task})


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


@runtime_checkable
class GivesUp(Protocol):
    """A platform whose background start may give up for good (Telegram's, on a bad token)."""

    async def wait_ready(self) -> None: ...


def load_platform_modules(config: Config) -> None:
    """Import the enabled platforms' modules; call it before logging is set up.

    Importing nonebot calls ``loguru.logger.remove()``, which would drop every sink
    added before it: with QQ on, pacebot's own log file and stderr sink would go silent.
    """
    for name in enabled_platforms(config):
        importlib.import_module(PLATFORM_MODULES[name])


def _build_telegram(config: Config, token: str, *, poll_timeout_s: float) -> PlatformAdapter:
    from adapters.telegram.platform import TelegramPlatform

    return TelegramPlatform(
        token=token,
        api_base_url=config.telegram.api_base_url,
        bot_name=config.bot.name,
        aliases=config.bot.aliases,
        poll_timeout_s=poll_timeout_s,
        menu=MENU,
        menu_chat_ids=admin_ids(config, "telegram"),
    )


def _build_qq(config: Config, access_token: str | None) -> PlatformAdapter:
    from adapters.qq.platform import QQPlatform

    return QQPlatform(
        host=config.qq.host,
        port=config.qq.port,
        access_token=access_token,
        bot_name=config.bot.name,
        aliases=config.bot.aliases,
    )


def build_platforms(
    config: Config, secrets: Secrets, *, telegram_poll_timeout_s: float = 10.0
) -> dict[str, PlatformAdapter]:
    """Build (not start) every enabled platform, importing only their libraries."""
    platforms: dict[str, PlatformAdapter] = {}
    if secrets.telegram_token is not None:
        platforms["telegram"] = _build_telegram(
            config, secrets.telegram_token, poll_timeout_s=telegram_poll_timeout_s
        )
    if config.qq.enabled:
        platforms["qq"] = _build_qq(config, secrets.onebot_access_token)
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
        telegram: object = adapters.get("telegram")  # checked below for what it can do
        if isinstance(telegram, GivesUp) and len(adapters) == 1:
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


def resolve_log_level(chosen: str | None, config: Config) -> str:
    """Return the log level: ``chosen``, else ``$PACEBOT_LOG_LEVEL``, else ``bot.log_level``."""
    level = chosen or os.environ.get("PACEBOT_LOG_LEVEL", "").upper()
    if level and level not in LOG_LEVELS:
        msg = f"PACEBOT_LOG_LEVEL = {level!r}: must be one of {', '.join(LOG_LEVELS)}"
        raise ConfigError(msg)
    return level or config.bot.log_level


def check(path: Path) -> int:
    """Validate ``path`` and the environment, say what would start; 0 if all is well."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"✗ {exc}", file=sys.stderr)
        return 1
    problems: list[str] = []
    try:
        read_persona(config)
    except ConfigError as exc:
        problems.append(str(exc))
    try:
        read_secrets(config, console=False)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
    platforms = enabled_platforms(config)
    if not platforms:
        problems.append(NOTHING_ENABLED)
    print(f"config: {path} is valid")
    print(f"database: {config.database_path}")
    print(f"LLM: {config.llm.model} at {config.llm.base_url or 'the OpenAI default endpoint'}")
    for name in platforms:
        print(f"would start: {name}")
    if problems:
        for problem in problems:
            print(f"✗ {problem}", file=sys.stderr)
        return 1
    print("✓ ready to run")
    return 0


def serve(path: Path, *, console: bool, log_level: str | None) -> int:
    """Run the bot (or chat in the console) from the config at ``path``; return the exit code."""
    try:
        config = load_config(path)
        secrets = read_secrets(config, console=console)
        read_persona(config)
        if not console and not enabled_platforms(config):
            msg = NOTHING_ENABLED
            raise ConfigError(msg)
        if not console:
            load_platform_modules(config)
        level = resolve_log_level(log_level, config)
        # In the console the terminal is the chat: only problems go to stderr unless asked.
        chosen = log_level or os.environ.get("PACEBOT_LOG_LEVEL")
        stderr_level = "WARNING" if console and not chosen else None
        start_logging(config, secrets, level=level, stderr_level=stderr_level)
        asyncio.run(chat_in_console(config, secrets) if console else run(config, secrets))
    except PacebotError as exc:
        print(f"pacebot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


async def _summarize(
    config: Config,
    secrets: Secrets,
    *,
    day: date | None,
    chat: ChatKey | None,
    all_missing: bool,
) -> int:
    async with opened_parts(config, secrets) as parts:
        memory = parts.memory
        if all_missing:
            days = days_to_summarise(memory.today(), catch_up_days=config.memory.catch_up_days)
        else:
            days = [day or memory.today() - timedelta(days=1)]
        on_purpose = day is not None
        work = await pending_work(parts.store, config, days, only=chat, on_purpose=on_purpose)
        if not work:
            print("nothing to summarise")
            return 0
        with Progress(console=Console(stderr=True)) as progress:
            task = progress.add_task("summarising", total=len(work))

            def advance(_chat: ChatKey, _day: date, _result: SummaryResult | None) -> None:
                progress.advance(task)

            report = await summarise_days(
                memory,
                work,
                concurrency=config.memory.summary_concurrency,
                on_purpose=on_purpose,
                progress=advance,
            )
        await memory.embed_pending()
    for pushed_chat, pushed_day in report.pushed:
        print(f"summarised {pushed_chat} {pushed_day}")
    for failed_chat, failed_day in report.failed:
        print(f"failed {failed_chat} {failed_day}", file=sys.stderr)
    print(
        f"{len(report.pushed)} pushed, {len(report.skipped)} skipped, {len(report.failed)} failed"
    )
    return 1 if report.failed else 0


async def _recall(config: Config, secrets: Secrets, *, chat: ChatKey, query: str) -> int:
    async with opened_parts(config, secrets) as parts:
        recalled = await parts.memory.recall(chat, [query])
    if not recalled.records:
        print("nothing recalled")
        return 0
    print(f"recalled by {recalled.how}:\n")
    print(recalled.render())
    return 0


def _run_memory_command(
    path: Path, command: Callable[[Config, Secrets], Coroutine[Any, Any, int]]
) -> int:
    try:
        config = load_config(path)
        secrets = read_secrets(config, console=True)
        read_persona(config)
        setup_logging(
            level=resolve_log_level(None, config),
            log_dir=config.log_dir,
            secrets=secrets.every,
            stderr_level="WARNING",
        )
        return asyncio.run(command(config, secrets))
    except PacebotError as exc:
        print(f"pacebot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def summarize(path: Path, *, day: date | None, chat: ChatKey | None, all_missing: bool) -> int:
    """Summarise chat days now (yesterday by default); 1 if any summary failed."""
    return _run_memory_command(
        path,
        functools.partial(_summarize, day=day, chat=chat, all_missing=all_missing),
    )


def recall(path: Path, *, chat: ChatKey, query: str) -> int:
    """Print what recall finds in ``chat`` for ``query``."""
    return _run_memory_command(path, functools.partial(_recall, chat=chat, query=query))
