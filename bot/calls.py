"""One LLM call of a batch, metered: its tokens are kept, and its trace notes it.

Every call a batch makes (the reply, a tool round, the nudge, the splitter, an initiative
batch's) goes through :class:`Calls`, so none can escape the budget or the trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.budget import Spending, usage_of
from bot.errors import LLMError
from bot.models import ChatMessage, Completion, ToolSpec
from bot.ports import LLM
from bot.trace import TraceNotes


class Calls:
    """Make a batch's LLM calls, keep what each cost and note each in the batch's trace."""

    def __init__(self, spending: Spending, *, json_mode: bool) -> None:
        self._spending = spending
        self._json_mode = json_mode

    async def ask(
        self,
        llm: LLM,
        messages: Sequence[ChatMessage],
        *,
        kind: str,
        model: str,
        notes: TraceNotes,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Make one call of ``kind``; note it, how long it took and how it ended in ``notes``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            completion = await llm.complete(
                messages, json_mode=self._json_mode, tools=tools, tool_choice=tool_choice
            )
        except LLMError as exc:
            notes.call(kind, model, loop.time() - started, error=str(exc))
            raise
        usage = usage_of(messages, completion)
        notes.call(kind, model, loop.time() - started, completion, usage=usage)
        await self._spending.note(notes.batch.chat, kind, usage)
        return completion
