"""``/status`` (pacing, what waits, what is queued, LLM errors) and ``/prompt`` (admins)."""

from __future__ import annotations

from bot.commands.call import Call
from bot.prompt import estimate_tokens
from bot.replies.items import ItemKind


async def status(call: Call) -> str:
    """Show the pacing settings and the chat's status."""
    pacing = call.config.pacing
    shown = await call.ops.status.chat(call.chat)
    return call.say(
        "status",
        chat=call.chat,
        debounce_min_s=pacing.debounce_min_s,
        debounce_max_s=pacing.debounce_max_s,
        max_wait_s=pacing.max_wait_s,
        max_batch=pacing.max_batch,
        max_delay_s=pacing.max_delay_s,
        on_new_message=pacing.on_new_message,
        reply_mode=call.config.groups.reply_mode,
        waiting=shown.waiting_messages,
        queued=shown.queued_replies,
        texts=shown.sent_today.get(ItemKind.CONTENT, 0),
        reactions=shown.sent_today.get(ItemKind.REACT, 0),
        stickers=shown.sent_today.get(ItemKind.STICKER, 0),
        voices=shown.sent_today.get(ItemKind.VOICE, 0),
        errors=shown.llm_errors_last_hour,
    )


async def prompt(call: Call) -> str:
    """Show the system prompt the chat's next batch would get, and its size."""
    text = await call.ops.status.system_prompt(call.chat, title=call.title)
    return call.say("prompt", chat=call.chat, tokens=estimate_tokens(text), prompt=text)
