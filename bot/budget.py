"""What the LLM calls cost, and whether one more may be made.

Every call's tokens come from its provider's ``usage``; a provider that reports none has
them counted offline, the way prompts are budgeted (:func:`usage_of`, marked estimated).
They are kept per (chat, chat day, kind of call) through the :class:`UsageLog` port, and
:class:`Spending` holds them against the caps of ``[budget]``:

- over a **soft** cap (``daily_tokens`` for the whole bot, ``chat_daily_tokens`` for one
  chat) the optional calls stop: unaddressed group batches and the splitter;
- over the **hard** cap (``hard_daily_tokens``) every call stops until the next chat day.
  The messages of a batch turned away stay stored, and the nightly summary of the day
  that ended runs once the new day has begun.

Reaching a cap is logged once a day (per chat for the chat cap). Costs are the tokens at
``price_in_per_million`` and ``price_out_per_million``, written by :func:`format_cost` so
that every face shows the same figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol

from loguru import logger

from bot.config.groups import BudgetConfig
from bot.config.settings import Settings
from bot.errors import StorageError
from bot.models import ChatKey, ChatMessage, Completion, TokenCount, Usage, UsageRow
from bot.prompt import estimate_prompt_tokens, estimate_tokens, image_tokens

HARD_CAP = "hard cap reached"
SOFT_CAP = "soft cap reached"
CHAT_SOFT_CAP = "chat soft cap reached"
PER_MILLION = 1_000_000
COST_DECIMALS_MAX = 10  # a smaller cost shows as 0.0000000000
_EFFECTS = {
    "hard": "no LLM call at all",
    "soft": "no unaddressed group batch and no splitter",
    "chat soft": "no unaddressed batch and no splitter in this chat",
}


class UsageLog(Protocol):
    """What the LLM calls cost, in tokens per chat, chat day and kind of call."""

    async def add_usage(self, chat: ChatKey, day: date, kind: str, usage: Usage) -> None:
        """Add one call's tokens to its (day, chat, kind)."""
        ...

    async def day_tokens(self, day: date, chat: ChatKey | None) -> tuple[TokenCount, TokenCount]:
        """Return the tokens of ``day``: the whole bot's, and ``chat``'s (none without one)."""
        ...

    async def daily_tokens(
        self, first: date, last: date, *, chat: ChatKey | None = None
    ) -> dict[date, TokenCount]:
        """Return the tokens of each day from ``first`` to ``last`` that has any, of ``chat``
        or of the whole bot."""
        ...

    async def usage_rows(
        self, first: date, last: date, *, chat: ChatKey | None = None
    ) -> list[UsageRow]:
        """Return the (day, chat, kind) rows from ``first`` to ``last``, of ``chat`` or of
        every chat, by day, chat and kind."""
        ...


def usage_of(messages: Sequence[ChatMessage], completion: Completion) -> Usage:
    """Return what a call cost: its provider's ``usage``, or an offline count where the
    provider left it out (the request's words and pictures, the answer's words)."""
    prompt, answer = completion.prompt_tokens, completion.completion_tokens
    if prompt is not None and answer is not None:
        return Usage(prompt, answer)
    if prompt is None:
        pictures = sum(image_tokens(i.jpeg) for m in messages for i in m.images)
        prompt = estimate_prompt_tokens(messages) + pictures
    if answer is None:
        called = "".join(call.name + call.arguments for call in completion.tool_calls)
        answer = estimate_tokens(completion.text + called)
    return Usage(prompt, answer, estimated=True)


def cost_of(tokens: TokenCount | Usage, budget: BudgetConfig) -> float:
    """Return what ``tokens`` cost at ``budget``'s prices, in its currency."""
    paid = (
        tokens.prompt_tokens * budget.price_in_per_million
        + tokens.completion_tokens * budget.price_out_per_million
    )
    return paid / PER_MILLION


NO_PRICES = "no prices set"
"""What every face shows for a cost while ``[budget]`` has no prices (not ``0.00 USD``)."""


def is_priced(budget: BudgetConfig) -> bool:
    """Tell whether ``[budget]`` sets a price, so that a cost means something."""
    return bool(budget.price_in_per_million or budget.price_out_per_million)


def format_cost(amount: float, currency: str, *, priced: bool = True) -> str:
    """Write a cost the same way on every face: two decimals from 1 up, else two
    significant digits, never in exponent form (``0.000056 USD``); without prices,
    :data:`NO_PRICES`."""
    if not priced:
        return NO_PRICES
    if amount >= 1 or amount <= 0:
        return f"{amount:,.2f} {currency}"
    decimals = min(COST_DECIMALS_MAX, 1 - math.floor(math.log10(amount)))
    return f"{amount:.{decimals}f} {currency}"


@dataclass(frozen=True, slots=True)
class Standing:
    """One chat day's tokens so far, the whole bot's and one chat's, against the caps."""

    day: date
    bot: TokenCount
    chat: TokenCount
    soft: bool  # the bot is over budget.daily_tokens
    chat_soft: bool  # the chat is over budget.chat_daily_tokens
    hard: bool  # the bot is over budget.hard_daily_tokens

    def refusal(self, *, optional: bool) -> str | None:
        """Say why no call may be made now (an ``optional`` one stops at a soft cap)."""
        if self.hard:
            return HARD_CAP
        if optional and self.soft:
            return SOFT_CAP
        if optional and self.chat_soft:
            return CHAT_SOFT_CAP
        return None


def _over(tokens: TokenCount, cap: int) -> bool:
    return cap > 0 and tokens.total >= cap


class Spending:
    """Note what each call cost, and tell whether the caps let one more be made."""

    def __init__(self, config: Settings, log: UsageLog, *, now: Callable[[], datetime]) -> None:
        self._config = config
        self._log = log
        self._days = config.chat_days(now)
        self._told: set[tuple[date, str]] = set()  # caps logged as reached, by day

    @property
    def prices(self) -> BudgetConfig:
        """Return the running ``[budget]``: its caps and its prices."""
        return self._config.budget

    @property
    def capped(self) -> bool:
        """Whether any cap is set (without one, nothing is ever refused)."""
        budget = self._config.budget
        chat_caps = budget.chat_daily_tokens or self._config.profiles_cap_chats
        return bool(budget.daily_tokens or budget.hard_daily_tokens or chat_caps)

    def today(self) -> date:
        """Return the current chat day: caps count per chat day."""
        return self._days.today()

    def next_day_at(self) -> datetime:
        """Return when the next chat day begins: the caps start again from zero then."""
        return self._days.next_boundary()

    async def standing(self, chat: ChatKey | None = None) -> Standing:
        """Return today's tokens, the bot's and ``chat``'s, against the caps."""
        day = self.today()
        bot, of_chat = await self._log.day_tokens(day, chat)
        budget = self._config.budget
        return Standing(
            day,
            bot,
            of_chat,
            soft=_over(bot, budget.daily_tokens),
            chat_soft=chat is not None and _over(of_chat, self._chat_cap(chat)),
            hard=_over(bot, budget.hard_daily_tokens),
        )

    def _chat_cap(self, chat: ChatKey) -> int:
        return self._config.for_chat(chat).chat_daily_tokens

    async def refusal(self, chat: ChatKey, *, optional: bool) -> str | None:
        """Say why a call for ``chat`` may not be made now; ``None`` if it may.

        A store that cannot be read refuses nothing: the caps guard money, a failing
        database must not also silence the bot.
        """
        if not self.capped:
            return None
        try:
            standing = await self.standing(chat)
        except StorageError as exc:
            logger.bind(chat=str(chat)).warning("budget not checked: {}", exc)
            return None
        return standing.refusal(optional=optional)

    async def note(self, chat: ChatKey, kind: str, usage: Usage) -> None:
        """Keep what one call cost; log a cap the first time it is reached on a day.

        A store that cannot be written costs the figure, never the answer.
        """
        day = self.today()
        try:
            await self._log.add_usage(chat, day, kind, usage)
            if self.capped:
                self._tell_caps(chat, await self.standing(chat))
        except StorageError as exc:
            logger.bind(chat=str(chat)).warning("the tokens of a {} call are lost: {}", kind, exc)

    def _tell_caps(self, chat: ChatKey, standing: Standing) -> None:
        """Log each cap the first time it is found reached on a chat day."""
        budget = self._config.budget
        reached = (
            ("hard", "", standing.hard, budget.hard_daily_tokens, standing.bot),
            ("soft", "", standing.soft, budget.daily_tokens, standing.bot),
            ("chat soft", str(chat), standing.chat_soft, self._chat_cap(chat), standing.chat),
        )
        until = f"{self.next_day_at().astimezone(self._config.bot.zone):%Y-%m-%d %H:%M}"
        for name, whose, over, cap, tokens in reached:
            if not over or (standing.day, name + whose) in self._told:
                continue
            self._told.add((standing.day, name + whose))
            logger.bind(chat=str(chat)).warning(
                "budget: the {} cap of {:,} tokens a day is reached ({:,} today): {} until the"
                " next chat day begins at {}",
                name,
                cap,
                tokens.total,
                _EFFECTS[name],
                until,
            )
        self._told = {told for told in self._told if told[0] >= standing.day}
