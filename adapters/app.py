"""The composition root: wire the real parts together and run their lifecycles.

``pacebot run`` and ``console`` end here once their arguments are parsed (:func:`serve`);
the commands that need no platform (``adapters/offline.py``) open their parts here. Start
in order (store, LLM, pipeline recovery, platforms), stop in reverse: platforms stop
taking updates first, then the pipeline persists what is in flight, then the database
closes.

Outside ``storage/`` and ``scheduler/``, only this module may import ``storage`` or
``scheduler``; the core reaches them through its ports, the command line through here.

A platform's library (python-telegram-bot; nonebot, FastAPI and uvicorn) is imported
inside the function that builds it, so a command loads only what its config enables:
``pacebot --help`` and ``check`` load none of them, and ``pacebot console`` or a
Telegram-only run never loads nonebot. The ``openai`` SDK and the Chinese segmenter's
dictionary load when they are first needed (the first answer, summary or recall), not
before the platforms are up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import random
import signal
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from loguru import logger

from adapters import shell
from adapters.checks import NOTHING_ENABLED, prepare_data_dir, resolve_log_level
from adapters.config_file import ConfigFile, RunningConfig
from adapters.console import ConsolePlatform, stdin_is_terminal
from adapters.deferred import DeferredEmbedder, DeferredLLM
from adapters.media import opened_media
from adapters.platforms import (
    GivesUp,
    PlatformAdapter,
    build_platforms,
    history_sources,
    load_platform_modules,
)
from adapters.plugins.hosting import hosted_plugins, hosting_plugins
from adapters.reload import Reloader, pid_file, running_settings
from adapters.tools.late import LateToolbox
from adapters.wiring import Core, build_core
from bot.budget import Spending
from bot.config.model import Config, enabled_platforms, load_config
from bot.config.personas import read_persona
from bot.config.settings import Settings
from bot.errors import ConfigError, PacebotError
from bot.initiative.wakeup import LONGEST_WAIT_S
from bot.log import setup_logging
from bot.memory.semantic import SemanticMemory
from bot.memory.stack import Memory
from bot.ops import Ops
from bot.ports import Platform
from bot.retries import DEFAULT_RETRIES, Retries
from bot.secrets import Secrets, read_secrets
from bot.tasks import start_task
from bot.texts import Texts
from bot.tools.ports import Toolbox
from scheduler.jobs import start_scheduler
from storage.sqlite import SqliteStore
from storage.words import RecallWords

if TYPE_CHECKING:
    from adapters.openai_embeddings import OpenAIEmbedder
    from adapters.openai_llm import OpenAILLM


def utc_now() -> datetime:
    """Return the current time, timezone-aware."""
    return datetime.now(UTC)


YOUNG_COLLECTION_ALLOCATIONS: Final = 5000
"""Net allocations between two collections of the collector's youngest generation."""


def freeze_startup_heap() -> None:
    """Keep what start-up loaded out of every later full garbage collection, and space the
    collections of the young.

    The libraries (PTB, nonebot, pydantic, openai, …) leave some 160,000 objects that live
    as long as the process. Left in the collector's care, each full collection walks them
    all again and stalls the event loop for 70–170 ms; frozen, the longest stall while
    re-arming 10,000 chats drops below 10 ms (docs/benchmarks.md). A second call only
    collects and freezes what came since.

    The youngest generation is then collected every :data:`YOUNG_COLLECTION_ALLOCATIONS`
    allocations rather than 700. A busy wire keeps tens of thousands of young objects
    alive (the messages in flight), and each collection walks them again: at 1,000 msg/s
    the loop paused some 220 times a 5-second run. Spaced so, the ingest p99 at that rate
    fell from 11.0 to 7.2 ms on OneBot QQ and from 25.5 to 9.1 ms on Telegram
    (docs/benchmarks.md, "The collector").
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *gc.get_threshold()[1:])


@dataclass(frozen=True, slots=True)
class Parts:
    """The running settings, the store, the main LLM, the memory built on them, and what
    the calls cost."""

    settings: Settings
    store: SqliteStore
    llm: DeferredLLM
    memory: Memory
    spending: Spending


def _main_llm(config: Config, secrets: Secrets) -> OpenAILLM:
    from adapters.openai_llm import OpenAILLM

    return OpenAILLM.from_config(config.llm, api_key=secrets.llm_api_key)


def _splitter_llm(config: Config, secrets: Secrets) -> OpenAILLM:
    from adapters.openai_llm import OpenAILLM

    return OpenAILLM.splitter_from_config(config.llm, api_key=secrets.splitter_api_key)


def _embedder(config: Config, api_key: str) -> OpenAIEmbedder:
    from adapters.openai_embeddings import OpenAIEmbedder

    return OpenAIEmbedder.from_config(config, api_key=api_key)


@contextlib.asynccontextmanager
async def opened_store(config: Config) -> AsyncIterator[SqliteStore]:
    """Open the store alone (no secret, no LLM); close it on exit."""
    async with await SqliteStore.open(config.database_path) as store:
        yield store


@contextlib.asynccontextmanager
async def opened_parts(
    config: Config, secrets: Secrets, *, now: Callable[[], datetime] = utc_now
) -> AsyncIterator[Parts]:
    """Open the store, the LLM client and, if on, the embeddings client (each built on its
    first call); close them on exit. ``now`` is the wall clock (tests pass their own)."""
    settings = running_settings(config)
    async with contextlib.AsyncExitStack() as stack:
        store = await stack.enter_async_context(opened_store(config))
        llm = DeferredLLM(functools.partial(_main_llm, config, secrets))
        stack.push_async_callback(llm.aclose)
        semantic = None
        if secrets.embeddings_api_key is not None:  # read only when [memory.embeddings] is on
            embedder = DeferredEmbedder(
                config.memory.embeddings.model,
                functools.partial(_embedder, config, secrets.embeddings_api_key),
            )
            stack.push_async_callback(embedder.aclose)
            semantic = SemanticMemory(store, embedder, timeout_s=config.llm.timeout_s, now=now)
        spending = Spending(settings, store, now=now)
        memory = Memory(settings, store, llm, now=now, semantic=semantic, spending=spending)
        yield Parts(settings, store, llm, memory, spending)


@contextlib.asynccontextmanager
async def running_core(
    config: Config,
    secrets: Secrets,
    platforms: dict[str, Platform],
    *,
    nightly: bool = True,
    retries: Retries = DEFAULT_RETRIES,
    parts: Parts | None = None,
    now: Callable[[], datetime] = utc_now,
    draw: Callable[[], float] = random.random,
    clock_check_s: float = LONGEST_WAIT_S,
) -> AsyncIterator[Core]:
    """Recover and run the pipeline (and the nightly job); stop both on exit.

    The store and LLM are opened here, unless the caller opened them (``parts``) to share.
    Tests set the clock ``now``, the ``draw`` and ``clock_check_s`` (see ``build_core``).
    """
    async with contextlib.AsyncExitStack() as stack:
        if parts is None:
            parts = await stack.enter_async_context(opened_parts(config, secrets, now=now))
        splitter = DeferredLLM(functools.partial(_splitter_llm, config, secrets))
        stack.push_async_callback(splitter.aclose)
        media = await stack.enter_async_context(opened_media(config, secrets, platforms))
        toolbox = await stack.enter_async_context(opened_tools(config, secrets))
        core = build_core(
            parts.settings,
            parts.store,
            parts.memory,
            platforms,
            llm=parts.llm,
            splitter=splitter,
            pictures=media.pictures,
            sticker_sources=media.stickers,
            spending=parts.spending,
            words=RecallWords(),
            now=now,
            retries=retries,
            voice=media.voice,
            history=history_sources(config, platforms),
            draw=draw,
            clock_check_s=clock_check_s,
            toolbox=toolbox,
        )
        pipeline = core.pipeline
        stack.push_async_callback(core.inbox.stop)
        await core.ops.access.load()
        freeze_startup_heap()  # everything is wired: before re-arming makes garbage
        await pipeline.recover()
        if nightly:
            job = core.ops.memory.run_nightly
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
        yield core


@contextlib.asynccontextmanager
async def opened_tools(config: Config, secrets: Secrets) -> AsyncIterator[Toolbox | None]:
    """With ``[tools] enabled``, start the MCP servers and open the web search beside the
    platforms (the ``mcp`` SDK is imported then, in a worker thread); stop them on exit.
    Yield ``None`` with tools off."""
    if not config.tools.enabled:
        yield None
        return
    async with LateToolbox(config.tools, secrets.tools_env) as toolbox:
        yield toolbox


async def _cancel(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it to end; its failure, if any, is already logged."""
    task.cancel()
    await asyncio.wait({task})


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


@contextlib.asynccontextmanager
async def running_bot(
    config: Config,
    secrets: Secrets,
    *,
    telegram_poll_timeout_s: float = 10.0,
    adapters: Mapping[str, PlatformAdapter] | None = None,
    parts: Parts | None = None,
) -> AsyncIterator[Core]:
    """Start the core, the nonebot plugins and every enabled platform; stop them in reverse.

    The platforms exist before the core recovers, so replies queued before a restart
    find their platform; they start taking updates only once the core is running, and
    stop taking them before the core stops.
    """
    async with contextlib.AsyncExitStack() as stack:
        if parts is None:
            parts = await stack.enter_async_context(opened_parts(config, secrets))
        if adapters is None:
            adapters = build_platforms(
                config,
                secrets,
                ledger=parts.store,
                telegram_poll_timeout_s=telegram_poll_timeout_s,
            )
        platforms: dict[str, Platform] = dict(adapters)
        core = await stack.enter_async_context(
            running_core(config, secrets, platforms, parts=parts)
        )
        # nonebot plugins, if any: loaded once QQ set nonebot up, before its server starts.
        await stack.enter_async_context(
            hosting_plugins(config, parts.store, adapters.values(), now=utc_now)
        )
        for adapter in adapters.values():
            await adapter.start(core.inbox)
            stack.push_async_callback(adapter.stop)
        yield core


async def run(config: Config, secrets: Secrets, *, path: Path) -> None:
    """Run every enabled platform until SIGINT or SIGTERM; reload ``path`` on SIGHUP."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with contextlib.AsyncExitStack() as stack:
        parts = await stack.enter_async_context(opened_parts(config, secrets))
        adapters = build_platforms(config, secrets, ledger=parts.store)
        core = await stack.enter_async_context(
            running_bot(config, secrets, adapters=adapters, parts=parts)
        )
        reloader = Reloader(path, parts.settings)
        edited = ConfigFile(path, parts.settings, reloader, now=utc_now)
        await stack.enter_async_context(
            serving_dashboard(config, secrets, core.ops, config_file=edited, plugins=hosted_plugins)
        )
        _reload_on_sighup(reloader)
        # Each platform says "running" itself, once it is: Telegram after its first poll
        # is answered, QQ once a OneBot implementation has connected.
        logger.info(
            "pacebot started; starting {}; Ctrl-C to stop", ", ".join(enabled_platforms(config))
        )
        stopped = asyncio.create_task(stop.wait(), name="run:stop")
        tasks: set[asyncio.Task[Any]] = {stopped}
        alone: object = next(iter(adapters.values())) if len(adapters) == 1 else None
        if isinstance(alone, GivesUp):
            # Alone, a platform that gives up for good (Telegram on a rejected token, the
            # official QQ bot on a refused app) leaves nothing to run: stop and say why
            # rather than idle on.
            tasks.add(asyncio.create_task(alone.wait_ready(), name="run:alone"))
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


def _reload_on_sighup(reloader: Reloader) -> None:
    """Reload the config file on SIGHUP; a refused reload is logged and changes nothing."""

    def reload() -> None:
        with contextlib.suppress(ConfigError):
            reloader.reload(by="SIGHUP")

    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, reload)


@contextlib.asynccontextmanager
async def serving_dashboard(
    config: Config,
    secrets: Secrets,
    ops: Ops | None,
    *,
    config_file: RunningConfig | None = None,
    plugins: Callable[[], Sequence[object]] = tuple,
) -> AsyncIterator[str | None]:
    """Serve the dashboard while the block runs, if ``[web] enabled`` (else yield ``None``);
    it lists what ``plugins`` returns (the nonebot plugins hosted) and shows
    ``config_file`` on its settings page (changing it when it is a :class:`ConfigFile`)."""
    if ops is None or not config.web.enabled or secrets.web_token is None:
        yield None
        return
    from adapters.web.site import serving_dashboard as serving  # FastAPI, uvicorn, Jinja2

    async with serving(
        config, secrets.web_token, ops, config_file=config_file, plugins=plugins
    ) as url:
        yield url


async def chat_in_console(config: Config, secrets: Secrets) -> None:
    """Chat in the terminal until the input ends (answer what waits) or Ctrl-C (leave now)."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    console = ConsolePlatform(
        bot_name=config.bot.name,
        texts=Texts(config.bot.language),
        echo_input=not stdin_is_terminal(),
        zone=config.bot.zone,
    )
    platforms: dict[str, Platform] = {"console": console}
    async with running_core(config, secrets, platforms) as core:
        console.show_banner()
        if config.web.enabled:
            console.show_no_dashboard(config.web.url)
        reading = asyncio.create_task(
            console.read_input(core.inbox, core.ops.status), name="console:input"
        )
        stopped = asyncio.create_task(stop.wait(), name="console:stop")
        done, _ = await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if reading in done:
            reading.result()
            answering = asyncio.create_task(core.inbox.drain(), name="console:drain")
            await asyncio.wait({answering, stopped}, return_when=asyncio.FIRST_COMPLETED)
            answering.cancel()
        if stopped.done():
            await console.show_left_waiting(core.ops.status)
        reading.cancel()
        stopped.cancel()


def start_logging(
    config: Config, secrets: Secrets, *, level: str, stderr_level: str | None = None
) -> None:
    """Log at ``level`` to stderr and ``<data_dir>/logs``, scrubbing these secrets."""
    setup_logging(
        level=level,
        log_dir=config.log_dir,
        secrets=secrets.every,
        stderr_level=stderr_level,
        zone=config.bot.zone,
    )


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
        prepare_data_dir(config)
        # In the console the terminal is the chat: only problems go to stderr unless asked.
        chosen = log_level or os.environ.get("PACEBOT_LOG_LEVEL")
        stderr_level = "WARNING" if console and not chosen else None
        start_logging(config, secrets, level=level, stderr_level=stderr_level)
        if console:
            asyncio.run(chat_in_console(config, secrets))
        else:
            with pid_file(config):
                asyncio.run(run(config, secrets, path=path))
    except (PacebotError, OSError) as exc:
        return shell.failed(exc)
    except KeyboardInterrupt:
        return 130
    return 0
