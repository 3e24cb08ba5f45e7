"""Clients that load the ``openai`` SDK when they are first asked, not when the bot starts.

Importing the SDK builds its thousand-odd pydantic types: about 21 MiB and 0.5–1.2 s on
the development machine, more than everything else ``pacebot run`` loads before the
platforms are up. A bot that has not been asked anything yet needs none of it, so the
platforms start without it and the first use imports the client's module in a worker
thread, where the event loop keeps turning meanwhile. :class:`Deferred` does that once
for any client; :class:`DeferredLLM` (the chat model, the splitter),
:class:`DeferredEmbedder` (``[memory.embeddings]``) and :class:`DeferredSpeech`
(``[voice]``) are the ports built on it.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from bot.models import ChatMessage, Completion, ToolSpec
from bot.voice.ports import Audio

if TYPE_CHECKING:
    from adapters.openai_audio import OpenAIAudio
    from adapters.openai_embeddings import OpenAIEmbedder
    from adapters.openai_llm import OpenAILLM


class Closable(Protocol):
    """A client holding HTTP connections until it is closed."""

    async def aclose(self) -> None: ...


ClientT = TypeVar("ClientT", bound=Closable)


class Deferred(Generic[ClientT]):
    """The client that ``build`` makes, built on first use once ``module`` is imported."""

    def __init__(self, module: str, build: Callable[[], ClientT]) -> None:
        self._module = module
        self._build = build
        self._client: ClientT | None = None
        self._building = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the client exists yet."""
        return self._client is not None

    async def client(self) -> ClientT:
        """Return the client, importing its module in a worker thread and building it first
        if this is the first use; concurrent first uses share one build."""
        if self._client is not None:
            return self._client
        async with self._building:
            if self._client is None:
                await asyncio.to_thread(importlib.import_module, self._module)
                self._client = self._build()
        return self._client

    async def aclose(self) -> None:
        """Close the client's HTTP connections, if it was ever built."""
        if self._client is not None:
            await self._client.aclose()


class DeferredLLM(Deferred["OpenAILLM"]):
    """The :class:`bot.ports.LLM` that ``build`` makes, built on the first call."""

    def __init__(self, build: Callable[[], OpenAILLM]) -> None:
        super().__init__("adapters.openai_llm", build)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Build the client if this is the first call, then ask it."""
        llm = await self.client()
        return await llm.complete(
            messages, json_mode=json_mode, tools=tools, tool_choice=tool_choice
        )


class DeferredEmbedder(Deferred["OpenAIEmbedder"]):
    """The :class:`bot.ports.Embedder` for ``model`` that ``build`` makes, built on the
    first request: naming the model (to find rows without its vectors) builds nothing."""

    def __init__(self, model: str, build: Callable[[], OpenAIEmbedder]) -> None:
        super().__init__("adapters.openai_embeddings", build)
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Build the client if this is the first request, then embed ``texts`` with it."""
        embedder = await self.client()
        return await embedder.embed(texts)


class DeferredSpeech(Deferred["OpenAIAudio"]):
    """The :class:`bot.voice.ports.Speech` that ``build`` makes, built on the first call."""

    def __init__(self, build: Callable[[], OpenAIAudio]) -> None:
        super().__init__("adapters.openai_audio", build)

    async def transcribe(self, audio: Audio) -> str:
        """Build the client if this is the first call, then transcribe ``audio``."""
        speech = await self.client()
        return await speech.transcribe(audio)

    async def speak(self, text: str, *, audio_format: str) -> Audio:
        """Build the client if this is the first call, then speak ``text``."""
        speech = await self.client()
        return await speech.speak(text, audio_format=audio_format)
