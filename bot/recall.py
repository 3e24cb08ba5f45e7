"""Bring back what a chat said on other days, with no LLM call.

A question that names a date ("昨天发生了什么", "what did we talk about last Friday")
recalls the summaries of exactly those chat days. Otherwise the best keyword matches
among older summaries come back. Summaries already in the persona are not repeated.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date

from bot.dates import referred_days
from bot.models import ChatKey, SummaryRecord
from bot.ports import MemoryStore

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


async def recall(
    store: MemoryStore,
    chat: ChatKey,
    texts: Sequence[str],
    *,
    today: date,
    hits: int,
    in_persona: Collection[int] = (),
) -> Recalled:
    """Find the summaries ``texts`` ask about: by the dates they name, else by keywords."""
    days: list[date] = []
    for text in texts:
        days.extend(d for d in referred_days(text, today=today) if d not in days)
    if days:
        newest = sorted(days)[-RECALL_DAYS_MAX:]
        found = await store.summaries_on(chat, newest)
        records = tuple(r for r in found if r.id not in in_persona)
        return Recalled("dates", tuple(newest), records)
    if hits <= 0:
        return Recalled("nothing", (), ())
    query = "\n".join(texts)
    found = await store.search_summaries(chat, query, limit=hits + len(in_persona))
    records = tuple(r for r in found if r.id not in in_persona)[:hits]
    return Recalled("keywords" if records else "nothing", (), records)
