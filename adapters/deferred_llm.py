"""An LLM that loads the ``openai`` SDK when it is first asked, not when the bot starts.

Importing the SDK builds its thousand-odd pydantic types: about 21 MiB and 0.5–1.2 s on
the development machine, more than everything else ``pacebot run`` loads before the
platforms are up. A bot that has not been asked anything yet needs none of it, so the
platforms start without it and the first batch (or nightly summary) imports it in a
worker thread, where the event loop keeps turning meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.models import ChatMessage, Completion, ToolSpec

if TYPE_CHECKING:
    from adapters.openai_llm import OpenAILLM

SDK_MODULE = "adapters.openai_llm"


class DeferredLLM:
    """The :class:`bot.ports.LLM` that ``build`` makes, built on the first call."""

    def __init__(self, build: Callable[[], OpenAILLM]) -> None:
        self._build = build
        self._llm: OpenAILLM | None = None
        self._building = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the SDK client exists yet."""
        return self._llm is not None

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Build the client if this is the first call, then ask it."""
        llm = self._llm or await self._built()
        return await llm.complete(
            messages, json_mode=json_mode, tools=tools, tool_choice=tool_choice
        )

    async def _built(self) -> OpenAILLM:
        async with self._building:
            if self._llm is None:
                await asyncio.to_thread(importlib.import_module, SDK_MODULE)
                self._llm = self._build()
        return self._llm

    async def aclose(self) -> None:
        """Close the client's HTTP connections, if it was ever built."""
        if self._llm is not None:
            await self._llm.aclose()
