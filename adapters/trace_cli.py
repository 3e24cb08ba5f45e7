"""``pacebot trace``: print a chat's newest batch traces from the shell.

The composition root opens the store and hands it over as a :class:`bot.ports.TraceLog`;
this module only reads and prints, in the words ``/trace`` uses, in ``bot.language``.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from bot.models import ChatKey
from bot.ports import TraceLog
from bot.texts import Texts
from bot.trace import format_trace

SEPARATOR = "\n" + "─" * 40 + "\n"


async def print_traces(
    traces: TraceLog, *, chat: ChatKey, count: int, zone: ZoneInfo, say: Texts
) -> int:
    """Print ``chat``'s ``count`` newest traces, newest first; 0 even when there are none."""
    shown = await traces.recent_traces(chat, count=count)
    if not shown:
        print(say("trace_none", chat=chat))
        return 0
    print(SEPARATOR.join(format_trace(one, zone=zone, say=say) for one in shown))
    return 0
