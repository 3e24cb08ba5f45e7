"""How a trace reads: the lines ``/trace``, ``pacebot trace`` and the dashboard show.

One rendering for every face (:func:`trace_lines`), in the chat's language: the batch and
its wait, the gate, what the prompt held and recall found, each LLM and tool call with
its tokens and cost, the guards, and each reply's fate read from the outbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

from bot.budget import format_cost
from bot.prompt import clip
from bot.texts import Texts
from bot.trace import FATE_CHARS_MAX, LLMCall, RecallFound, ShownTrace, Trace


def _days(say: Texts, days: Sequence[date]) -> str:
    return ", ".join(map(str, days)) or say("trace_nothing")


def _call_line(say: Texts, call: LLMCall) -> str:
    if call.prompt_tokens is None:
        tokens = say("trace_call_no_tokens")
    else:
        name = "trace_call_tokens_estimated" if call.estimated else "trace_call_tokens"
        tokens = say(name, prompt=call.prompt_tokens, completion=call.completion_tokens)
    end = (
        say("trace_call_error", error=call.error)
        if call.error
        else say("trace_call_finish", reason=call.finish_reason or "?")
    )
    fields = {"kind": call.kind, "model": call.model, "latency_ms": call.latency_ms}
    return say("trace_call", end=end, tokens=tokens, **fields)


def _shown_item(kind: str, content: str) -> str:
    """Show a queued item: a text as it is, any other kind named first (``[react] 👍``)."""
    return content if kind == "content" else f"[{kind}] {content}"


def _written_by(shown: ShownTrace, say: Texts) -> str:
    """Return the batch's message ids, each with who wrote it where that is known."""
    named = (
        say("trace_sender", id=message_id, name=shown.senders[message_id])
        if shown.senders.get(message_id)
        else message_id
        for message_id in shown.trace.message_ids
    )
    return ", ".join(named)


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One line of a shown trace: what part of the trace it says (``head``, ``messages``,
    ``gate``, ``call``, ``fate``, ``promised``, ``dropped``, ``raw``…), its state where it
    has one (a reply's fate: ``sent``, ``cancelled``…), and its words."""

    part: str
    text: str
    state: str = ""


def format_trace(shown: ShownTrace, *, zone: ZoneInfo, say: Texts) -> str:
    """Return a trace as text for an admin (``/trace``, ``pacebot trace``), in ``say``'s words."""
    return "\n".join(line.text for line in trace_lines(shown, zone=zone, say=say))


def trace_lines(shown: ShownTrace, *, zone: ZoneInfo, say: Texts) -> list[TraceLine]:
    """Return a trace line by line, as every face shows it (``/trace``, ``pacebot trace``
    and the dashboard), in ``say``'s words.

    The words the README's "Traces" names (answered, sent, json, …) are shown as they are
    in every language: they are what an operator searches the docs and logs for.
    """
    trace = shown.trace
    written = _written_by(shown, say) or say("trace_nothing")
    lines = [
        TraceLine("head", _head(trace, zone=zone, say=say)),
        TraceLine("messages", say("trace_messages", ids=written)),
    ]
    if trace.note:
        lines.append(TraceLine("note", say("trace_note", note=trace.note)))
    if trace.profile:
        lines.append(TraceLine("profile", say("trace_profile", profile=trace.profile)))
    if trace.chat.is_group and trace.message_ids:
        context = [i for i in trace.message_ids if i not in trace.rearmed_by]
        rearmed = ", ".join(trace.rearmed_by) or say("trace_nothing")
        joined = ", ".join(context) or say("trace_nothing")
        lines.append(TraceLine("wait", say("trace_rearmed", rearmed=rearmed, context=joined)))
        if trace.wait_ended:
            lines.append(TraceLine("wait", say("trace_wait_ended", why=trace.wait_ended)))
    if trace.gate:
        lines.append(TraceLine("gate", say("trace_gate", reasons="; ".join(trace.gate))))
    if trace.prompt_tokens:
        total = sum(tokens for _, tokens in trace.prompt_tokens)
        parts = ", ".join(f"{part} {tokens}" for part, tokens in trace.prompt_tokens)
        lines.append(TraceLine("prompt", say("trace_prompt", total=total, parts=parts)))
    lines.append(TraceLine("recall", _recall_line(trace.recall, say)))
    lines.append(TraceLine("calls", say("trace_calls" if trace.llm_calls else "trace_no_calls")))
    for position, call in enumerate(trace.llm_calls):
        lines.append(TraceLine("call", _call_line(say, call), "error" if call.error else ""))
        lines.extend(
            TraceLine(
                "tool",
                say(
                    "trace_tool",
                    name=step.name,
                    arguments=step.arguments,
                    result=step.result,
                    outcome=step.outcome,
                    duration_ms=step.duration_ms,
                    chars=step.result_chars,
                ),
            )
            for step in trace.tool_steps
            if step.after_call == position
        )
    if trace.llm_calls:
        lines.append(TraceLine("cost", _cost_line(trace, say)))
    if trace.tier:
        lines.append(TraceLine("tier", say("trace_tier", tier=trace.tier)))
    lines.extend(_fates(shown, zone=zone, say=say))
    if trace.raw_output:
        lines.append(TraceLine("raw", say("trace_raw") + "\n" + trace.raw_output))
    return lines


def _head(trace: Trace, *, zone: ZoneInfo, say: Texts) -> str:
    local = trace.at.astimezone(zone)
    why = f"{trace.why} → {trace.outcome}" if trace.outcome else trace.why
    why = f"{why} ({trace.error})" if trace.error else why
    at = f"{local:%Y-%m-%d %H:%M:%S}"
    return say("trace_head", batch_id=trace.batch_id, chat=trace.chat, at=at, why=why)


def _recall_line(found: RecallFound, say: Texts) -> str:
    line = say(
        "trace_recall",
        how=found.how,
        asked=_days(say, found.asked_dates),
        date_hits=_days(say, found.date_hits),
        keyword_hits=_days(say, found.keyword_hits),
        vector_hits=_days(say, found.vector_hits),
        in_prompt=_days(say, found.in_prompt),
    )
    if found.fact_hits:
        line += say("trace_fact_hits", ids=", ".join(f"#{i}" for i in found.fact_hits))
    return line


def _cost_line(trace: Trace, say: Texts) -> str:
    tokens = trace.tokens
    cost = (
        say("trace_cost_amount", cost=format_cost(trace.cost, trace.currency))
        if trace.priced
        else say("no_prices")
    )
    return say(
        "trace_cost",
        total=tokens.total,
        prompt=tokens.prompt_tokens,
        completion=tokens.completion_tokens,
        cost=cost,
        estimated=say("trace_estimated") if tokens.estimated_calls else "",
    )


def _fates(shown: ShownTrace, *, zone: ZoneInfo, say: Texts) -> list[TraceLine]:
    """Say what became of each item: queued, kept for later, refused, heard, guarded."""
    trace = shown.trace
    lines = [
        TraceLine(
            "fate",
            say(
                "trace_fate",
                number=fate.seq + 1,
                state=fate.state,
                content=clip(_shown_item(fate.kind, fate.content), FATE_CHARS_MAX),
            ),
            fate.state.split()[0],
        )
        for fate in shown.fates
    ]
    lines.extend(
        TraceLine(
            "promised",
            say(
                "trace_promised",
                kind=promised.kind,
                due=f"{promised.due_at.astimezone(zone):%Y-%m-%d %H:%M}",
                note=promised.note,
            ),
        )
        for promised in trace.promised
    )
    lines.extend(
        TraceLine("dropped", say("trace_dropped", kind=item.kind, reason=item.reason))
        for item in trace.dropped
    )
    lines.extend(
        TraceLine("heard", say("trace_heard", id=heard, transcript=words))
        if words
        else TraceLine("heard", say("trace_unheard", id=heard))
        for heard, words in trace.heard
    )
    lines.extend(TraceLine("guard", say("trace_guard", what=guard)) for guard in trace.guards)
    return lines
