"""What the LLM calls cost, as JSON: ``GET /api/cost``, ``GET /api/status`` and
``pacebot cost --json`` give the same shapes.

The figures come from :class:`bot.ops.cost.CostOps`; a cost is given as a number in the
budget's currency and as ``cost_text``, the words every face shows (``0.00013 USD``, or
``no prices set``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.budget import format_cost
from bot.ops.cost import CostReport, DayCost, Spent, Today


def spent_json(spent: Spent, currency: str) -> dict[str, Any]:
    """Return tokens and what they cost as JSON."""
    tokens = spent.tokens
    return {
        "calls": tokens.calls,
        "prompt_tokens": tokens.prompt_tokens,
        "completion_tokens": tokens.completion_tokens,
        "total_tokens": tokens.total,
        "estimated_calls": tokens.estimated_calls,
        "cost": spent.cost,
        "cost_text": format_cost(spent.cost, currency, priced=spent.priced),
        "priced": spent.priced,
    }


def today_json(today: Today) -> dict[str, Any]:
    """Return today's spending of the whole bot, the caps, and whether they are reached."""
    budget, standing = today.budget, today.standing
    return {
        "day": standing.day.isoformat(),
        "currency": budget.currency,
        "bot": spent_json(today.bot, budget.currency),
        "caps": {
            "daily_tokens": budget.daily_tokens,
            "hard_daily_tokens": budget.hard_daily_tokens,
            "chat_daily_tokens": budget.chat_daily_tokens,
        },
        "soft_cap_reached": standing.soft,
        "hard_cap_reached": standing.hard,
        "next_day_at": today.next_day_at.isoformat(),
    }


def report_json(report: CostReport, days: Sequence[DayCost]) -> dict[str, Any]:
    """Return the cost report (per day, chat and kind, with the total) and each day's sum."""
    currency = report.currency
    return {
        "first_day": report.first.isoformat(),
        "last_day": report.last.isoformat(),
        "chat": None if report.chat is None else str(report.chat),
        "currency": currency,
        "rows": [
            {
                "day": row.day.isoformat(),
                "chat": str(row.chat),
                "kind": row.kind,
                **spent_json(row.spent, currency),
            }
            for row in report.rows
        ],
        "days": [{"day": day.day.isoformat(), **spent_json(day.spent, currency)} for day in days],
        "total": spent_json(report.total, currency),
    }
