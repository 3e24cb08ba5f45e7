"""The tool loop: answer the model's calls, ask again, and at the end ask for the reply.

While the model's latest answer calls tools and rounds are left, the round's calls are
answered (:mod:`bot.tools.results`) and the model is asked once more. The last round's
call withholds the tools (``tool_choice = "none"``), so its answer is the reply JSON; a
batch therefore makes at most ``1 + max_rounds`` chat-completion calls. Before each extra
call the budget is read: over the hard cap no call is made (the batch ends with what it
has), over a soft cap the call is the last, the tools withheld.

With ``[tools]`` off this is the memory tool's one round of ``llm.memory_tool``, exactly
as it always was: its calls answered by recall one after the other, the second call of
the kind ``reply+memory``. With it on, every extra call is of the kind ``tool``, which is
how budgets and the cost report count them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loguru import logger

from bot.budget import Spending
from bot.calls import Calls
from bot.memory.stack import Memory
from bot.memory.tool import NAME as MEMORY_TOOL
from bot.memory.tool import follow_up, tool_results
from bot.models import ChatKey, ChatMessage, Completion
from bot.ports import LLM
from bot.replies.guards import prompt_lines
from bot.tools.offer import Offer
from bot.tools.ports import Toolbox
from bot.tools.results import ToolRound
from bot.trace import TraceNotes

LEGACY_KIND = "reply+memory"
TOOL_KIND = "tool"


@dataclass(frozen=True, slots=True)
class Looped:
    """Where the loop left the exchange: the messages, the model's last answer, the
    rounds spent, and whether a tool outside the core was called."""

    messages: list[ChatMessage]
    completion: Completion
    rounds: int
    outside: bool


class ToolLoop:
    """Spend a batch's tool rounds, each extra call metered like any other."""

    def __init__(
        self,
        calls: Calls,
        llm: LLM,
        memory: Memory,
        *,
        spending: Spending,
        toolbox: Toolbox | None,
        model: Callable[[], str],
    ) -> None:
        self._calls = calls
        self._llm = llm
        self._memory = memory
        self._spending = spending
        self._round = ToolRound(memory, toolbox)
        self._model = model

    async def run(
        self,
        messages: Sequence[ChatMessage],
        completion: Completion,
        offer: Offer,
        *,
        chat: ChatKey,
        notes: TraceNotes,
        may_embed: bool,
    ) -> Looped:
        """Answer ``completion``'s calls and ask again, within ``offer``'s rounds."""
        exchange = list(messages)
        rounds = 0
        outside = False
        prompt = prompt_lines(exchange[0].content) if exchange else frozenset()
        log = logger.bind(chat=str(chat), batch=notes.batch.id)
        while completion.tool_calls and rounds < offer.max_rounds:
            calls = completion.tool_calls
            if offer.legacy:
                log.info("the model searched memory {} time(s)", len(calls))
                results = await tool_results(self._memory, chat, calls, may_embed=may_embed)
                for call, result in zip(calls, results, strict=True):
                    notes.tool(call, result.content)
            else:
                hard = await self._spending.refusal(chat, optional=False)
                if hard is not None:
                    log.info("no tool round: {}", hard)
                    notes.guards.append(f"no tool round: {hard}")
                    break
                log.info("the model called {}", ", ".join(call.name for call in calls))
                results = await self._round.answer(
                    calls, offer, chat=chat, notes=notes, prompt=prompt, may_embed=may_embed
                )
                outside = outside or any(call.name != MEMORY_TOOL for call in calls)
            exchange = follow_up(exchange, completion, results)
            rounds += 1
            last = rounds >= offer.max_rounds or await self._withheld(offer, chat, notes)
            completion = await self._calls.ask(
                self._llm,
                exchange,
                kind=LEGACY_KIND if offer.legacy else TOOL_KIND,
                model=self._model(),
                notes=notes,
                tools=offer.tools,
                tool_choice="none" if last else "auto",
            )
        return Looped(exchange, completion, rounds, outside)

    async def _withheld(self, offer: Offer, chat: ChatKey, notes: TraceNotes) -> bool:
        """Tell whether a soft cap withholds the tools from the next call."""
        if offer.legacy:
            return False
        capped = await self._spending.refusal(chat, optional=True)
        if capped is not None:
            notes.guards.append(f"tools withheld: {capped}")
        return capped is not None
