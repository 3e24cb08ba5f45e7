"""The ``pacebot`` command line: parse the arguments and hand each command to its module.

``run`` and ``console`` go to the composition root (:mod:`adapters.app`), the only module
outside ``storage/`` and ``scheduler/`` that may import them; ``summarize``, ``recall``,
``trace`` and ``cost`` to :mod:`adapters.offline`, which opens its parts through it;
``check`` to :mod:`adapters.checks`; ``reload`` to :mod:`adapters.reload`; ``plugin
install`` and ``plugin list`` to :mod:`adapters.plugins.install`. This module imports them
(and pydantic, the database, the LLM SDK behind them) only once a command runs: ``pacebot
--help`` and ``--version`` answer from the standard library alone, at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.models import ChatKey


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pacebot",
        description="A chatbot that waits, answers in paced messages and remembers.",
    )
    parser.add_argument("--version", action="version", version=f"pacebot {_version()}")
    # Every command reads the config: declare -c/--config once for all of them.
    with_config = argparse.ArgumentParser(add_help=False)
    with_config.add_argument(
        "-c",
        "--config",
        type=Path,
        default=Path("config.toml"),
        help="configuration file (default: config.toml)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # The app checks the level, as it checks $PACEBOT_LOG_LEVEL: one list of the levels.
    level_help = "log level, e.g. DEBUG (default: $PACEBOT_LOG_LEVEL, else bot.log_level)"
    for name, help_text in (
        ("run", "start every enabled platform; stop with Ctrl-C or SIGTERM"),
        ("console", "chat with the bot in this terminal (you are an admin)"),
    ):
        sub = commands.add_parser(
            name, parents=[with_config], help=help_text, description=help_text
        )
        sub.add_argument("--log-level", type=str.upper, help=level_help)
    check = commands.add_parser(
        "check",
        parents=[with_config],
        help="validate the config and environment",
        description="Validate the config and the environment; say what would start.",
    )
    check.add_argument(
        "--online",
        action="store_true",
        help="also contact the far ends: the LLM (one tiny request; one more offering the "
        "memory tool when llm.memory_tool is on), the embeddings endpoint when "
        "[memory.embeddings] is on (one word), the audio endpoints as far as [voice] turns "
        "them on (a second of silence heard, one word spoken) and Telegram (getMe)",
    )
    commands.add_parser(
        "reload",
        parents=[with_config],
        help="apply the config file to the running pacebot run, without a restart",
        description=(
            "Check the config file, then ask the pacebot run of it to reload it (SIGHUP):"
            " what is live applies from the next batch, what needs a restart is logged."
        ),
    )
    summarize = commands.add_parser(
        "summarize",
        parents=[with_config],
        help="run the nightly summaries by hand",
        description="Summarise chat days now. Without options: yesterday, every chat that "
        "has messages and no summary (popped days stay popped). Today is allowed: its "
        "summary is partial, and the nightly run summarises the whole day in its place once "
        "it has ended.",
    )
    summarize.add_argument(
        "--date",
        type=date.fromisoformat,
        help="this chat day (YYYY-MM-DD), even if popped; today's summary is partial",
    )
    summarize.add_argument("--chat", type=_chat_key, help="only this chat, e.g. qq:group:456")
    summarize.add_argument(
        "--all-missing",
        action="store_true",
        help="every finished day of the last memory.catch_up_days without a summary",
    )
    recall = commands.add_parser(
        "recall",
        parents=[with_config],
        help="search a chat's memory",
        description="Show what recall finds.",
    )
    recall.add_argument("query", help="a question, e.g. 昨天聊了什么")
    recall.add_argument("--chat", type=_chat_key, required=True, help="the chat key")
    trace = commands.add_parser(
        "trace",
        parents=[with_config],
        help="show how the bot answered a chat's newest batches",
        description="Print a chat's newest batch traces, newest first (as /trace shows them).",
    )
    trace.add_argument("--chat", type=_chat_key, required=True, help="the chat key")
    trace.add_argument(
        "-n", type=_positive, default=1, dest="count", help="how many traces (default 1)"
    )
    cost = commands.add_parser(
        "cost",
        parents=[with_config],
        help="show what the LLM calls cost",
        description="Print tokens and cost per chat day, chat and kind of call, with the total.",
    )
    cost.add_argument(
        "--days",
        type=_positive,
        default=7,
        help="the last N chat days, today included (default 7)",
    )
    cost.add_argument("--chat", type=_chat_key, help="only this chat, e.g. qq:group:456")
    cost.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plugin = commands.add_parser(
        "plugin",
        help="install and list the nonebot plugins run beside pacebot on QQ",
        description="nonebot2 plugins, run beside pacebot on QQ ([plugins] in the config).",
    )
    plugin_commands = plugin.add_subparsers(dest="plugin_command", required=True, metavar="ACTION")
    install = plugin_commands.add_parser(
        "install",
        parents=[with_config],
        help="pip-install a plugin into pacebot's environment and add it to [plugins] nonebot",
        description="Install a nonebot2 plugin with pacebot's own pip and add its module to "
        "[plugins] nonebot of the config (comments kept).",
    )
    install.add_argument("name", help="the package, e.g. nonebot-plugin-status")
    plugin_commands.add_parser(
        "list",
        parents=[with_config],
        help="show each plugin [plugins] nonebot names, with its commands",
        description="Load the plugins the config names and show each with its matchers.",
    )
    return parser


def _version() -> str:
    """Return the installed package's version, read from its metadata (no import of it)."""
    try:
        return metadata.version("pacebot")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"expected a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return number


def _chat_key(text: str) -> ChatKey:
    from bot.errors import ConfigError
    from bot.models import ChatKey

    try:
        return ChatKey.from_text(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


SIGPIPE_EXIT = 128 + 13
"""The exit code of a command whose reader left early, as a shell reports one SIGPIPE ended."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pacebot`` command; a reader that leaves early (``| head``) ends it quietly."""
    try:
        code = _command(argv)
        sys.stdout.flush()  # a reader gone shows here, not as a complaint at exit
    except BrokenPipeError:
        # What is left to print goes nowhere, and Python's flush at exit finds no pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT
    return code


def _command(argv: Sequence[str] | None) -> int:
    """Parse the arguments and run the command they name."""
    args = _parser().parse_args(argv)
    if args.command == "check":
        from adapters import checks

        return checks.check(args.config, online=args.online)
    if args.command in {"summarize", "recall", "trace", "cost"}:
        return _offline(args)
    if args.command == "reload":
        from adapters.reload import ask_to_reload

        return ask_to_reload(args.config)
    if args.command == "plugin":
        from adapters.plugins import install

        if args.plugin_command == "install":
            return install.install(args.config, args.name)
        return install.show(args.config)
    _leave_out_what_a_run_never_uses()
    from adapters import app

    return app.serve(args.config, console=args.command == "console", log_level=args.log_level)


# Modules the libraries of a run import for features pacebot never uses, about 6 MiB that a
# bot would hold all its life: httpx's command-line client (rich, pygments and click, when
# installed), uvicorn's reloader (watchfiles), and the HTTP/2 protocol (h2, which httpcore
# and httpcore2 load whenever it is installed; every client of a run speaks HTTP/1.1).
# ``None`` in ``sys.modules`` reads as "not installed" to an import, and each library carries
# on without.
_UNUSED_IN_A_RUN = ("httpx._main", "watchfiles", "h2")
# Packages whose __init__ imports more than a run uses: nonebot's OneBot adapter imports
# its v12 protocol beside the v11 that NapCat speaks (about 1 MiB).
_DEFERRED_IN_A_RUN = ("nonebot.adapters.onebot",)


def _leave_out_what_a_run_never_uses() -> None:
    """Keep a run from importing :data:`_UNUSED_IN_A_RUN`, and defer the ``__init__`` of
    :data:`_DEFERRED_IN_A_RUN` (call it before any of their importers is imported)."""
    for name in _UNUSED_IN_A_RUN:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    from adapters.package_init import defer_package_init

    for name in _DEFERRED_IN_A_RUN:
        defer_package_init(name)


def _offline(args: argparse.Namespace) -> int:
    """Run a command that needs no platform."""
    from adapters import offline

    if args.command == "summarize":
        return offline.summarize(
            args.config, day=args.date, chat=args.chat, all_missing=args.all_missing
        )
    if args.command == "trace":
        return offline.trace(args.config, chat=args.chat, count=args.count)
    if args.command == "cost":
        return offline.cost(args.config, days=args.days, chat=args.chat, as_json=args.json)
    return offline.recall(args.config, chat=args.chat, query=args.query)


if __name__ == "__main__":
    sys.exit(main())
