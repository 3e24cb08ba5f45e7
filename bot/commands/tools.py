"""``/tools`` (admins): the tools this chat is offered, and the state of each source."""

from __future__ import annotations

from bot.commands.call import Call


async def tools(call: Call) -> str:
    """List the tools an addressed batch of the chat is offered, then each source."""
    say = call.say
    shown = call.ops.tools.of(call.chat)
    if shown.off:
        lines = [say("tools_off", why=shown.off)]
    elif shown.offered:
        named = [
            f"{name} ({say('tools_admins_only')})" if name in shown.admins_only else name
            for name in shown.offered
        ]
        lines = [say("tools_offered", tools=", ".join(named), rounds=shown.max_rounds)]
    else:
        lines = [say("tools_none")]
    for source in shown.sources:
        offers = ", ".join(source.tools) or say("trace_nothing")
        detail = f" — {source.detail}" if source.detail else ""
        lines.append(
            say(
                "tools_source",
                name=source.name,
                kind=source.kind,
                state=source.state,
                tools=offers,
                detail=detail,
            )
        )
    return "\n".join(lines)
