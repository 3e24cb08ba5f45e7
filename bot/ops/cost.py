"""What the LLM calls cost, for every face: ``/status``, the dashboard, ``pacebot cost``.

One definition of each figure, all read from the kept usage (``bot/budget.py``):

- **today**: the current chat day's tokens, of the whole bot and of one chat, their cost
  at ``[budget]``'s prices, and where they stand against the caps;
- **the report**: tokens and cost per chat day, chat and kind of call over the last days,
  with their total (``pacebot cost``, ``GET /api/cost``);
- **the days**: the tokens and cost on each of the last days, of one chat or of the whole
  bot, days without a call included (the dashboard's chart, ``GET /api/cost``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from bot.budget import Spending, Standing, UsageLog, cost_of, is_priced
from bot.config.groups import BudgetConfig
from bot.models import ChatKey, TokenCount


@dataclass(frozen=True, slots=True)
class Spent:
    """Tokens, and what they cost in the budget's currency (``priced``: it sets prices)."""

    tokens: TokenCount
    cost: float
    priced: bool = True


@dataclass(frozen=True, slots=True)
class Today:
    """The current chat day's spending, the bot's and one chat's, against the caps."""

    standing: Standing
    bot: Spent
    chat: Spent  # nothing without a chat
    next_day_at: datetime  # when the caps start again from zero
    budget: BudgetConfig  # the caps and the currency


@dataclass(frozen=True, slots=True)
class CostRow:
    """The calls of one kind for one chat on one chat day."""

    day: date
    chat: ChatKey
    kind: str
    spent: Spent


@dataclass(frozen=True, slots=True)
class CostReport:
    """Tokens and cost per day, chat and kind from ``first`` to ``last``, and their total."""

    first: date
    last: date
    chat: ChatKey | None  # only this chat, or every chat
    rows: tuple[CostRow, ...]
    total: Spent
    currency: str


@dataclass(frozen=True, slots=True)
class DayCost:
    """The whole bot's spending on one chat day."""

    day: date
    spent: Spent


class CostOps:
    """Answer what the LLM calls cost, for every face."""

    def __init__(self, store: UsageLog, spending: Spending) -> None:
        self._store = store
        self._spending = spending

    def _spent(self, tokens: TokenCount) -> Spent:
        prices = self._spending.prices
        return Spent(tokens, cost_of(tokens, prices), is_priced(prices))

    async def today(self, chat: ChatKey | None = None) -> Today:
        """Return today's spending, the bot's and ``chat``'s, against the caps."""
        standing = await self._spending.standing(chat)
        return Today(
            standing,
            self._spent(standing.bot),
            self._spent(standing.chat),
            self._spending.next_day_at(),
            self._spending.prices,
        )

    def _days(self, days: int) -> tuple[date, date]:
        """Return the first and the last chat day of the ``days`` days up to today."""
        last = self._spending.today()
        return last - timedelta(days=days - 1), last

    async def report(self, *, days: int, chat: ChatKey | None = None) -> CostReport:
        """Return tokens and cost per day, chat and kind over the last ``days`` chat days
        (today included), of ``chat`` or of every chat, with their total."""
        first, last = self._days(days)
        rows = tuple(
            CostRow(row.day, row.chat, row.kind, self._spent(row.tokens))
            for row in await self._store.usage_rows(first, last, chat=chat)
        )
        total = sum((row.spent.tokens for row in rows), TokenCount())
        return CostReport(
            first, last, chat, rows, self._spent(total), self._spending.prices.currency
        )

    async def daily(self, *, days: int, chat: ChatKey | None = None) -> list[DayCost]:
        """Return the spending on each of the last ``days`` chat days, oldest first, of
        ``chat`` or of the whole bot; a day without calls is nothing spent."""
        first, last = self._days(days)
        spent = await self._store.daily_tokens(first, last, chat=chat)
        span = (first + timedelta(days=offset) for offset in range(days))
        return [DayCost(day, self._spent(spent.get(day, TokenCount()))) for day in span]
