"""The deferred LLM: the real ``openai`` client is built on the first call, and only once."""

from __future__ import annotations

import asyncio
import json

from adapters.deferred_llm import DeferredLLM
from adapters.openai_llm import OpenAILLM
from bot.models import ChatMessage, Completion, ToolSpec
from fakes.openai_api import FakeLLMServer

MESSAGES = [ChatMessage("system", "你是小满。"), ChatMessage("user", "在吗？")]


def builder(server: FakeLLMServer, built: list[OpenAILLM]) -> DeferredLLM:
    """Return a deferred LLM whose builder records every client it makes."""

    def build() -> OpenAILLM:
        llm = OpenAILLM(
            base_url=server.base_url,
            api_key="sk-deferred-test-0123456789",
            model="test-model",
            temperature=0.5,
            timeout_s=5.0,
            max_retries=0,
            max_output_tokens=256,
        )
        built.append(llm)
        return llm

    return DeferredLLM(build)


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
