"""The commands that run without the platforms: ``pacebot summarize``, ``recall``,
``trace`` and ``cost`` against the data, and ``reload``, which asks a running bot to read
its config again.

Each opens what it needs through the composition root (:mod:`adapters.app`): the store,
the LLM and the memory for ``summarize`` and ``recall``; the store alone for ``trace``
and ``cost``, which need no secret. What they compute is the core's operations
(``bot/ops/``), what they print :mod:`adapters.shell`'s. A failure is one line on stderr
and exit code 1, never a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from datetime import date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from adapters import shell
from adapters.app import opened_parts, opened_store, start_logging, utc_now
from adapters.checks import prepare_data_dir, resolve_log_level
from bot.config.model import Config, load_config
from bot.config.personas import read_persona
from bot.errors import PacebotError
from bot.memory.stack import SummaryResult
from bot.models import ChatKey
from bot.ops.memory import MemoryOps
from bot.secrets import Secrets, read_secrets
from bot.texts import Texts

Command = Callable[[Config], Coroutine[Any, Any, int]]
"""A command's work once its config is read; returns the exit code."""


def summarize(path: Path, *, day: date | None, chat: ChatKey | None, all_missing: bool) -> int:
    """Summarise chat days now (yesterday by default); 1 if any summary failed."""
    return _run_with_memory(
        path, functools.partial(_summarize, day=day, chat=chat, all_missing=all_missing)
    )


def recall(path: Path, *, chat: ChatKey, query: str) -> int:
    """Print what recall finds in ``chat`` for ``query``; needs no LLM key, only the
    embeddings key when ``[memory.embeddings]`` is on (recall by meaning)."""
    return _run_with_memory(
        path, functools.partial(_recall, chat=chat, query=query), asks_llm=False
    )


def trace(path: Path, *, chat: ChatKey, count: int) -> int:
    """Print ``chat``'s ``count`` newest batch traces; needs no secret, only the database."""

    async def show(config: Config) -> int:
        async with opened_store(config) as store:
            return await shell.show_traces(config, store, chat=chat, count=count)

    return _run(path, show)


def cost(path: Path, *, days: int, chat: ChatKey | None, as_json: bool) -> int:
    """Print what the LLM calls of the last ``days`` chat days cost; needs no secret."""

    async def show(config: Config) -> int:
        async with opened_store(config) as store:
            return await shell.show_cost(
                config, store, days=days, chat=chat, as_json=as_json, now=utc_now
            )

    return _run(path, show)


async def _summarize(
    config: Config,
    secrets: Secrets,
    *,
    day: date | None,
    chat: ChatKey | None,
    all_missing: bool,
) -> int:
    async with opened_parts(config, secrets) as parts:
        ops = MemoryOps(parts.settings, parts.memory, parts.store)
        today = ops.today()
        if day is not None and day > today:
            print(f"pacebot: --date {day} has not begun (today is {today})", file=sys.stderr)
            return 1
        work = await ops.unsummarised(day=day, only=chat, all_missing=all_missing)
        if not work:
            print("nothing to summarise")
            return 0
        with Progress(console=Console(stderr=True)) as progress:
            task = progress.add_task("summarising", total=len(work))

            def advance(_chat: ChatKey, _day: date, _result: SummaryResult | None) -> None:
                progress.advance(task)

            report = await ops.summarise_all(work, on_purpose=day is not None, progress=advance)
    for pushed_chat, pushed_day in report.pushed:
        partial = " (partial: the day has not ended)" if pushed_day == today else ""
        print(f"summarised {pushed_chat} {pushed_day}{partial}")
    for failed_chat, failed_day in report.failed:
        print(f"failed {failed_chat} {failed_day}", file=sys.stderr)
    print(
        f"{len(report.pushed)} pushed, {len(report.skipped)} skipped, {len(report.failed)} failed"
    )
    return 1 if report.failed else 0


async def _recall(config: Config, secrets: Secrets, *, chat: ChatKey, query: str) -> int:
    async with opened_parts(config, secrets) as parts:
        ops = MemoryOps(parts.settings, parts.memory, parts.store)
        preview = await ops.recall_preview(chat, query)
    print(shell.recall_text(preview, say=Texts(config.bot.language)))
    return 0


def _run_with_memory(
    path: Path,
    command: Callable[[Config, Secrets], Coroutine[Any, Any, int]],
    *,
    asks_llm: bool = True,
) -> int:
    """Run a command that reads the memory: with its secrets, the persona and a log."""

    def run() -> int:
        config = load_config(path)
        secrets = read_secrets(config, console=True, llm=asks_llm)
        read_persona(config)
        prepare_data_dir(config)
        start_logging(
            config, secrets, level=resolve_log_level(None, config), stderr_level="WARNING"
        )
        return asyncio.run(command(config, secrets))

    return _exit_code(run)


def _run(path: Path, command: Command) -> int:
    """Run a command that needs no secret, only the config at ``path`` and its data."""

    def run() -> int:
        config = load_config(path)
        prepare_data_dir(config)
        return asyncio.run(command(config))

    return _exit_code(run)


def _exit_code(run: Callable[[], int]) -> int:
    """Return what ``run`` returns, or the exit code of its failure, said in one line."""
    try:
        return run()
    except BrokenPipeError:  # the reader left early (``| head``): the CLI ends quietly
        raise
    except (PacebotError, OSError) as exc:
        return shell.failed(exc)
    except KeyboardInterrupt:
        return 130
