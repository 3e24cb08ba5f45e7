"""What the tool loop and ``/tools`` need of the tools outside the core.

The adapters implement :class:`Toolbox` over the MCP servers of ``[[tools.mcp]]`` and the
web search of ``[tools.web_search]``; the memory tool is the core's own
(``bot/memory/tool.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.models import ToolSpec


@dataclass(frozen=True, slots=True)
class ToolSource:
    """One source of tools as ``/tools`` shows it: an MCP server, or the web search."""

    name: str
    kind: str  # "stdio", "http" (an MCP server) or "web search"
    state: str  # "starting", "running", "restarting" or "stopped"
    tools: tuple[str, ...] = ()  # the tools it offers now (its allow list applied)
    detail: str = ""  # why it is not running, when it is not


class Toolbox(Protocol):
    """The tools outside the core: each allowed by its source, ready while it runs."""

    async def started(self, *, within_s: float) -> None:
        """Wait until every source has tried to start once (the servers start beside the
        platforms), ``within_s`` at most."""
        ...

    def ready(self) -> tuple[ToolSpec, ...]:
        """Return the tools that can be called now, each allowed by its source's list."""
        ...

    async def call(self, name: str, arguments: Mapping[str, object]) -> str:
        """Run the tool ``name``; return its result as text.

        Raise ``ToolFailed`` when it cannot give one: unknown, its source down, or the
        tool reported an error. The caller bounds how long it may take.
        """
        ...

    def sources(self) -> tuple[ToolSource, ...]:
        """Return each source of tools and its state."""
        ...
