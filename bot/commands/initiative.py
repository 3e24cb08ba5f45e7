"""``/later`` and ``/later cancel <id>`` (anyone; a cancel by its asker or an admin), and
``/quiet [hours]`` / ``/quiet off`` (anyone in a private chat, admins in groups)."""

from __future__ import annotations

import math

from bot.commands.call import Call
from bot.initiative.promises import LaterItem
from bot.ops.initiative import QUIET_HOURS_DEFAULT, QUIET_HOURS_MAX, Cancelled

ITEM_ID_DIGITS_MAX = 18  # an SQLite integer id


def _due(call: Call, item: LaterItem) -> str:
    return f"{item.due_at.astimezone(call.config.bot.zone):%Y-%m-%d %H:%M}"


async def later(call: Call) -> str:
    """List the chat's pending later items, or cancel one."""
    say = call.say
    if not call.args:
        pending = await call.ops.initiative.pending(call.chat)
        if not pending:
            return say("later_none")
        lines = [say("later_header", count=len(pending))]
        lines += [
            say("later_item", id=i.id, due=_due(call, i), kind=i.kind, note=i.note) for i in pending
        ]
        lines.append(say("later_footer"))
        return "\n".join(lines)
    text = call.args[1].lstrip("#") if len(call.args) == 2 else ""
    if call.args[0].lower() != "cancel" or not (
        text.isascii() and text.isdigit() and len(text) <= ITEM_ID_DIGITS_MAX
    ):
        return say("later_usage")
    item_id = int(text)
    outcome, item = await call.ops.initiative.cancel(
        call.chat, item_id, by=call.who, asker_id=None if call.admin else call.sender_id
    )
    if outcome is Cancelled.UNKNOWN or item is None:
        return say("later_unknown", id=item_id)
    if outcome is Cancelled.NOT_YOURS:
        return say("later_not_yours", id=item_id)
    return say("later_cancelled", id=item_id, kind=item.kind, due=_due(call, item), note=item.note)


async def quiet(call: Call) -> str:
    """Pause openers and follow-ups in the chat for some hours, or end the pause."""
    say = call.say
    if call.args and call.args[0].lower() == "off" and len(call.args) == 1:
        ended = await call.ops.initiative.quiet_off(call.chat, by=call.who)
        return say("quiet_off_done") if ended is not None else say("quiet_off_none")
    hours = QUIET_HOURS_DEFAULT
    if call.args:
        try:
            hours = float(call.args[0]) if len(call.args) == 1 else math.nan
        except ValueError:
            hours = math.nan
    if not 0 < hours <= QUIET_HOURS_MAX:  # also false for nan
        return say("quiet_usage", most=f"{QUIET_HOURS_MAX:g}")
    period = await call.ops.initiative.quiet(call.chat, hours=hours, by=call.who)
    until = f"{period.ends_at.astimezone(call.config.bot.zone):%Y-%m-%d %H:%M}"
    return say("quiet_done", until=until)
