"""``/status`` (pacing, what waits, what is queued, LLM errors, what today cost, what the
bot will do on its own) and ``/prompt`` (admins)."""

from __future__ import annotations

from datetime import datetime

from bot.budget import format_cost
from bot.commands.call import Call
from bot.ops.cost import Today
from bot.ops.status import ChatStatus
from bot.prompt import estimate_tokens
from bot.replies.items import ItemKind


async def status(call: Call) -> str:
    """Show the pacing settings, the chat's status and what today's calls cost."""
    pacing = call.config.for_chat(call.chat).pacing
    shown = await call.ops.status.chat(call.chat)
    lines = [
        call.say(
            "status",
            chat=call.chat,
            debounce_min_s=pacing.debounce_min_s,
            debounce_max_s=pacing.debounce_max_s,
            max_wait_s=pacing.max_wait_s,
            max_batch=pacing.max_batch,
            max_delay_s=pacing.max_delay_s,
            on_new_message=pacing.on_new_message,
            reply_mode=shown.reply_mode,
            waiting=shown.waiting_messages,
            queued=shown.queued_replies,
            texts=shown.sent_today.get(ItemKind.CONTENT, 0),
            reactions=shown.sent_today.get(ItemKind.REACT, 0),
            stickers=shown.sent_today.get(ItemKind.STICKER, 0),
            voices=shown.sent_today.get(ItemKind.VOICE, 0),
            errors=shown.llm_errors_last_hour,
        ),
        *([call.say("status_profile", profile=shown.profile)] if shown.profile else []),
        *_spending_lines(call, shown.today),
        *_gate_lines(call, shown),
        *await _initiative_lines(call),
    ]
    return "\n".join(lines)


def _local(call: Call, moment: datetime) -> str:
    return f"{moment.astimezone(call.config.bot.zone):%Y-%m-%d %H:%M}"


def _cost(call: Call, amount: float, currency: str, *, priced: bool) -> str:
    """Say what something cost, or that ``[budget]`` sets no prices to count it with."""
    return format_cost(amount, currency) if priced else call.say("no_prices")


def _spending_lines(call: Call, today: Today) -> list[str]:
    """Say what today's calls cost, here and in all, and where they stand against the caps."""
    budget, standing = today.budget, today.standing
    say = call.say

    def cap(limit: int, reached: bool) -> str:
        if not limit:
            return say("status_no_cap")
        return say("status_cap_reached", cap=limit) if reached else f"{limit:,}"

    lines = [
        say(
            "status_tokens",
            chat_tokens=today.chat.tokens.total,
            chat_cost=_cost(call, today.chat.cost, budget.currency, priced=today.chat.priced),
            bot_tokens=today.bot.tokens.total,
            bot_cost=_cost(call, today.bot.cost, budget.currency, priced=today.bot.priced),
            estimated=say("status_estimated") if today.bot.tokens.estimated_calls else "",
        ),
        say(
            "status_caps",
            soft=cap(budget.daily_tokens, standing.soft),
            hard=cap(budget.hard_daily_tokens, standing.hard),
            chat_cap=cap(call.config.for_chat(call.chat).chat_daily_tokens, standing.chat_soft),
        ),
    ]
    if standing.hard:
        lines.append(say("status_hard_cap", until=_local(call, today.next_day_at)))
    return lines


def _gate_lines(call: Call, shown: ChatStatus) -> list[str]:
    """Say how many unaddressed calls the chat's group made this hour, and any pause."""
    lines = []
    if shown.unaddressed_calls is not None:
        lines.append(
            call.say(
                "status_unaddressed",
                calls=shown.unaddressed_calls,
                budget=shown.unaddressed_budget,
            )
        )
    if shown.paused_until is not None:
        lines.append(call.say("status_paused", until=_local(call, shown.paused_until)))
    return lines


async def _initiative_lines(call: Call) -> list[str]:
    """Say what the chat has pending (how many later items, the next one) and any quiet."""
    view = await call.ops.initiative.view(call.chat)
    lines = []
    if view.pending:
        soonest = view.pending[0]
        due = _local(call, soonest.due_at)
        lines.append(call.say("status_later", count=len(view.pending), kind=soonest.kind, due=due))
    if view.quiet_until is not None:
        lines.append(call.say("status_quiet", until=_local(call, view.quiet_until)))
    return lines


async def prompt(call: Call) -> str:
    """Show the system prompt the chat's next batch would get, and its size."""
    text = await call.ops.status.system_prompt(call.chat, title=call.title)
    return call.say("prompt", chat=call.chat, tokens=estimate_tokens(text), prompt=text)
