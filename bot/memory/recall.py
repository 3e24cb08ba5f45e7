"""Bring back what a chat said on other days, with no LLM call.

A question that names a date ("昨天发生了什么", "what did we talk about last Friday")
recalls the summaries of exactly those chat days. Otherwise, or when those days have no
summary (today's, say), the best keyword matches among older summaries come back; with
semantic memory on, the summaries nearest the question's meaning too, both lists fused by
reciprocal rank, and the facts about people nearest it. Summaries already in the persona
are not repeated, and what comes back fits its share of the prompt: the newest of the days
asked about, or the best matches (summaries first, then facts).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import date

from bot.memory.dates import referred_days
from bot.memory.ports import MemoryStore
from bot.memory.semantic import SemanticMemory
from bot.models import ChatKey, Fact, SummaryRecord
from bot.prompt import clip, estimate_tokens

RECALL_DAYS_MAX = 31  # a question about "the last 3 months" recalls its newest month
RRF_K = 60  # reciprocal-rank fusion damping (Cormack et al. 2009): rank r scores 1/(60+r)


@dataclass(frozen=True, slots=True)
class Recalled:
    """What recall found for a question, and how.

    ``keyword_hits`` and ``vector_hits`` are the two ranked lists before fusion (both
    empty for recall by dates); ``embedded`` says whether the question was sent to the
    embeddings endpoint (whatever came of it).
    """

    how: str  # "dates", "keywords", "hybrid" or "nothing"
    days: tuple[date, ...]
    records: tuple[SummaryRecord, ...]
    keyword_hits: tuple[SummaryRecord, ...] = ()
    vector_hits: tuple[SummaryRecord, ...] = ()
    embedded: bool = False
    facts: tuple[Fact, ...] = ()  # facts about people found by meaning, nearest first

    def render(self) -> str:
        """Return the recalled summaries, then the recalled facts, as prompt text."""
        parts = [r.added_prompt for r in self.records]
        if self.facts:
            parts.append("About people:\n" + "\n".join(map(fact_line, self.facts)))
        return "\n\n".join(parts)

    def searched(self) -> str:
        """Say where recall looked: the chat days the question named, or its keywords."""
        if self.days:
            return "searched the dates the question names: " + ", ".join(map(str, self.days))
        how = "keyword and meaning" if self.embedded else "keyword"
        return f"no date in the question: searched by {how}"


def fact_line(fact: Fact) -> str:
    """Return one recalled fact as a prompt line: who (name and platform id), and what."""
    return f"- {fact.user_name} ({fact.user_id}): {fact.text}"


def _facts_within(facts: Sequence[Fact], budget_tokens: int) -> tuple[Fact, ...]:
    """Keep the leading ``facts`` whose lines fit ``budget_tokens`` together."""
    kept: list[Fact] = []
    for fact in facts:
        budget_tokens -= estimate_tokens(fact_line(fact)) + 1
        if budget_tokens < 0:
            break
        kept.append(fact)
    return tuple(kept)


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


def fuse(*rankings: Sequence[SummaryRecord], k: int = RRF_K) -> list[SummaryRecord]:
    """Merge ranked lists by reciprocal rank: a record scores the sum of ``1/(k + rank)``.

    Ties keep the order in which records first appear (the first list wins).
    """
    scores: dict[int, float] = {}
    records: dict[int, SummaryRecord] = {}
    for ranking in rankings:
        for rank, record in enumerate(ranking, start=1):
            scores[record.id] = scores.get(record.id, 0.0) + 1 / (k + rank)
            records.setdefault(record.id, record)
    order = sorted(records, key=lambda record_id: -scores[record_id])  # stable on ties
    return [records[record_id] for record_id in order]


async def recall(
    store: MemoryStore,
    chat: ChatKey,
    texts: Sequence[str],
    *,
    today: date,
    hits: int,
    budget_tokens: int,
    in_persona: Collection[int] = (),
    semantic: SemanticMemory | None = None,
) -> Recalled:
    """Find the summaries ``texts`` ask about: by the dates they name, else by meaning.

    At most ``budget_tokens`` of summaries come back: the newest of the days asked about
    (in date order), or the best matches (best first): keyword matches, fused with the
    nearest by meaning when ``semantic`` is given (one embeddings request).
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
    pool = hits + len(in_persona)
    found = await store.search_summaries(chat, query, limit=pool)
    keyword = [r for r in found if r.id not in in_persona]
    vector: list[SummaryRecord] = []
    near_facts: Sequence[Fact] = ()
    if semantic is not None:
        nearest = await semantic.similar(chat, query, limit=pool)
        vector = [r for r in nearest.summaries if r.id not in in_persona]
        near_facts = nearest.facts[:hits]
    records = _within(fuse(keyword, vector)[:hits], budget_tokens)
    spent = sum(estimate_tokens(r.added_prompt) + 1 for r in records)
    facts = _facts_within(near_facts, budget_tokens - spent)
    how = ("hybrid" if vector or facts else "keywords") if records or facts else "nothing"
    return Recalled(
        how,
        newest,
        records,
        keyword_hits=tuple(keyword),
        vector_hits=tuple(vector),
        embedded=semantic is not None and bool(query.strip()),
        facts=facts,
    )
