"""Semantic memory: embed what the bot remembers, and find what is near a question.

Only built when ``[memory.embeddings] model`` is set. Every memory row (a day summary or a
fact about a person) is embedded after it is written, in batches of
``EMBED_BATCH`` texts per request; rows written while the endpoint was down are picked up
by :meth:`SemanticMemory.backfill` at start-up and after each nightly run. A question is
embedded with one request, bounded by ``llm.timeout_s``: on any failure recall goes on by
keywords alone, and the batch is neither failed nor delayed beyond that bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from loguru import logger

from bot.errors import LLMError, StorageError
from bot.memory.ports import VectorStore
from bot.models import ChatKey, EmbeddingSource, Fact, SummaryRecord
from bot.ports import Embedder
from bot.prompt import clip

EMBED_BATCH = 64  # texts per embeddings request when back-filling
EMBED_CHARS_MAX = 4000  # of one text: a long summary's head says what it is about


@dataclass(frozen=True, slots=True)
class Nearest:
    """A chat's memory rows nearest a question, nearest first, of each kind."""

    summaries: tuple[SummaryRecord, ...] = ()
    facts: tuple[Fact, ...] = ()


class SemanticMemory:
    """Embed memory rows and search a chat's rows by the meaning of a question."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        *,
        timeout_s: float,
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._timeout_s = timeout_s
        self._now = now
        self._filling = asyncio.Lock()  # one back-fill at a time: none embeds a row twice

    @property
    def model(self) -> str:
        return self._embedder.model

    async def similar(self, chat: ChatKey, question: str, *, limit: int) -> Nearest:
        """Return up to ``limit`` summaries and facts of the chat nearest ``question``.

        One embeddings request, bounded by ``llm.timeout_s``, serves both kinds; its
        failure is logged and leaves recall to the keywords (nothing is near then).
        """
        log = logger.bind(chat=str(chat))
        text = clip(question.strip(), EMBED_CHARS_MAX)
        if not text or limit < 1:
            return Nearest()
        try:
            async with asyncio.timeout(self._timeout_s):
                vectors = await self._embedder.embed([text])
        except TimeoutError:
            log.warning("embeddings timed out after {} s; recalling by keywords", self._timeout_s)
            return Nearest()
        except LLMError as exc:
            log.warning("embeddings failed, recalling by keywords: {}", exc)
            return Nearest()
        store, model = self._store, self.model
        summaries = await store.similar_summaries(chat, vectors[0], model=model, limit=limit)
        facts = await store.similar_facts(chat.room, vectors[0], model=model, limit=limit)
        return Nearest(tuple(summaries), tuple(facts))

    async def backfill(self) -> int:
        """Embed every live row that has no vector of this model yet; return how many.

        Stops at the first failing request (logged); what is left waits for the next call.
        """
        embedded = 0
        async with self._filling:
            after: tuple[str, int] | None = None
            try:
                while True:
                    pending, after = await self._store.unembedded(model=self.model, after=after)
                    for start in range(0, len(pending), EMBED_BATCH):
                        chunk = pending[start : start + EMBED_BATCH]
                        await self._embed(chunk)
                        embedded += len(chunk)
                    if after is None:
                        break
            except (LLMError, StorageError) as exc:
                logger.warning("embedding memory stopped, will resume later: {}", exc)
        if embedded:
            logger.info("embedded {} memory rows with {}", embedded, self.model)
        return embedded

    async def _embed(self, rows: Sequence[EmbeddingSource]) -> None:
        vectors = await self._embedder.embed([clip(row.text, EMBED_CHARS_MAX) for row in rows])
        await self._store.add_vectors(
            self.model, list(zip(rows, vectors, strict=True)), now=self._now()
        )
