"""``/stickers`` (the chat's collection) and ``/sticker ban <id>`` (admins)."""

from __future__ import annotations

from bot.commands.call import Call


async def stickers(call: Call) -> str:
    """List the chat's stickers: id, caption, times sent; banned ones marked."""
    say = call.say
    if call.args:
        return say("stickers_usage")
    if not call.ops.stickers.enabled:
        return say("stickers_off")
    collection = await call.ops.stickers.collection(call.chat)
    if not collection:
        return say("stickers_none", chat=call.chat)
    lines = [say("stickers_header", chat=call.chat, count=len(collection))]
    for sticker in collection:
        line = say(
            "stickers_item", label=sticker.label, caption=sticker.caption, sent=sticker.times_sent
        )
        lines.append(line + say("stickers_banned") if sticker.banned else line)
    return "\n".join(lines)


async def sticker(call: Call) -> str:
    """Ban one sticker of the chat's collection by its id."""
    say = call.say
    if len(call.args) != 2 or call.args[0].lower() != "ban":
        return say("sticker_usage")
    if not call.ops.stickers.enabled:
        return say("stickers_off")
    banned = await call.ops.stickers.ban(call.chat, call.args[1], by=call.who)
    if banned is None:
        return say("sticker_unknown", label=call.args[1][:20], chat=call.chat)
    return say("sticker_banned", label=banned.label, caption=banned.caption)
