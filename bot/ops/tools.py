"""What an operator sees of the tools: what a chat is offered, and each source's state.

``/tools`` and the dashboard read :class:`ToolOps`; it asks the same rules the answer
does (``bot/tools/offer.py``), so what it lists is what an addressed batch of the chat
would be offered.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config.settings import Settings
from bot.models import ChatKey
from bot.tools.offer import allowed_tools
from bot.tools.ports import Toolbox, ToolSource


@dataclass(frozen=True, slots=True)
class ChatTools:
    """The tools of one chat: those offered to an addressed batch, and why there are none."""

    offered: tuple[str, ...]  # to a batch holding an admin's message
    admins_only: tuple[str, ...]  # of those, the ones only such a batch gets
    off: str  # why no tool is offered here at all ("" when some may be)
    max_rounds: int
    sources: tuple[ToolSource, ...]


class ToolOps:
    """Read the tools as the running ``[tools]`` and the chat's profile offer them."""

    def __init__(self, config: Settings, toolbox: Toolbox | None) -> None:
        self._config = config
        self._toolbox = toolbox

    def of(self, chat: ChatKey) -> ChatTools:
        """Return what ``chat`` is offered, and each source's state."""
        config = self._config
        tools = config.tools
        sources = self._toolbox.sources() if self._toolbox is not None else ()
        ready = self._toolbox.ready() if self._toolbox is not None else ()
        offered = tuple(tool.name for tool in allowed_tools(config, chat, ready, admin=True))
        admins_only = tuple(name for name in offered if name in tools.admins_only)
        off = ""
        if not tools.enabled:
            off = "[tools] enabled = false"
        elif chat.is_group and not tools.in_groups:
            off = "[tools] in_groups = false"
        elif not chat.is_group and not tools.in_private:
            off = "[tools] in_private = false"
        return ChatTools(offered, admins_only, off, tools.max_rounds, sources)
