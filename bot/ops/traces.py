"""How batches were answered, as ``/trace``, ``pacebot trace`` and the dashboard read it."""

from __future__ import annotations

from bot.models import ChatKey
from bot.trace import ShownTrace, TraceLog


class TraceOps:
    """Read a chat's newest batch traces (the store keeps ``memory.trace_keep`` of them)."""

    def __init__(self, traces: TraceLog, *, keep: int) -> None:
        self._traces = traces
        self.keep = keep

    async def recent(self, chat: ChatKey, *, count: int) -> list[ShownTrace]:
        """Return the chat's ``count`` newest traces, newest first, with each reply's fate."""
        return await self._traces.recent_traces(chat, count=count)

    async def nth(self, chat: ChatKey, number: int) -> tuple[ShownTrace | None, int]:
        """Return the chat's ``number``-th newest trace (1 = the newest), if it is kept,
        and how many of the newest ``number`` are kept."""
        shown = await self.recent(chat, count=number)
        return (shown[number - 1] if len(shown) >= number else None), len(shown)
