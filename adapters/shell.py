"""What ``pacebot trace`` and ``pacebot recall`` print, in the words the chat commands use.

The composition root opens the store and hands over the core's operations; this module
only renders what they return, in ``bot.language``.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from bot.commands.recall import in_prompt_line
from bot.models import ChatKey
from bot.ops.memory import RecallPreview
from bot.ops.traces import TraceOps
from bot.texts import Texts
from bot.trace import format_trace

SEPARATOR = "\n" + "─" * 40 + "\n"


async def print_traces(
    traces: TraceOps, *, chat: ChatKey, count: int, zone: ZoneInfo, say: Texts
) -> int:
    """Print ``chat``'s ``count`` newest traces, newest first; 0 even when there are none."""
    shown = await traces.recent(chat, count=count)
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
