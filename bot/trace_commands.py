"""The ``/trace [N]`` command: how the chat's Nth newest batch was answered (admins)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.trace import format_trace

if TYPE_CHECKING:
    from bot.commands import CommandRunner, _Call


async def trace(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    keep = runner.config.memory.trace_keep
    text = call.args[0] if len(call.args) == 1 else "1" if not call.args else ""
    # Length first: int() refuses digit strings of thousands of characters.
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= keep):
        return say("trace_usage", keep=keep)
    number = int(text)
    shown = await runner.host.recent_traces(call.chat, count=number)
    if not shown:
        return say("trace_none", chat=call.chat)
    if len(shown) < number:
        return say("trace_too_far", chat=call.chat, kept=len(shown))
    return format_trace(shown[number - 1], zone=runner.config.bot.zone, say=say)
