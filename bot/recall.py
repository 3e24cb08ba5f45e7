"""Bring back what a chat said on other days, with no LLM call.

A question that names a date ("昨天发生了什么", "what did we talk about last Friday")
recalls the summaries of exactly those chat days. Otherwise, or when those days have no
summary (today's, say), the best keyword matches among older summaries come back.
Summaries already in the persona are not repeated, and what comes back fits its share of
the prompt: the newest of the days asked about, or the best of the matches.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import date

from bot.dates import referred_days
from bot.models import ChatKey, SummaryRecord
from bot.ports import MemoryStore
from bot.prompt import clip, estimate_tokens

RECALL_DAYS_MAX = 31  # a question about "the last 3 months" recalls its newest month


@dataclass(frozen=True, slots=True)
class Recalled:
    """What recall found for a question, and how."""

    how: str  # "dates", "keywords" or "nothing"
    days: tuple[date, ...]
    records: tuple[SummaryRecord, ...]

    def render(self) -> str:
        """Return the recalled summaries as prompt text."""
        return "\n\n".join(r.added_prompt for r in self.records)

    def searched(self) -> str:
        """Say where recall looked: the chat days the question named, or its keywords."""
        if self.days:
            return "searched the dates the question names: " + ", ".join(map(str, self.days))
        return "no date in the question: searched by keyword"


def _within(records: Sequence[SummaryRecord], budget_tokens: int) -> tuple[SummaryRecord, ...]:
    """Keep the leading ``records`` whose text fits ``budget_tokens`` together.

    The first one always stays, cut to fit if it alone is too long: the question was
    about it.
    """
    kept: list[SummaryRecord] = []
    for record in records:
        cost = estimate_tokens(record.added_prompt) + 1
        if cost > budget_tokens:
            if not kept:  # at most one token per character: cutting to that many fits
                kept.append(replace(record, added_prompt=clip(record.added_prompt, budget_tokens)))
            break
        kept.append(record)
        budget_tokens -= cost
    return tuple(kept)


async def recall(
    store: MemoryStore,
    chat: ChatKey,
    texts: Sequence[str],
    *,
    today: date,
    hits: int,
    budget_tokens: int,
    in_persona: Collection[int] = (),
) -> Recalled:
    """Find the summaries ``texts`` ask about: by the dates they name, else by keywords.

    At most ``budget_tokens`` of summaries come back: the newest of the days asked about
    (in date order), or the best keyword matches (best first).
    """
    days: list[date] = []
    for text in texts:
        days.extend(d for d in referred_days(text, today=today) if d not in days)
    newest = tuple(sorted(days)[-RECALL_DAYS_MAX:])
    if newest:
        found = await store.summaries_on(chat, newest)
        if found:  # those days have summaries; the ones in the persona are not repeated
            fresh = [r for r in reversed(found) if r.id not in in_persona]
            return Recalled("dates", newest, _within(fresh, budget_tokens)[::-1])
    if hits <= 0:
        return Recalled("nothing", newest, ())
    query = "\n".join(texts)
    found = await store.search_summaries(chat, query, limit=hits + len(in_persona))
    records = _within([r for r in found if r.id not in in_persona][:hits], budget_tokens)
    return Recalled("keywords" if records else "nothing", newest, records)
