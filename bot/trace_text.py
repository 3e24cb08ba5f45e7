"""A trace as an admin reads it: ``/trace`` and ``pacebot trace``, in ``bot.language``.

The words the README's "Traces" names (answered, sent, json, …) are shown as they are in
every language: they are what an operator searches the docs and logs for.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from zoneinfo import ZoneInfo

from bot.budget import format_cost
from bot.prompt import clip
from bot.texts import Texts
from bot.trace import FATE_CHARS_MAX, LLMCall, ShownTrace


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
    return say(
        "trace_call",
        kind=call.kind,
        model=call.model,
        latency_ms=call.latency_ms,
        end=end,
        tokens=tokens,
    )


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


def format_trace(shown: ShownTrace, *, zone: ZoneInfo, say: Texts) -> str:
    """Return a trace as text for an admin (``/trace``, ``pacebot trace``), in ``say``'s words.

    The words the README's "Traces" names (answered, sent, json, …) are shown as they are
    in every language: they are what an operator searches the docs and logs for.
    """
    trace = shown.trace
    local = trace.at.astimezone(zone)
    why = f"{trace.why} → {trace.outcome}" if trace.outcome else trace.why
    why = f"{why} ({trace.error})" if trace.error else why
    lines = [
        say(
            "trace_head",
            batch_id=trace.batch_id,
            chat=trace.chat,
            at=f"{local:%Y-%m-%d %H:%M:%S}",
            why=why,
        ),
        say("trace_messages", ids=_written_by(shown, say) or say("trace_nothing")),
    ]
    if trace.note:
        lines.append(say("trace_note", note=trace.note))
    if trace.profile:
        lines.append(say("trace_profile", profile=trace.profile))
    if trace.chat.is_group and trace.message_ids:
        context = [i for i in trace.message_ids if i not in trace.rearmed_by]
        lines.append(
            say(
                "trace_rearmed",
                rearmed=", ".join(trace.rearmed_by) or say("trace_nothing"),
                context=", ".join(context) or say("trace_nothing"),
            )
        )
        if trace.wait_ended:
            lines.append(say("trace_wait_ended", why=trace.wait_ended))
    if trace.gate:
        lines.append(say("trace_gate", reasons="; ".join(trace.gate)))
    if trace.prompt_tokens:
        total = sum(tokens for _, tokens in trace.prompt_tokens)
        parts = ", ".join(f"{part} {tokens}" for part, tokens in trace.prompt_tokens)
        lines.append(say("trace_prompt", total=total, parts=parts))
    found = trace.recall
    lines.append(
        say(
            "trace_recall",
            how=found.how,
            asked=_days(say, found.asked_dates),
            date_hits=_days(say, found.date_hits),
            keyword_hits=_days(say, found.keyword_hits),
            vector_hits=_days(say, found.vector_hits),
            in_prompt=_days(say, found.in_prompt),
        )
        + (
            say("trace_fact_hits", ids=", ".join(f"#{i}" for i in found.fact_hits))
            if found.fact_hits
            else ""
        )
    )
    lines.append(say("trace_calls") if trace.llm_calls else say("trace_no_calls"))
    for position, call in enumerate(trace.llm_calls):
        lines.append(_call_line(say, call))
        lines.extend(
            say(
                "trace_tool",
                name=step.name,
                arguments=step.arguments,
                result=step.result,
                outcome=step.outcome,
                duration_ms=step.duration_ms,
                chars=step.result_chars,
            )
            for step in trace.tool_steps
            if step.after_call == position
        )
    if trace.llm_calls:
        tokens = trace.tokens
        lines.append(
            say(
                "trace_cost",
                total=tokens.total,
                prompt=tokens.prompt_tokens,
                completion=tokens.completion_tokens,
                cost=format_cost(trace.cost, trace.currency),
                estimated=say("trace_estimated") if tokens.estimated_calls else "",
            )
        )
    if trace.tier:
        lines.append(say("trace_tier", tier=trace.tier))
    lines.extend(
        say(
            "trace_fate",
            number=fate.seq + 1,
            state=fate.state,
            content=clip(_shown_item(fate.kind, fate.content), FATE_CHARS_MAX),
        )
        for fate in shown.fates
    )
    lines.extend(
        say(
            "trace_promised",
            kind=promised.kind,
            due=f"{promised.due_at.astimezone(zone):%Y-%m-%d %H:%M}",
            note=promised.note,
        )
        for promised in trace.promised
    )
    lines.extend(say("trace_dropped", kind=item.kind, reason=item.reason) for item in trace.dropped)
    lines.extend(
        say("trace_heard", id=message_id, transcript=transcript)
        if transcript
        else say("trace_unheard", id=message_id)
        for message_id, transcript in trace.heard
    )
    lines.extend(say("trace_guard", what=guard) for guard in trace.guards)
    if trace.raw_output:
        lines.append(say("trace_raw") + "\n" + trace.raw_output)
    return "\n".join(lines)
