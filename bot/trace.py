"""Why the bot said what it said: one trace per batch, for admins (README, "Traces").

A :class:`TraceNotes` collects along the answer path what the batch held, the gate's
verdict and its reasons (``bot/gate.py``; a batch turned away has a trace too), what the
prompt was made of, what recall found, each LLM call (with the model's name, latency
and tokens: the provider's ``usage``, or counted offline and marked so), each
memory-tool call and its result, which tier of the reply fallback chain produced the
replies, and what the guards did (``bot/replies/guards.py``); it freezes into a
:class:`Trace` that the store keeps (the newest ``memory.trace_keep`` per chat), with
what its calls cost at ``[budget]``'s prices.
Each reply's fate is read from the outbox when a trace is shown, in the lines of
:mod:`bot.trace_lines`. A trace holds no
secret: no key, token or endpoint URL, only the model's name and what the model saw
and wrote.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Protocol

from pydantic import TypeAdapter

from bot.budget import cost_of, is_priced
from bot.config.groups import BudgetConfig
from bot.conversation import NO_WAIT, Wait
from bot.initiative.occasion import Occasion
from bot.initiative.promises import Promise
from bot.models import Batch, BatchOutcome, ChatKey, Completion, TokenCount, ToolCall, Usage
from bot.prompt import clip
from bot.replies.items import DroppedItem

RAW_CHARS_MAX = 1500  # of the model's raw output kept in a trace
FATE_CHARS_MAX = 80  # of each reply shown beside its fate
TOOL_CHARS_MAX = 300  # of a tool call's arguments, and of its result, kept in a trace
PROMPT_PARTS = (
    "persona",
    "summaries",
    "people",
    "stickers",
    "recalled",
    "history",
    "batch",
    "contract",
)
WHY = {
    BatchOutcome.ANSWERED: "answered",
    BatchOutcome.SILENT: "silent",
    BatchOutcome.SKIPPED: "not addressed",
    BatchOutcome.FAILED: "failed",
}


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One call to a model while answering a batch."""

    kind: str  # "reply", "reply+memory" (after a memory search), "tool" (after tool
    # results), "nudge" or "splitter"
    model: str
    latency_ms: float
    finish_reason: str | None = None
    prompt_tokens: int | None = None  # None for a failed call
    completion_tokens: int | None = None
    error: str | None = None
    estimated: bool = False  # the provider reported no usage: the tokens were counted offline


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A function the model called while answering, and what pacebot answered it."""

    name: str
    arguments: str  # the model's JSON, secrets redacted, trimmed to TOOL_CHARS_MAX
    result: str  # trimmed to TOOL_CHARS_MAX
    after_call: int  # the position in ``llm_calls`` of the call that asked for it
    duration_ms: float = 0.0
    result_chars: int = 0  # of the whole result, as the model read it
    outcome: str = "ok"  # "ok", "error", "timeout" or "refused"


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


NOTE_CHARS_MAX = 200  # of a later item's note kept in a trace


@dataclass(frozen=True, slots=True)
class Promised:
    """A later item a batch's plan made and the store kept."""

    kind: str  # "remind" or "followup"
    due_at: datetime
    note: str  # trimmed to NOTE_CHARS_MAX


@dataclass(frozen=True, slots=True)
class Trace:
    """How one batch was answered.

    A batch of messages says how it ended as its ``why``; an initiative batch says why it
    ran (``remind``, ``followup`` or ``opener``), with its ``note``, and how it ended as
    its ``outcome``.
    """

    chat: ChatKey
    batch_id: int
    at: datetime
    why: str  # "answered", "silent", "not addressed", "stayed out", "over budget", "paused",
    # "failed"; an initiative batch: "remind", "followup" or "opener"
    message_ids: tuple[str, ...]
    prompt_tokens: tuple[tuple[str, int], ...] = ()  # by part, in PROMPT_PARTS order
    recall: RecallFound = RecallFound()
    llm_calls: tuple[LLMCall, ...] = ()
    tool_steps: tuple[ToolStep, ...] = ()
    raw_output: str = ""  # the last reply call's text, trimmed to RAW_CHARS_MAX
    tier: str | None = None  # "json", "fenced", "splitter" or "text-split"
    error: str | None = None
    dropped: tuple[DroppedItem, ...] = ()  # items of the plan that never reached the outbox
    rearmed_by: tuple[str, ...] = ()  # messages that re-armed the quiet timer; the rest of
    # a group batch joined it as context (the busy-room rule)
    wait_ended: str = ""  # why the quiet wait ended (bot.conversation.WaitEnd); "" before
    profile: str = ""  # the profile the chat ran with; "" = none
    heard: tuple[tuple[str, str], ...] = ()  # (message id, transcript; "" unheard) per voice
    # note of the batch, as the model was given it
    outcome: str = ""  # an initiative batch: "answered", "silent" or "failed"
    note: str = ""  # an initiative batch's later item: what it was to do
    promised: tuple[Promised, ...] = ()  # later items kept from the plan
    gate: tuple[str, ...] = ()  # the gate's reasons for and against a call (bot/gate.py)
    guards: tuple[str, ...] = ()  # what the guards changed: links replaced, splitter skipped
    cost: float = 0.0  # what the calls cost at [budget]'s prices, in ``currency``
    currency: str = ""
    priced: bool = True  # [budget] set prices when the batch was answered

    @property
    def tokens(self) -> TokenCount:
        """Return the tokens of the batch's calls together."""
        total = TokenCount()
        for call in self.llm_calls:
            prompt, completion = call.prompt_tokens, call.completion_tokens
            if prompt is not None and completion is not None:
                total += TokenCount(1, prompt, completion, int(call.estimated))
        return total


@dataclass(frozen=True, slots=True)
class ReplyFate:
    """What became of one queued item: sent, cancelled, dropped or still scheduled."""

    seq: int
    state: str
    content: str
    kind: str = "content"


@dataclass(frozen=True, slots=True)
class ShownTrace:
    """A stored trace with its replies' fates as the outbox has them now, and the name
    each of its messages was written under (by message id, where the log still has it)."""

    trace: Trace
    fates: tuple[ReplyFate, ...]
    senders: Mapping[str, str] = field(default_factory=dict)


@functools.cache
def _trace_json() -> TypeAdapter[Trace]:
    """Build the trace's JSON schema once, when the first trace is kept or read.

    Building it walks every nested dataclass (about 0.1 s): not a cost start-up should pay.
    """
    return TypeAdapter(Trace)


def trace_to_json(trace: Trace) -> str:
    """Serialise a trace for the store."""
    return _trace_json().dump_json(trace).decode()


def trace_from_json(text: str) -> Trace:
    """Read a trace the store kept."""
    return _trace_json().validate_json(text)


@dataclass
class TraceNotes:
    """What the answer path learns about a batch, until it is frozen into a trace."""

    batch: Batch
    at: datetime
    wait: Wait = NO_WAIT
    profile: str = ""
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    recall: RecallFound = RecallFound()
    calls: list[LLMCall] = field(default_factory=list)
    tool_steps: list[ToolStep] = field(default_factory=list)
    raw_output: str = ""
    tier: str | None = None
    dropped: list[DroppedItem] = field(default_factory=list)
    occasion: Occasion | None = None  # what started an initiative batch
    promised: list[Promise] = field(default_factory=list)
    gate: tuple[str, ...] = ()
    guards: list[str] = field(default_factory=list)
    prices: BudgetConfig = field(default_factory=BudgetConfig)

    def call(
        self,
        kind: str,
        model: str,
        latency_s: float,
        completion: Completion | None = None,
        *,
        usage: Usage | None = None,
        error: str | None = None,
    ) -> None:
        """Note one LLM call; a reply call's text becomes the raw output.

        The model's name comes from ``completion``, the tokens from ``usage``.
        """
        latency_ms = round(latency_s * 1000, 1)
        if completion is None or usage is None:
            self.calls.append(LLMCall(kind, model, latency_ms, error=error))
            return
        self.calls.append(
            LLMCall(
                kind,
                completion.model or model,
                latency_ms,
                completion.finish_reason,
                usage.prompt_tokens,
                usage.completion_tokens,
                estimated=usage.estimated,
            )
        )
        if kind != "splitter":
            text = completion.text
            self.raw_output = clip(text, RAW_CHARS_MAX)

    def tool(
        self,
        call: ToolCall,
        result: str,
        *,
        arguments: str | None = None,
        duration_s: float = 0.0,
        outcome: str = "ok",
    ) -> None:
        """Note a function the last LLM call asked for (``arguments``: as they may be
        shown, secrets redacted), its result, how long it took and how it ended."""
        self.tool_steps.append(
            ToolStep(
                call.name,
                clip(call.arguments if arguments is None else arguments, TOOL_CHARS_MAX),
                clip(result, TOOL_CHARS_MAX),
                after_call=len(self.calls) - 1,
                duration_ms=round(duration_s * 1000, 1),
                result_chars=len(result),
                outcome=outcome,
            )
        )

    def freeze(
        self, outcome: BatchOutcome, *, error: str | None = None, why: str | None = None
    ) -> Trace:
        """Return the trace of the batch as it ended (``why``: the gate's word for a batch
        it turned away)."""
        message_ids = tuple(m.message_id for m in self.batch.messages)
        ended = WHY.get(outcome, str(outcome))
        occasion = self.occasion
        trace = Trace(
            chat=self.batch.chat,
            batch_id=self.batch.id,
            at=self.at,
            why=why or (ended if occasion is None else occasion.kind.value),
            outcome="" if occasion is None else ended,
            note="" if occasion is None else clip(occasion.note, NOTE_CHARS_MAX),
            promised=tuple(
                Promised(p.kind, p.due_at, clip(p.note, NOTE_CHARS_MAX)) for p in self.promised
            ),
            message_ids=message_ids,
            prompt_tokens=tuple(
                (p, self.prompt_tokens[p]) for p in PROMPT_PARTS if p in self.prompt_tokens
            ),
            recall=self.recall,
            llm_calls=tuple(self.calls),
            tool_steps=tuple(self.tool_steps),
            raw_output=self.raw_output,
            tier=self.tier,
            error=error,
            dropped=tuple(self.dropped),
            rearmed_by=tuple(i for i in self.wait.rearmed_by if i in message_ids),
            wait_ended=self.wait.ended_by if message_ids else "",
            profile=self.profile,
            heard=tuple(
                (m.message_id, clip(m.transcript or "", TOOL_CHARS_MAX))
                for m in self.batch.messages
                if m.voice is not None
            ),
            gate=self.gate,
            guards=tuple(self.guards),
            currency=self.prices.currency,
            priced=is_priced(self.prices),
        )
        return replace(trace, cost=cost_of(trace.tokens, self.prices))


class TraceLog(Protocol):
    """The traces of answered batches, the newest few per chat."""

    async def keep_trace(self, trace: Trace, *, keep: int) -> None:
        """Store a batch's trace; keep only the chat's ``keep`` newest."""
        ...

    async def recent_traces(self, chat: ChatKey, *, count: int) -> list[ShownTrace]:
        """Return up to ``count`` newest traces of ``chat``, newest first, with reply fates
        and the names their messages were written under."""
        ...
