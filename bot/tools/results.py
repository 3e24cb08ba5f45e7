"""One round of the model's tool calls: run together, each bounded, each result data.

Every call of a round runs at once, each under ``[tools] timeout_s``; memory searches run
one after the other among themselves (only the first may embed), beside the others. A
call the offer does not hold (outside an allow list, ``admins_only``, unknown) is not run.
Arguments that repeat a line of the system prompt are refused: a result cannot make the
model hand the persona, the summaries or the contract to a server. Whatever goes wrong
becomes ``{"error": "…"}`` for the model, never an exception and never a chatter's text.

Each result reaches the model fenced between ``<tool-result>`` marks (a mark inside it is
defused) and cut at ``max_result_chars``; the contract tells the model it is data, never
instructions. Each call is noted in the trace: tool, arguments with secrets redacted,
duration, result size, outcome.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from loguru import logger

from bot.errors import ToolFailed
from bot.memory.stack import Memory
from bot.memory.tool import NAME as MEMORY_TOOL
from bot.memory.tool import tool_results
from bot.models import ChatKey, ChatMessage, ToolCall
from bot.prompt import clip
from bot.replies.guards import repeats_prompt
from bot.tools.offer import Offer
from bot.tools.ports import Toolbox
from bot.trace import TraceNotes

CALLS_PER_ROUND_MAX = 4
"""Calls of one answer that are run; any more are told they were not."""
_FENCE_RE = re.compile(r"<(/?)tool-result", re.IGNORECASE)
_SECRET_KEY_RE = re.compile(r"key|token|secret|password|passwd|auth|cookie", re.IGNORECASE)
_KEYISH_RE = re.compile(r"\b(?:sk|pk|rk|tvly|ghp|key)[-_][A-Za-z0-9_*.\-]{6,}|(?i:bearer)\s+\S+")
REDACTED = "***"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one call came to: the text the model reads, and how it ended."""

    text: str
    outcome: str = "ok"  # "ok", "error", "timeout" or "refused"
    duration_s: float = 0.0


def error(reason: str) -> str:
    """Return the result the model gets for a call that gave none."""
    return json.dumps({"error": reason}, ensure_ascii=False)


def fenced(name: str, text: str, *, max_chars: int) -> str:
    """Return a result as the model reads it: cut, its fence marks defused, fenced."""
    if len(text) > max_chars:
        text = f"{text[:max_chars]}\n[… {len(text) - max_chars} more characters cut]"
    text = _FENCE_RE.sub(r"‹\1tool-result", text)
    return f'<tool-result name="{name}">\n{text}\n</tool-result>'


def redacted(arguments: str) -> str:
    """Return a call's arguments for the trace: values of secret-looking keys and
    key-shaped strings replaced by ``***``."""
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return _KEYISH_RE.sub(REDACTED, arguments)
    return _KEYISH_RE.sub(REDACTED, json.dumps(_hide(data), ensure_ascii=False))


def _hide(value: object) -> object:
    if isinstance(value, dict):
        return {
            key: REDACTED if _SECRET_KEY_RE.search(str(key)) else _hide(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hide(item) for item in value]
    return value


def _strings(value: object) -> list[str]:
    """Return every string of a JSON value, keys and values, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (str(key), *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


class ToolRound:
    """Run the calls of one answer and give the model their results."""

    def __init__(self, memory: Memory, toolbox: Toolbox | None) -> None:
        self._memory = memory
        self._toolbox = toolbox

    async def answer(
        self,
        calls: Sequence[ToolCall],
        offer: Offer,
        *,
        chat: ChatKey,
        notes: TraceNotes,
        prompt: frozenset[str],
        may_embed: bool,
    ) -> list[ChatMessage]:
        """Run ``calls`` at once; return one fenced ``tool`` message per call, in order."""
        run = list(calls[:CALLS_PER_ROUND_MAX])
        searches = [call for call in run if call.name == MEMORY_TOOL and call.name in offer.names]
        others = [call for call in run if call not in searches]
        found, rest = await asyncio.gather(
            self._search(searches, chat, offer, may_embed),
            asyncio.gather(*(self._outside(call, offer, prompt) for call in others)),
        )
        outcome_of = dict(zip(searches, found, strict=True)) | dict(zip(others, rest, strict=True))
        answers: list[ChatMessage] = []
        for call in calls:
            refused = error(f"not run: at most {CALLS_PER_ROUND_MAX} calls at once")
            outcome = outcome_of.get(call, Outcome(refused, "refused"))
            notes.tool(
                call,
                outcome.text,
                arguments=redacted(call.arguments),
                duration_s=outcome.duration_s,
                outcome=outcome.outcome,
            )
            text = fenced(call.name, outcome.text, max_chars=offer.max_result_chars)
            answers.append(ChatMessage("tool", text, tool_call_id=call.id))
        return answers

    async def _search(
        self, calls: list[ToolCall], chat: ChatKey, offer: Offer, may_embed: bool
    ) -> list[Outcome]:
        """Answer the memory searches of a round, one after the other, within the bound."""
        if not calls:
            return []
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(offer.timeout_s):
                found = await tool_results(self._memory, chat, calls, may_embed=may_embed)
        except TimeoutError:
            took = loop.time() - started
            late = error(f"timed out after {offer.timeout_s:g} s")
            return [Outcome(late, "timeout", took) for _ in calls]
        took = loop.time() - started
        return [Outcome(message.content, "ok", took) for message in found]

    async def _outside(self, call: ToolCall, offer: Offer, prompt: frozenset[str]) -> Outcome:
        """Run one call of a tool outside the core, or say why it was not run."""
        if call.name not in offer.names or self._toolbox is None:
            return Outcome(error(f"no tool named {clip(call.name, 64)!r} is offered"), "refused")
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            return Outcome(error("arguments must be a JSON object"), "refused")
        if repeats_prompt("\n".join(_strings(arguments)), prompt):
            reason = "refused: the arguments repeat your instructions; ask in your own words"
            return Outcome(error(reason), "refused")
        return await self._run(call.name, arguments, offer)

    async def _run(self, name: str, arguments: dict[str, object], offer: Offer) -> Outcome:
        assert self._toolbox is not None
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(offer.timeout_s):
                text = await self._toolbox.call(name, arguments)
        except TimeoutError:
            took = loop.time() - started
            logger.info("tool {} timed out after {:g} s", name, offer.timeout_s)
            return Outcome(error(f"timed out after {offer.timeout_s:g} s"), "timeout", took)
        except ToolFailed as exc:
            took = loop.time() - started
            logger.info("tool {} failed: {}", name, exc)
            return Outcome(error(str(exc)), "error", took)
        return Outcome(text, "ok", loop.time() - started)
