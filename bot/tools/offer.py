"""Which tools a batch is offered, and how many extra calls it may spend on them.

With ``[tools]`` off, a reply call offers the memory tool of ``llm.memory_tool`` alone, for
one extra call, exactly as before tools existed (:data:`LEGACY`). With it on, tools go only
where someone asked for an answer:

- a private chat (``in_private``) or a group batch holding a message that addresses the
  bot (``in_groups``); never an unaddressed batch (``smart`` or ``always`` mode), never the
  bot's own batches unless ``in_initiative``;
- each tool the chat's profile allows (``tools``, unset = all), ``admins_only`` tools only
  when a message of the batch is an admin's;
- none over a soft cap of ``[budget]`` (the hard cap stops the call itself).

The memory tool is one tool among them, its calls counted against ``max_rounds`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.budget import Spending
from bot.config.settings import Settings
from bot.memory.tool import SEARCH_MEMORY
from bot.models import Batch, ChatKey, ToolSpec
from bot.tools.ports import Toolbox

LEGACY_ROUNDS = 1


@dataclass(frozen=True, slots=True)
class Offer:
    """The tools a batch's reply call offers, and the rounds it may spend on their results."""

    tools: tuple[ToolSpec, ...] = ()
    max_rounds: int = 0
    legacy: bool = False  # [tools] off: the memory tool alone, as llm.memory_tool offers it
    withheld: str = ""  # why tools were not offered though [tools] is on, for the trace
    timeout_s: float = 0.0
    max_result_chars: int = 0

    @property
    def names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.tools)


NO_TOOLS = Offer()
LEGACY = Offer((SEARCH_MEMORY,), LEGACY_ROUNDS, legacy=True)


def allowed_tools(
    config: Settings,
    chat: ChatKey,
    ready: Sequence[ToolSpec],
    *,
    admin: bool,
) -> tuple[ToolSpec, ...]:
    """Return the tools a batch of ``chat`` would be offered: the memory tool (with
    ``llm.memory_tool``) and those ``ready``, as the chat's profile and ``admins_only``
    allow. Addressing, the chat kind and the caps are the caller's."""
    allowed = config.for_chat(chat).tools
    admins_only = set(config.tools.admins_only)
    tools = ((SEARCH_MEMORY,) if config.llm.memory_tool else ()) + tuple(ready)
    seen: set[str] = set()
    offered = []
    for tool in tools:
        if tool.name in seen or (allowed is not None and tool.name not in allowed):
            continue
        if tool.name in admins_only and not admin:
            continue
        seen.add(tool.name)
        offered.append(tool)
    return tuple(offered)


def addresses_bot(batch: Batch) -> bool:
    """Tell whether someone asked the bot something here: a private chat, or a group
    batch holding a message that addresses it."""
    return not batch.chat.is_group or any(m.addresses_bot for m in batch.messages)


class ToolOffers:
    """Decide each batch's tools as the running ``[tools]`` says."""

    def __init__(self, config: Settings, spending: Spending, toolbox: Toolbox | None) -> None:
        self._config = config
        self._spending = spending
        self._toolbox = toolbox

    async def ready(self) -> tuple[ToolSpec, ...]:
        """Return the outside tools that can be called now; in the first moments after a
        start, once the servers have tried to start (``timeout_s`` at most)."""
        if self._toolbox is None:
            return ()
        await self._toolbox.started(within_s=self._config.tools.timeout_s)
        return self._toolbox.ready()

    async def offer(self, batch: Batch, *, initiative: bool = False) -> Offer:
        """Return what ``batch``'s reply call offers (``initiative``: the bot's own batch)."""
        config = self._config
        tools = config.tools
        if not tools.enabled:
            if initiative or not config.llm.memory_tool:
                return NO_TOOLS
            return LEGACY
        if not self._may_have_tools(batch, initiative=initiative):
            return NO_TOOLS
        admin = any(
            not m.from_bot and config.is_admin(batch.chat, m.sender_id) for m in batch.messages
        )
        offered = allowed_tools(config, batch.chat, await self.ready(), admin=admin)
        if not offered:
            return NO_TOOLS
        capped = await self._spending.refusal(batch.chat, optional=True)
        if capped is not None:
            return Offer(withheld=f"tools withheld: {capped}")
        return Offer(
            offered,
            tools.max_rounds,
            timeout_s=tools.timeout_s,
            max_result_chars=tools.max_result_chars,
        )

    def _may_have_tools(self, batch: Batch, *, initiative: bool) -> bool:
        tools = self._config.tools
        if initiative:
            return tools.in_initiative
        if not addresses_bot(batch):
            return False
        return tools.in_groups if batch.chat.is_group else tools.in_private
