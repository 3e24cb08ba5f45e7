"""The ``pacebot`` command line: run, console, check."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.runtime import chat_in_console, run, start_logging
from bot.config import Config, Secrets, enabled_platforms, load_config, read_persona, read_secrets
from bot.errors import ConfigError, PacebotError

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
    return parser


def _log_level(args: argparse.Namespace, config: Config) -> str:
    chosen = args.log_level or os.environ.get("PACEBOT_LOG_LEVEL", "").upper()
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
        problems.append(
            "no platform is enabled: set [telegram] enabled = true (or use `pacebot console`)"
        )
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
            msg = "no platform is enabled: set [telegram] enabled = true, or use `pacebot console`"
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pacebot`` command."""
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check(args.config)
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
