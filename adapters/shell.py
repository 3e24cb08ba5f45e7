"""What ``pacebot trace``, ``recall`` and ``cost`` print, in the words the chat commands use,
and how any command says it failed.

The commands (``adapters/offline.py``) open the store and hand over the core's
operations; this module only renders what they return, in ``bot.language`` (the cost
table with rich).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from adapters.costs import report_json
from bot.budget import Spending, UsageLog, format_cost
from bot.commands.recall import in_prompt_line
from bot.config.model import Config
from bot.config.settings import Settings
from bot.errors import PacebotError
from bot.models import ChatKey
from bot.ops.cost import CostOps, CostReport, Spent
from bot.ops.memory import RecallPreview
from bot.ops.traces import TraceOps
from bot.texts import Texts
from bot.trace import TraceLog
from bot.trace_lines import format_trace

SEPARATOR = "\n" + "─" * 40 + "\n"


async def show_traces(config: Config, store: TraceLog, *, chat: ChatKey, count: int) -> int:
    """Print ``chat``'s ``count`` newest traces, newest first; 0 even when there are none."""
    say = Texts(config.bot.language)
    zone = config.bot.zone
    shown = await TraceOps(store, keep=config.memory.trace_keep).recent(chat, count=count)
    if not shown:
        print(say("trace_none", chat=chat))
        return 0
    print(SEPARATOR.join(format_trace(one, zone=zone, say=say) for one in shown))
    return 0


def recall_text(preview: RecallPreview, *, say: Texts) -> str:
    """Say where recall looked, what a batch asking this would get, and what the prompt
    already holds (as ``/recall`` does)."""
    recalled = preview.recalled
    lines = [recalled.searched()]
    if recalled.records:
        lines += [f"recalled by {recalled.how}:", "", recalled.render()]
    else:
        lines.append("nothing recalled")
    lines.append(in_prompt_line(say, preview))
    return "\n".join(lines)


def _spent_cells(spent: Spent, currency: str) -> list[str]:
    tokens = spent.tokens
    return [
        f"{tokens.calls:,}",
        f"{tokens.prompt_tokens:,}",
        f"{tokens.completion_tokens:,}",
        f"{tokens.total:,}" + (" ~" if tokens.estimated_calls else ""),
        format_cost(spent.cost, currency, priced=spent.priced),
    ]


async def show_cost(
    config: Config,
    store: UsageLog,
    *,
    days: int,
    chat: ChatKey | None,
    as_json: bool,
    now: Callable[[], datetime],
) -> int:
    """Print what the calls of the last ``days`` chat days cost, as a table or as JSON."""
    costs = CostOps(store, Spending(Settings(config), store, now=now))
    report = await costs.report(days=days, chat=chat)
    if as_json:
        daily = await costs.daily(days=days, chat=chat)
        print(json.dumps(report_json(report, daily), ensure_ascii=False, indent=2))
    else:
        _print_cost(report, zone=config.bot.zone)
    return 0


def _print_cost(report: CostReport, *, zone: ZoneInfo) -> None:
    """Print tokens and cost per chat day, chat and kind, and their total, as a table.

    A ``~`` marks tokens some of which were counted offline (the provider reported none).
    """
    from rich.console import Console  # only the cost report draws tables: not at start-up
    from rich.table import Table

    class Piped(Console):
        """rich's console, leaving a reader gone early (``| head``) to the command line,
        which ends quietly with the exit code SIGPIPE gives (rich itself exits 1)."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    whose = f" in {report.chat}" if report.chat else ""
    span = f"chat days {report.first} to {report.last} ({zone.key}){whose}"
    table = Table(title=f"LLM calls, {span}", title_justify="left")
    for name in ("day", "chat", "kind"):
        table.add_column(name)
    for name in ("calls", "prompt", "completion", "tokens", "cost"):
        table.add_column(name, justify="right")
    for row in report.rows:
        cells = _spent_cells(row.spent, report.currency)
        table.add_row(row.day.isoformat(), str(row.chat), row.kind, *cells)
    table.add_section()
    table.add_row("total", "", "", *_spent_cells(report.total, report.currency), style="bold")
    console = Piped(width=max(Console().width, 120))
    if not report.rows:
        console.print(f"No LLM call in {span}.")
    console.print(table)
    if report.total.tokens.estimated_calls:
        console.print("~ some of these tokens were counted offline: the provider reported none")


def failed(error: PacebotError | OSError) -> int:
    """Say why a command failed, in one line and without a traceback; return its exit code."""
    print(f"pacebot: {error}", file=sys.stderr)
    return 1
