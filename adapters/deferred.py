"""Clients that load the ``openai`` SDK when they are first asked, not when the bot starts.

Importing the SDK builds its thousand-odd pydantic types: about 21 MiB and 0.5–1.2 s on
the development machine, more than everything else ``pacebot run`` loads before the
platforms are up. A bot that has not been asked anything yet needs none of it, so the
platforms start without it and the first use imports the client's module and builds the
client in a worker thread, where the event loop keeps turning meanwhile.
:class:`Deferred` does that once for any client; :class:`DeferredLLM` (the chat model,
the splitter), :class:`DeferredEmbedder` (``[memory.embeddings]``) and
:class:`DeferredSpeech` (``[voice]``) are the ports built on it.

The SDK imports ``aiohttp`` whenever it is installed, for an optional transport pacebot
never uses (it talks through the SDK's default ``httpx2`` client): another 11 MiB and
0.1 s, in a development install or wherever aiohttp is present for other reasons.
:func:`load` imports the client's module with aiohttp reading as absent, then makes it
importable again, and freezes what the import made (as start-up does, see
``adapters.app.freeze_startup_heap``): the SDK's many thousand objects live as long as
the process, and left to the collector every full collection would walk them again.

The ``__init__`` of ``openai.types`` imports the types of every endpoint the SDK knows,
and that of ``openai.types.responses`` the 250 of the Responses API: some 470 modules, of
which a chat client uses about a hundred. :func:`load` defers both
(:mod:`adapters.package_init`), so that the SDK's own modules, which import each type from
its submodule, load only those of the endpoints they serve: 7 MiB less once the first
answers are in.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

from adapters.package_init import defer_package_init
from bot.models import ChatMessage, Completion, ToolSpec
from bot.voice.ports import Audio

if TYPE_CHECKING:
    from adapters.openai_audio import OpenAIAudio
    from adapters.openai_embeddings import OpenAIEmbedder
    from adapters.openai_llm import OpenAILLM


_UNUSED_TRANSPORT: Final = "aiohttp"
_EVERY_TYPE: Final = ("openai.types", "openai.types.responses")  # their __init__s import all


def load(module: str) -> None:
    """Import ``module`` without the SDK's aiohttp transport and the types it never uses;
    keep what it made out of later full collections."""
    for package in _EVERY_TYPE:
        defer_package_init(package)
    hide = _UNUSED_TRANSPORT not in sys.modules
    if hide:  # None in sys.modules reads as "not installed" to an import
        sys.modules[_UNUSED_TRANSPORT] = None  # type: ignore[assignment]
    try:
        importlib.import_module(module)
    finally:
        if hide and sys.modules.get(_UNUSED_TRANSPORT, sys) is None:
            del sys.modules[_UNUSED_TRANSPORT]
    gc.freeze()


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
                self._client = await asyncio.to_thread(self._load_and_build)
        return self._client

    def _load_and_build(self) -> ClientT:
        """Import the module and build the client, off the event loop: on the loop,
        building it (its HTTP transport: an SSL context, more imports) took 70-125 ms."""
        load(self._module)
        return self._build()

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
