"""Embed texts through an OpenAI-compatible ``/embeddings`` endpoint with the ``openai`` SDK.

:class:`OpenAIEmbedder` implements :class:`bot.ports.Embedder`. It is only built when
``[memory.embeddings] model`` is set; with ``model = ""`` no client exists and no
embeddings request is ever made. Vectors are asked for as plain floats
(``encoding_format = "float"``): every compatible server knows that form, not all know
the SDK's default base64. Failures become ``LLMUnavailable`` without the key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import httpx2
import openai
from openai.types.create_embedding_response import CreateEmbeddingResponse

from adapters.openai_llm import SdkClient, endpoint_name, unavailable
from bot.config.model import Config
from bot.errors import BadLLMReply, ConfigError, LLMError

PROBE_TEXT = "pacebot"
"""What ``answers`` embeds to see whether the endpoint works."""


class OpenAIEmbedder(SdkClient):
    """An OpenAI-compatible embeddings model behind the real ``openai.AsyncOpenAI`` client."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float,
        max_retries: int,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if not model.strip():
            msg = "memory.embeddings: no model is set, so no embeddings client is built"
            raise ConfigError(msg)
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            http_client=http_client,
            empty_key=f"memory.embeddings: the API key for model {model!r} is empty",
        )
        self._model = model
        self._where = f"embeddings {model} at {endpoint_name(base_url)}"

    @classmethod
    def from_config(cls, config: Config, *, api_key: str) -> Self:
        """Build it from ``[memory.embeddings]``, an empty base URL taken from ``[llm]``."""
        embeddings = config.memory.embeddings
        return cls(
            base_url=embeddings.base_url or config.llm.base_url,
            api_key=api_key,
            model=embeddings.model,
            timeout_s=config.llm.timeout_s,
            max_retries=config.llm.max_retries,
        )

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one vector per text from one request; raise an ``LLMError``."""
        failure: LLMError | None = None
        try:
            response: object = await self._client.embeddings.create(
                model=self._model, input=list(texts), encoding_format="float"
            )
        except openai.OpenAIError as exc:
            # Raised outside the except block: a chained SDK error may echo the key.
            failure = unavailable(exc, where=self._where, secret=self._api_key)
        if failure is not None:
            raise failure
        return self._vectors(response, len(texts))

    def _vectors(self, response: object, count: int) -> list[list[float]]:
        data = response.data if isinstance(response, CreateEmbeddingResponse) else None
        if not data or len(data) != count:
            got = len(data) if data else 0
            msg = f"{self._where} returned {got} vectors for {count} texts"
            raise BadLLMReply(msg)
        ordered = sorted(data, key=lambda item: item.index)
        vectors = [list(item.embedding) for item in ordered]
        if any(not vector or len(vector) != len(vectors[0]) for vector in vectors):
            msg = f"{self._where} returned empty vectors or vectors of different lengths"
            raise BadLLMReply(msg)
        return vectors

    async def answers(self) -> str | None:
        """Embed one word: ``None`` if the endpoint works, else what went wrong.

        For ``pacebot check --online``: reachable, key accepted, vectors returned.
        """
        try:
            vectors = await self.embed([PROBE_TEXT])
        except LLMError as exc:
            return str(exc)
        return None if vectors else f"{self._where} returned no vector"
