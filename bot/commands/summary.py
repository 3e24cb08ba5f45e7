"""``/summary list | show [N] | pop | restore | run [YYYY-MM-DD]`` and ``/pop`` (admins)."""

from __future__ import annotations

from datetime import date, timedelta

from bot.commands.call import Call, Handler
from bot.errors import LLMError, OverBudget
from bot.memory.stack import SummaryResult
from bot.models import SummaryRecord

USAGE = "list | show [N] | pop | restore | run [YYYY-MM-DD]"
LIST_MAX = 30  # summaries /summary list names one by one, newest first
_FIRST_LINE_CHARS = 40


def _first_line(record: SummaryRecord) -> str:
    line = record.content.summary.strip().splitlines()[0]
    return line if len(line) <= _FIRST_LINE_CHARS else line[: _FIRST_LINE_CHARS - 1] + "…"


async def listing(call: Call) -> str:
    """List the stack, newest first, and what the prompt holds of it."""
    say = call.say
    stack = await call.ops.memory.prompt_stack(call.chat)
    if not stack.entries:
        return say("summary_list_empty", chat=call.chat, tokens=stack.prompt_tokens)
    # Totals first: a year of summaries does not fit one message, the newest do.
    lines = [
        say(
            "summary_list_header",
            chat=call.chat,
            count=len(stack.entries),
            kept=len(stack.in_prompt_days),
            tokens=stack.prompt_tokens,
        )
    ]
    newest = stack.entries[:LIST_MAX]
    for number, entry in enumerate(newest, start=1):
        record = entry.record
        item = say(
            "summary_list_item",
            number=number,
            day=record.day,
            first_line=_first_line(record),
            tokens=entry.tokens,
        )
        item += say("summary_list_partial") if record.partial else ""
        lines.append(item if entry.in_prompt else item + say("summary_list_recall_only"))
    if len(stack.entries) > len(newest):
        older = len(stack.entries) - len(newest)
        lines.append(say("summary_list_more", count=older, day=stack.entries[-1].record.day))
    return "\n".join(lines)


async def show(call: Call) -> str:
    """Show one summary in full (1 = the newest)."""
    say = call.say
    entries = (await call.ops.memory.prompt_stack(call.chat)).entries
    if not entries:
        return say("summary_none", chat=call.chat)
    try:
        number = int(call.args[0]) if call.args else 1
    except ValueError:
        return say("summary_show_usage")
    if not 1 <= number <= len(entries):
        return say("summary_show_range", count=len(entries))
    record = entries[number - 1].record
    content = record.content
    parts = [say("summary_show_head", day=record.day, count=record.message_count), content.summary]
    if content.key_points:
        points = "\n".join(f"- {p}" for p in content.key_points)
        parts.append(f"{say('summary_show_key_points')}\n{points}")
    if content.topics:
        parts.append(say("summary_show_topics", topics=", ".join(content.topics)))
    if content.keywords:
        parts.append(say("summary_show_keywords", keywords=", ".join(content.keywords)))
    return "\n\n".join(parts)


async def pop(call: Call) -> str:
    """Pop the newest summary and say what remains."""
    say = call.say
    popped = await call.ops.memory.pop(call.chat, by=call.who)
    if popped is None:
        return say("pop_nothing")
    remaining = (await call.ops.memory.prompt_stack(call.chat)).entries
    newest = say("pop_newest", day=remaining[0].record.day) if remaining else ""
    return say("pop_done", day=popped.day, count=len(remaining), newest=newest)


async def restore(call: Call) -> str:
    """Undo the last pop, if nothing newer was pushed since."""
    restored = await call.ops.memory.restore(call.chat, by=call.who)
    if restored is None:
        return call.say("restore_nothing")
    return call.say("restore_done", day=restored.day)


async def run(call: Call) -> str:
    """Summarise a chat day now (yesterday by default) and push it; today's is partial."""
    say = call.say
    if call.args:
        try:
            day = date.fromisoformat(call.args[0])
        except ValueError:
            return say("run_usage")
    else:
        day = call.ops.memory.today() - timedelta(days=1)
    try:
        result = await call.ops.memory.summarise(call.chat, day, by=call.who)
    except OverBudget:
        return say("run_over_budget", day=day)
    except LLMError:
        return say("run_failed", day=day)
    answers = {
        SummaryResult.FUTURE: say("run_future", day=day),
        SummaryResult.ALREADY: say("run_already", day=day),
        SummaryResult.NOTHING: say("run_nothing", chat=call.chat, day=day),
    }
    done = "run_done_partial" if day == call.ops.memory.today() else "run_done"
    return answers.get(result, say(done, day=day))


_ACTIONS: dict[str, Handler] = {
    "list": listing,
    "show": show,
    "pop": pop,
    "restore": restore,
    "run": run,
}


async def summary(call: Call) -> str:
    """Run the sub-command the first argument names (``list`` by default)."""
    action = call.args[0].lower() if call.args else "list"
    handler = _ACTIONS.get(action)
    if handler is None:
        return call.say("summary_usage")
    return await handler(call.shifted())
