"""What an operator sees and does, written once for every face.

The chat commands (``bot/commands/``), the command line (``adapters/cli.py`` through the
composition root) and the dashboard (``adapters/web/``) only parse and render: the read
model and the actions behind them live here. :class:`StatusOps` reads what the running
bot is doing (what waits, what is queued, what failed, each chat's phase, the prompt),
:class:`MemoryOps` reads and changes what it remembers (the prompt stack, recall, people
and their facts), :class:`TraceOps` reads how batches were answered,
:class:`StickerOps` the chats' sticker collections, :class:`InitiativeOps` their later
items, openers and quiet periods, :class:`CostOps` what the LLM calls cost,
:class:`AccessOps` which chats are served, and :class:`ToolOps` the tools a chat is offered.
:class:`Ops` holds them for a running bot.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.ops.access import AccessOps
from bot.ops.cost import CostOps
from bot.ops.initiative import InitiativeOps
from bot.ops.memory import MemoryOps
from bot.ops.status import StatusOps
from bot.ops.stickers import StickerOps
from bot.ops.tools import ToolOps
from bot.ops.traces import TraceOps


@dataclass(frozen=True, slots=True)
class Ops:
    """Everything an operator can see or do in a running bot."""

    status: StatusOps
    memory: MemoryOps
    traces: TraceOps
    stickers: StickerOps
    initiative: InitiativeOps
    cost: CostOps
    access: AccessOps
    tools: ToolOps
