"""``/trace [N]``: how the chat's Nth newest batch was answered (admins)."""

from __future__ import annotations

from bot.commands.call import Call
from bot.trace_lines import format_trace

_NUMBER_DIGITS_MAX = 6  # int() refuses digit strings of thousands of characters


async def trace(call: Call) -> str:
    """Show the Nth newest trace of the chat (1 = the newest)."""
    say = call.say
    traces = call.ops.traces
    text = call.args[0] if len(call.args) == 1 else "1" if not call.args else ""
    valid = text.isascii() and text.isdigit() and len(text) <= _NUMBER_DIGITS_MAX
    if not (valid and 1 <= int(text) <= traces.keep):
        return say("trace_usage", keep=traces.keep)
    number = int(text)
    shown, kept = await traces.nth(call.chat, number)
    if shown is None:
        return (
            say("trace_none", chat=call.chat)
            if kept == 0
            else say("trace_too_far", chat=call.chat, kept=kept)
        )
    return format_trace(shown, zone=call.config.bot.zone, say=say)
