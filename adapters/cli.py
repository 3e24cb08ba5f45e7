"""The ``pacebot`` command line: run, console, check."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from adapters.runtime import chat_in_console, opened_parts, run, start_logging
from bot.config import Config, Secrets, enabled_platforms, load_config, read_persona, read_secrets
from bot.errors import ConfigError, PacebotError
from bot.log import setup_logging
from bot.memory import SummaryResult
from bot.models import ChatKey
from scheduler.nightly import days_to_summarise, pending_work, summarise_days

NOTHING_ENABLED = (
    "no platform is enabled: set enabled = true under [telegram] or [qq], or use `pacebot console`"
)
_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pacebot",
        description="A chatbot that waits, answers in paced messages and remembers.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_help = "configuration file (default: config.toml)"
    level_help = "log level (default: $PACEBOT_LOG_LEVEL, else bot.log_level)"
    for name, help_text in (
        ("run", "start every enabled platform; stop with Ctrl-C or SIGTERM"),
        ("console", "chat with the bot in this terminal (you are an admin)"),
    ):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("-c", "--config", type=Path, default=Path("config.toml"), help=config_help)
        sub.add_argument("--log-level", type=str.upper, choices=_LEVELS, help=level_help)
    check = commands.add_parser(
        "check", help="validate the config and environment", description="validate the config"
    )
    check.add_argument("-c", "--config", type=Path, default=Path("config.toml"), help=config_help)
    summarize = commands.add_parser(
        "summarize",
        help="run the nightly summaries by hand",
        description="Summarise chat days now. Without options: yesterday, every chat that "
        "has messages and no summary (popped days stay popped).",
    )
    summarize.add_argument(
        "-c", "--config", type=Path, default=Path("config.toml"), help=config_help
    )
    summarize.add_argument(
        "--date", type=date.fromisoformat, help="this chat day (YYYY-MM-DD), even if popped"
    )
    summarize.add_argument("--chat", type=_chat_key, help="only this chat, e.g. qq:group:456")
    summarize.add_argument(
        "--all-missing",
        action="store_true",
        help="every finished day of the last memory.catch_up_days without a summary",
    )
    recall = commands.add_parser(
        "recall", help="search a chat's memory", description="Show what recall finds."
    )
    recall.add_argument("query", help="a question, e.g. 昨天聊了什么")
    recall.add_argument("--chat", type=_chat_key, required=True, help="the chat key")
    recall.add_argument("-c", "--config", type=Path, default=Path("config.toml"), help=config_help)
    return parser


def _chat_key(text: str) -> ChatKey:
    try:
        return ChatKey.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _log_level(args: argparse.Namespace, config: Config) -> str:
    chosen = getattr(args, "log_level", None) or os.environ.get("PACEBOT_LOG_LEVEL", "").upper()
    if chosen and chosen not in _LEVELS:
        msg = f"PACEBOT_LOG_LEVEL = {chosen!r}: must be one of {', '.join(_LEVELS)}"
        raise ConfigError(msg)
    return chosen or config.bot.log_level


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


def _serve(args: argparse.Namespace) -> int:
    console = args.command == "console"
    try:
        config = load_config(args.config)
        secrets: Secrets = read_secrets(config, console=console)
        read_persona(config)
        if not console and not enabled_platforms(config):
            msg = NOTHING_ENABLED
            raise ConfigError(msg)
        level = _log_level(args, config)
        # In the console the terminal is the chat: only problems go to stderr unless asked.
        chosen = args.log_level or os.environ.get("PACEBOT_LOG_LEVEL")
        stderr_level = "WARNING" if console and not chosen else None
        start_logging(config, secrets, level=level, stderr_level=stderr_level)
        asyncio.run(chat_in_console(config, secrets) if console else run(config, secrets))
    except PacebotError as exc:
        print(f"pacebot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


async def _summarize(config: Config, secrets: Secrets, args: argparse.Namespace) -> int:
    async with opened_parts(config, secrets) as parts:
        memory = parts.memory
        if args.all_missing:
            days = days_to_summarise(memory.today(), catch_up_days=config.memory.catch_up_days)
        else:
            days = [args.date or memory.today() - timedelta(days=1)]
        on_purpose = args.date is not None
        work = await pending_work(parts.store, config, days, only=args.chat, on_purpose=on_purpose)
        if not work:
            print("nothing to summarise")
            return 0
        with Progress(console=Console(stderr=True)) as progress:
            task = progress.add_task("summarising", total=len(work))

            def advance(chat: ChatKey, day: date, result: SummaryResult | None) -> None:
                progress.advance(task)

            report = await summarise_days(
                memory,
                work,
                concurrency=config.memory.summary_concurrency,
                on_purpose=on_purpose,
                progress=advance,
            )
    for chat, day in report.pushed:
        print(f"summarised {chat} {day}")
    for chat, day in report.failed:
        print(f"failed {chat} {day}", file=sys.stderr)
    print(
        f"{len(report.pushed)} pushed, {len(report.skipped)} skipped, {len(report.failed)} failed"
    )
    return 1 if report.failed else 0


async def _recall(config: Config, secrets: Secrets, args: argparse.Namespace) -> int:
    async with opened_parts(config, secrets) as parts:
        recalled = await parts.memory.recall(args.chat, [args.query])
    if not recalled.records:
        print("nothing recalled")
        return 0
    print(f"recalled by {recalled.how}:\n")
    print(recalled.render())
    return 0


def _memory_command(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        secrets = read_secrets(config, console=True)
        read_persona(config)
        setup_logging(
            level=_log_level(args, config),
            log_dir=config.log_dir,
            secrets=secrets.every,
            stderr_level="WARNING",
        )
        command = _summarize if args.command == "summarize" else _recall
        return asyncio.run(command(config, secrets, args))
    except PacebotError as exc:
        print(f"pacebot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pacebot`` command."""
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check(args.config)
    if args.command in {"summarize", "recall"}:
        return _memory_command(args)
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
