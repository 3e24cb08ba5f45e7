"""The ``/trace [N]`` command: how the chat's Nth newest batch was answered (admins)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.models import ChatKey
from bot.trace import format_trace

if TYPE_CHECKING:
    from bot.commands import CommandRunner, _Call

TRACE_USAGE = "usage: /trace [N], N = 1 for the newest batch"


def no_traces(chat: ChatKey) -> str:
    return f"No batch of {chat} has a trace yet."


def too_far_back(chat: ChatKey, kept: int) -> str:
    return f"{chat} has {kept} trace(s) kept: choose N from 1 (newest) to {kept}."


async def trace(runner: CommandRunner, call: _Call) -> str:
    keep = runner.config.memory.trace_keep
    text = call.args[0] if len(call.args) == 1 else "1" if not call.args else ""
    # Length first: int() refuses digit strings of thousands of characters.
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= keep):
        return f"{TRACE_USAGE}, up to {keep}"
    number = int(text)
    shown = await runner.host.recent_traces(call.chat, count=number)
    if not shown:
        return no_traces(call.chat)
    if len(shown) < number:
        return too_far_back(call.chat, len(shown))
    return format_trace(shown[number - 1], zone=runner.config.bot.zone)
