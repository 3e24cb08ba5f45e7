"""The interfaces the memory owns and ``storage/`` implements: people's facts
(:class:`PeopleStore`), the day summaries with their search (:class:`MemoryStore`), and
the nearest-vector search of semantic recall (:class:`VectorStore`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Protocol

from bot.models import (
    ChatKey,
    DaySummary,
    EmbeddingSource,
    Fact,
    KnownPerson,
    PersonNote,
    StoredMessage,
    SummaryRecord,
)


class PeopleStore(Protocol):
    """Durable facts about people, per (chat, person), soft-deleted and audited.

    Facts never cross chats: every method takes the chat it acts on.
    """

    async def add_facts(
        self, chat: ChatKey, day: date, notes: Sequence[PersonNote], *, keep: int, now: datetime
    ) -> list[Fact]:
        """Store new facts (a live duplicate is skipped); keep each person's ``keep`` newest.

        Return the facts stored; older ones crowded out are soft-deleted, not lost.
        """
        ...

    async def live_facts(self, chat: ChatKey, user_ids: Sequence[str]) -> dict[str, list[Fact]]:
        """Return the live facts of those people in ``chat``, newest first, by user id."""
        ...

    async def known_people(self, chat: ChatKey) -> list[KnownPerson]:
        """Return the people of ``chat`` with live facts, most facts first."""
        ...

    async def forget_fact(
        self, chat: ChatKey, fact_id: int, *, by: str, now: datetime
    ) -> Fact | None:
        """Soft-delete one live fact of ``chat``; ``None`` if it has no such live fact."""
        ...

    async def forget_person(
        self, chat: ChatKey, user_id: str, *, by: str, now: datetime, through: date
    ) -> int:
        """Soft-delete every live fact about a person in ``chat``; return how many.

        Nothing about them is learned in ``chat`` from chat days up to ``through`` after,
        and a fact forgotten on request is not learned again in the same words.
        """
        ...

    async def person_seen(self, chat: ChatKey, user_id: str) -> bool:
        """Whether a person ever wrote in ``chat``, or a fact about them was kept or
        forgotten there."""
        ...


class MemoryStore(PeopleStore, Protocol):
    """Durable memory: each chat's prompt stack of day summaries and their search index.

    Summaries never cross chats: every method takes the chat it acts on.
    """

    async def chats_active_between(self, start: datetime, end: datetime) -> list[ChatKey]:
        """Return the chats with chatter messages sent in ``[start, end)``."""
        ...

    async def messages_between(
        self, chat: ChatKey, start: datetime, end: datetime, *, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` messages (chatters' and the bot's) sent in ``[start, end)``."""
        ...

    async def has_summary(
        self, chat: ChatKey, day: date, *, include_popped: bool, include_partial: bool = True
    ) -> bool:
        """Tell whether ``day`` has a live summary (or any, popped ones included); a live
        partial one counts unless ``include_partial`` is false."""
        ...

    async def push_summary(
        self,
        chat: ChatKey,
        day: date,
        content: DaySummary,
        *,
        added_prompt: str,
        full_prompt_before: str,
        full_prompt_after: str,
        message_count: int,
        now: datetime,
        partial: bool = False,
    ) -> SummaryRecord:
        """Push a day's summary and index it, atomically; ``SummaryExists`` if one is live.

        ``partial``: the day has not ended yet.
        """
        ...

    async def replace_summary(
        self,
        chat: ChatKey,
        history_id: int,
        content: DaySummary,
        *,
        added_prompt: str,
        message_count: int,
        now: datetime,
        partial: bool,
    ) -> SummaryRecord | None:
        """Put a summary in the place of a live partial one (its place in the stack, its
        date); ``None`` if it is no longer live and partial."""
        ...

    async def live_summaries(self, chat: ChatKey) -> list[SummaryRecord]:
        """Return the chat's live summaries in push order (oldest first)."""
        ...

    async def pop_summary(self, chat: ChatKey, *, by: str, now: datetime) -> SummaryRecord | None:
        """Soft-delete the newest live summary (and hide its index row); ``None`` if none."""
        ...

    async def restore_summary(self, chat: ChatKey, *, now: datetime) -> SummaryRecord | None:
        """Undo the last pop if nothing was pushed since; return what came back, or ``None``."""
        ...

    async def restorable_summary(self, chat: ChatKey) -> SummaryRecord | None:
        """Return the summary ``restore_summary`` would bring back now; ``None`` if none."""
        ...

    async def summaries_on(self, chat: ChatKey, days: Sequence[date]) -> list[SummaryRecord]:
        """Return the live summaries of those chat days, oldest first."""
        ...

    async def search_summaries(
        self, chat: ChatKey, query: str, *, limit: int
    ) -> list[SummaryRecord]:
        """Return the live summaries that best match ``query``'s keywords, best first."""
        ...


class VectorStore(Protocol):
    """Durable vectors of memory rows, searched within one chat.

    A row to embed is an :class:`EmbeddingSource`: (kind, row id, chat, text). Vectors are
    kept per embeddings model; a row without a vector of the current model is pending.
    """

    async def unembedded(
        self, *, model: str, after: tuple[str, int] | None
    ) -> tuple[list[EmbeddingSource], tuple[str, int] | None]:
        """Return live rows with no ``model`` vector from a bounded stretch after ``after``.

        ``after`` is the position a previous call returned (``None``: from the start); the
        position returned is ``None`` once every kind of row has been read to its end.
        """
        ...

    async def add_vectors(
        self,
        model: str,
        rows: Sequence[tuple[EmbeddingSource, Sequence[float]]],
        *,
        now: datetime,
    ) -> None:
        """Store one vector per row (replacing an older one of the same model)."""
        ...

    async def similar_summaries(
        self, chat: ChatKey, vector: Sequence[float], *, model: str, limit: int
    ) -> list[SummaryRecord]:
        """Return the chat's live summaries nearest ``vector`` (cosine), nearest first."""
        ...

    async def similar_facts(
        self, chat: ChatKey, vector: Sequence[float], *, model: str, limit: int
    ) -> list[Fact]:
        """Return the chat's live facts about people nearest ``vector``, nearest first."""
        ...
