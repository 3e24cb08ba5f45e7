"""Answer LLM calls in process from a script: completions or errors, in order.

:class:`ScriptedLLM` implements :class:`bot.ports.LLM` beside the real
``adapters/openai_llm.py``, for tests and rehearsals that need the bot to think without a
model or a network. Each call takes the next step of the script: a :class:`Completion`
is returned (a plain string is short for one that stopped normally), an exception is
raised (``LLMUnavailable``, ``BadLLMReply``, ...). Every call is recorded, its messages
and ``json_mode`` included. A call past the end of the script raises
:class:`ScriptExhausted`, which is no ``PacebotError``: the core must not mistake a
missing step for an LLM outage and carry on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from bot.models import ChatMessage, Completion, ToolSpec

Step: TypeAlias = Completion | str | BaseException
"""One scripted answer: a completion, its text (finish reason ``stop``), or an error."""

_SHOWN_CHARS = 80  # of the last message, in the error when the script runs out


class ScriptExhausted(RuntimeError):
    """The scripted LLM was called more often than its script has steps."""


@dataclass(frozen=True, slots=True)
class LLMCall:
    """What the core asked the LLM once."""

    messages: tuple[ChatMessage, ...]
    json_mode: bool
    tools: tuple[str, ...] = ()  # the names of the functions offered


class ScriptedLLM:
    """An in-process :class:`bot.ports.LLM` that plays back a script."""

    def __init__(self, *steps: Step) -> None:
        """Script the answers to the first calls, in order."""
        self._steps: deque[Step] = deque(steps)
        self._calls: list[LLMCall] = []

    def add(self, *steps: Step) -> None:
        """Script the answers to later calls, after the ones already scripted."""
        self._steps.extend(steps)

    @property
    def calls(self) -> list[LLMCall]:
        """Return every call made so far, oldest first (failed ones included)."""
        return list(self._calls)

    @property
    def remaining(self) -> int:
        """Count the scripted steps not yet played."""
        return len(self._steps)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Record the call, then return or raise the next scripted step."""
        offered = tuple(tool.name for tool in tools) if tool_choice != "none" else ()
        self._calls.append(LLMCall(tuple(messages), json_mode, offered))
        if not self._steps:
            last = messages[-1].content[:_SHOWN_CHARS] if messages else ""
            msg = (
                f"the scripted LLM has no answer for call {len(self._calls)}: its script"
                f" had {len(self._calls) - 1} step(s); the call ended with {last!r}"
            )
            raise ScriptExhausted(msg)
        step = self._steps.popleft()
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return Completion(step, finish_reason="stop")
        return step
