"""Why the bot said what it said: one trace per batch, for admins (SPEC §15).

A :class:`TraceNotes` collects along the answer path what the batch held, what the
prompt was made of, what recall found, each LLM call (with the model's name, latency
and tokens its :class:`~bot.models.Completion` reports), each memory-tool call and its
result, and which tier of the reply fallback chain produced the replies; it freezes
into a :class:`Trace` that the store keeps (the newest ``memory.trace_keep`` per chat).
Each reply's fate is read from the outbox when a trace is shown. A trace holds no
secret: no key, token or endpoint URL, only the model's name and what the model saw
and wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

from pydantic import TypeAdapter

from bot.models import Batch, BatchOutcome, ChatKey, Completion, ToolCall
from bot.prompt import clip

RAW_CHARS_MAX = 1500  # of the model's raw output kept in a trace
FATE_CHARS_MAX = 80  # of each reply shown beside its fate
TOOL_CHARS_MAX = 300  # of a tool call's arguments, and of its result, kept in a trace
PROMPT_PARTS = ("persona", "summaries", "people", "recalled", "history", "batch", "contract")
WHY = {
    BatchOutcome.ANSWERED: "answered",
    BatchOutcome.SILENT: "silent",
    BatchOutcome.SKIPPED: "not addressed",
    BatchOutcome.FAILED: "failed",
}


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One call to a model while answering a batch."""

    kind: str  # "reply", "reply+memory" (after a tool call), "nudge" or "splitter"
    model: str
    latency_ms: float
    finish_reason: str | None = None
    prompt_tokens: int | None = None  # only when the provider reports usage
    completion_tokens: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A function the model called while answering, and what pacebot answered it."""

    name: str
    arguments: str  # the model's JSON, trimmed to TOOL_CHARS_MAX
    result: str  # trimmed to TOOL_CHARS_MAX
    after_call: int  # the position in ``llm_calls`` of the call that asked for it


@dataclass(frozen=True, slots=True)
class RecallFound:
    """What recall found for a batch."""

    how: str = "nothing"  # "dates", "keywords" or "nothing"
    asked_dates: tuple[date, ...] = ()  # the chat days the batch asked about
    date_hits: tuple[date, ...] = ()  # summaries recalled by those dates
    keyword_hits: tuple[date, ...] = ()  # summaries recalled by keywords
    vector_hits: tuple[date, ...] = ()  # summaries recalled by meaning
    fact_hits: tuple[int, ...] = ()  # ids of facts recalled by meaning (as /facts shows them)
    in_prompt: tuple[date, ...] = ()  # days whose summaries the persona already holds


@dataclass(frozen=True, slots=True)
class Trace:
    """How one batch was answered."""

    chat: ChatKey
    batch_id: int
    at: datetime
    why: str  # "answered", "silent", "not addressed" or "failed"
    message_ids: tuple[str, ...]
    prompt_tokens: tuple[tuple[str, int], ...] = ()  # by part, in PROMPT_PARTS order
    recall: RecallFound = RecallFound()
    llm_calls: tuple[LLMCall, ...] = ()
    tool_steps: tuple[ToolStep, ...] = ()
    raw_output: str = ""  # the last reply call's text, trimmed to RAW_CHARS_MAX
    tier: str | None = None  # "json", "fenced", "splitter" or "text-split"
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReplyFate:
    """What became of one planned reply: sent, cancelled, dropped or still scheduled."""

    seq: int
    state: str
    content: str


@dataclass(frozen=True, slots=True)
class ShownTrace:
    """A stored trace with its replies' fates as the outbox has them now."""

    trace: Trace
    fates: tuple[ReplyFate, ...]


_TRACE_JSON = TypeAdapter(Trace)


def trace_to_json(trace: Trace) -> str:
    """Serialise a trace for the store."""
    return _TRACE_JSON.dump_json(trace).decode()


def trace_from_json(text: str) -> Trace:
    """Read a trace the store kept."""
    return _TRACE_JSON.validate_json(text)


@dataclass
class TraceNotes:
    """What the answer path learns about a batch, until it is frozen into a trace."""

    batch: Batch
    at: datetime
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    recall: RecallFound = RecallFound()
    calls: list[LLMCall] = field(default_factory=list)
    tool_steps: list[ToolStep] = field(default_factory=list)
    raw_output: str = ""
    tier: str | None = None

    def call(
        self,
        kind: str,
        model: str,
        latency_s: float,
        completion: Completion | None = None,
        *,
        error: str | None = None,
    ) -> None:
        """Note one LLM call; a reply call's text becomes the raw output.

        The model's name and the token counts come from ``completion`` where it has them.
        """
        latency_ms = round(latency_s * 1000, 1)
        if completion is None:
            self.calls.append(LLMCall(kind, model, latency_ms, error=error))
            return
        self.calls.append(
            LLMCall(
                kind,
                completion.model or model,
                latency_ms,
                completion.finish_reason,
                completion.prompt_tokens,
                completion.completion_tokens,
            )
        )
        if kind != "splitter":
            text = completion.text
            self.raw_output = clip(text, RAW_CHARS_MAX)

    def tool(self, call: ToolCall, result: str) -> None:
        """Note a function the last LLM call asked for, and its result."""
        self.tool_steps.append(
            ToolStep(
                call.name,
                clip(call.arguments, TOOL_CHARS_MAX),
                clip(result, TOOL_CHARS_MAX),
                after_call=len(self.calls) - 1,
            )
        )

    def freeze(self, outcome: BatchOutcome, *, error: str | None = None) -> Trace:
        """Return the trace of the batch as it ended."""
        return Trace(
            chat=self.batch.chat,
            batch_id=self.batch.id,
            at=self.at,
            why=WHY.get(outcome, str(outcome)),
            message_ids=tuple(m.message_id for m in self.batch.messages),
            prompt_tokens=tuple(
                (p, self.prompt_tokens[p]) for p in PROMPT_PARTS if p in self.prompt_tokens
            ),
            recall=self.recall,
            llm_calls=tuple(self.calls),
            tool_steps=tuple(self.tool_steps),
            raw_output=self.raw_output,
            tier=self.tier,
            error=error,
        )


def _days(days: Sequence[date]) -> str:
    return ", ".join(map(str, days)) or "none"


def _call_line(call: LLMCall) -> str:
    tokens = (
        f", tokens {call.prompt_tokens}→{call.completion_tokens}"
        if call.prompt_tokens is not None
        else ", tokens not reported"
    )
    end = f"error: {call.error}" if call.error else f"finish {call.finish_reason or '?'}"
    return f"- {call.kind} · {call.model} · {call.latency_ms:.0f} ms · {end}{tokens}"


def format_trace(shown: ShownTrace, *, zone: ZoneInfo) -> str:
    """Return a trace as text for an admin (``/trace``, ``pacebot trace``)."""
    trace = shown.trace
    local = trace.at.astimezone(zone)
    why = f"{trace.why} ({trace.error})" if trace.error else trace.why
    lines = [
        f"batch {trace.batch_id} of {trace.chat}, {local:%Y-%m-%d %H:%M:%S}: {why}",
        f"messages: {', '.join(trace.message_ids) or 'none'}",
    ]
    if trace.prompt_tokens:
        total = sum(tokens for _, tokens in trace.prompt_tokens)
        parts = ", ".join(f"{part} {tokens}" for part, tokens in trace.prompt_tokens)
        lines.append(f"prompt ~{total} tokens: {parts}")
    found = trace.recall
    lines.append(
        f"recall ({found.how}): dates asked {_days(found.asked_dates)}; "
        f"date hits {_days(found.date_hits)}; keyword hits {_days(found.keyword_hits)}; "
        f"vector hits {_days(found.vector_hits)}; already in the prompt {_days(found.in_prompt)}"
        + (f"; fact hits {', '.join(f'#{i}' for i in found.fact_hits)}" if found.fact_hits else "")
    )
    lines.append("LLM calls:" if trace.llm_calls else "LLM calls: none")
    for position, call in enumerate(trace.llm_calls):
        lines.append(_call_line(call))
        lines.extend(
            f"- tool {step.name} {step.arguments} → {step.result}"
            for step in trace.tool_steps
            if step.after_call == position
        )
    if trace.tier:
        lines.append(f"replies read by: {trace.tier}")
    for fate in shown.fates:
        lines.append(f"reply {fate.seq + 1}: {fate.state} · {clip(fate.content, FATE_CHARS_MAX)}")
    if trace.raw_output:
        lines.append("raw output:\n" + trace.raw_output)
    return "\n".join(lines)
