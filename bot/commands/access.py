"""``/bot off`` and ``/bot on`` (admins): stop or start serving this chat; ``/whoami``
(anyone): the id ``bot.admins`` names the sender by."""

from __future__ import annotations

from bot.commands.call import Call


async def bot(call: Call) -> str:
    """Switch the chat off (nothing stored or answered) or on again; alone, say how it is."""
    say = call.say
    access = call.ops.access
    if not call.args:
        state = access.of(call.chat)
        return say("bot_on_now") if state.served else say("bot_refused", why=state.refusal)
    if len(call.args) != 1 or call.args[0].lower() not in {"on", "off"}:
        return say("bot_usage")
    on = call.args[0].lower() == "on"
    state = await access.switch(call.chat, on=on, by=call.who)
    if not on:
        return say("bot_off_done", chat=call.chat)
    return (
        say("bot_on_done", chat=call.chat)
        if state.served
        else say("bot_refused", why=state.refusal)
    )


async def whoami(call: Call) -> str:
    """Tell the sender their id as ``bot.admins`` names people (an openid on the official
    QQ bot, which no one can see in the QQ client)."""
    return call.say("whoami", who=call.who)
