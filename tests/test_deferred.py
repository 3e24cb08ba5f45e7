"""The deferred clients: the real ``openai`` client is built on the first call, and only once."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import TypeVar

from adapters.deferred import DeferredEmbedder, DeferredLLM
from adapters.openai_embeddings import OpenAIEmbedder
from adapters.openai_llm import OpenAILLM
from bot.models import ChatMessage, Completion, ToolSpec
from fakes.openai_api import FakeLLMServer

Client = TypeVar("Client")
KEY = "sk-deferred-test-0123456789"
MESSAGES = [ChatMessage("system", "你是小满。"), ChatMessage("user", "在吗？")]


def recording(build: Callable[[], Client], built: list[Client]) -> Callable[[], Client]:
    """Wrap ``build`` so that every client it makes is kept in ``built``."""

    def build_and_keep() -> Client:
        built.append(client := build())
        return client

    return build_and_keep


def builder(server: FakeLLMServer, built: list[OpenAILLM]) -> DeferredLLM:
    """Return a deferred LLM whose builder records every client it makes."""
    build = functools.partial(
        OpenAILLM,
        base_url=server.base_url,
        api_key=KEY,
        model="test-model",
        temperature=0.5,
        timeout_s=5.0,
        max_retries=0,
        max_output_tokens=256,
    )
    return DeferredLLM(recording(build, built))


async def test_nothing_is_built_until_the_first_call(llm: FakeLLMServer) -> None:
    """Making and closing a deferred LLM that was never asked builds no client, sends nothing."""
    built: list[OpenAILLM] = []
    deferred = builder(llm, built)

    await deferred.aclose()

    assert (deferred.loaded, built, llm.requests) == (False, [], [])


async def test_concurrent_first_calls_build_one_client(llm: FakeLLMServer) -> None:
    """Two batches asking at once share one client, and both get the model's answer."""
    llm.reply("一")
    llm.reply("二")
    built: list[OpenAILLM] = []
    deferred = builder(llm, built)

    answers = await asyncio.gather(
        deferred.complete(MESSAGES, json_mode=False), deferred.complete(MESSAGES, json_mode=False)
    )
    await deferred.aclose()

    assert sorted(answer.text for answer in answers) == ["一", "二"]
    assert answers[0] == Completion(text=answers[0].text, finish_reason="stop")
    assert (deferred.loaded, len(built), len(llm.requests)) == (True, 1, 2)


async def test_tools_reach_the_model_through_the_deferred_client(llm: FakeLLMServer) -> None:
    """The memory tool offered through the deferred LLM is sent, and the model's call read."""
    llm.call_tool("search_memory", {"query": "火锅"})
    tool = ToolSpec("search_memory", "Search this chat's memory.", '{"type": "object"}')
    deferred = builder(llm, [])

    answer = await deferred.complete(MESSAGES, json_mode=True, tools=[tool], tool_choice="auto")
    await deferred.aclose()

    [request] = llm.requests
    assert [offered["function"]["name"] for offered in request["tools"]] == ["search_memory"]
    assert request["tool_choice"] == "auto"
    assert [(call.name, json.loads(call.arguments)) for call in answer.tool_calls] == [
        ("search_memory", {"query": "火锅"})
    ]


def embedder_builder(server: FakeLLMServer, built: list[OpenAIEmbedder]) -> DeferredEmbedder:
    """Return a deferred embedder whose builder records every client it makes."""
    build = functools.partial(
        OpenAIEmbedder,
        base_url=server.base_url,
        api_key=KEY,
        model="test-embedding",
        timeout_s=5.0,
        max_retries=0,
    )
    return DeferredEmbedder("test-embedding", recording(build, built))


async def test_an_embedder_never_asked_builds_nothing(llm: FakeLLMServer) -> None:
    """Naming a deferred embedder's model and closing it builds no client and sends nothing."""
    built: list[OpenAIEmbedder] = []
    deferred = embedder_builder(llm, built)

    model = deferred.model
    await deferred.aclose()

    assert (model, deferred.loaded, built, llm.embedding_requests) == (
        "test-embedding",
        False,
        [],
        [],
    )


async def test_concurrent_first_embeddings_build_one_client(llm: FakeLLMServer) -> None:
    """Two first requests at once share one client, and each gets its vectors from the
    endpoint through the real SDK."""
    llm.embedding_dims = 8
    built: list[OpenAIEmbedder] = []
    deferred = embedder_builder(llm, built)

    first, second = await asyncio.gather(deferred.embed(["猫"]), deferred.embed(["狗", "鱼"]))
    await deferred.aclose()

    assert ([len(v) for v in first], [len(v) for v in second]) == ([8], [8, 8])
    sent = sorted((request["input"] for request in llm.embedding_requests), key=len)
    assert sent == [["猫"], ["狗", "鱼"]]
    assert (deferred.loaded, len(built)) == (True, 1)
