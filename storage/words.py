"""The core's word cutter: recall's own cut (``storage/search.py``), shared by the group
gate, so an interest is found in a message exactly as recall would find it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from storage import search


class RecallWords:
    """The :class:`bot.gate.WordCutter`: the first use loads the dictionary in a worker
    thread (the event loop keeps turning), every later cut runs inline in microseconds."""

    def __init__(self) -> None:
        self._loaded = False

    async def words(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """Return the words of each text, in order."""
        if not self._loaded:
            await asyncio.to_thread(search.load_dictionary)
            self._loaded = True
        return [search.word_set(text) for text in texts]
