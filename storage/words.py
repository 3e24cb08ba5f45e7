"""The core's word cutter: recall's own cut (``storage/search.py``), shared by the group
gate, so an interest is found in a message as recall would find it in a summary."""

from __future__ import annotations

from collections.abc import Sequence

from storage import search


class RecallWords:
    """The :class:`bot.gate.WordCutter`: each text cut as recall cuts a question, inline
    (no dictionary to load, microseconds a message)."""

    async def words(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """Return the words of each text, in order."""
        return [search.word_set(text) for text in texts]
