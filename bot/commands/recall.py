"""``/recall <question>``: what recall would bring a batch asking it (admins)."""

from __future__ import annotations

from bot.commands.call import Call
from bot.ops.memory import RecallPreview
from bot.texts import Texts


def in_prompt_line(say: Texts, preview: RecallPreview) -> str:
    """Say which days the prompt already holds, the ones asked about first."""
    kept = preview.in_prompt
    if not kept:
        return say("recall_no_summary")
    held = preview.already_held
    lead = say("recall_already", days=", ".join(map(str, held))) if held else ""
    span = f"{kept[0]} … {kept[-1]}" if len(kept) > 1 else str(kept[0])
    return lead + say("recall_prompt_holds", count=len(kept), span=span)


async def recall(call: Call) -> str:
    """Show what recall finds for the question, and what the prompt already holds."""
    say = call.say
    question = " ".join(call.args).strip()
    if not question:
        return say("recall_usage")
    preview = await call.ops.memory.recall_preview(call.chat, question)
    recalled = preview.recalled
    held = in_prompt_line(say, preview)
    if not recalled.records:
        days = say("recall_days", days=", ".join(map(str, recalled.days))) if recalled.days else ""
        return say("recall_nothing", days=days) + "\n" + held
    return say("recall_found", how=recalled.how, records=recalled.render()) + "\n\n" + held
