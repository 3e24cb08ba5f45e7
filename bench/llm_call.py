"""One LLM call: the event loop's time a chat completion takes, by the prompt's length.

The bot's side is ``OpenAILLM.complete``, as every batch calls it: the real ``openai``
SDK over real HTTP to the fake OpenAI-compatible server, which runs on an event loop of
its own in another thread. What a call costs the bot's loop is this thread's CPU time
from the call to its answer (``time.thread_time``): building the request, sending it,
reading and parsing the answer. Waiting for the server costs the loop nothing, and the
server's own work runs on the other thread, so neither counts.

The prompts are what a batch sends: the system prompt (persona, memories, the reply
contract: about 1,800 characters), then the chat's recent messages, 8, 32 or 64 in all.
While a call holds the loop, no message is read off a wire and no timer fires.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from adapters.openai_llm import OpenAILLM
from bench.dataset import CHAT_LINES
from bench.report import Figure, at_most
from bench.stats import Spread
from bot.models import ChatMessage
from fakes.openai_api import FakeLLMServer

SIZES = (8, 32, 64)
LOOP_TARGET_MS = 2.0  # docs/targets.md: a call of 32 messages holds the loop at most this
_SYSTEM = "你是小满，一个住在群里的朋友。说话简短，像真人一样分几条发。" * 60


def _prompt(size: int) -> list[ChatMessage]:
    """A system prompt and ``size - 1`` messages of chat, the chatters' with their names."""
    history = [
        ChatMessage("user", f"[user{n % 5}] {CHAT_LINES[n % len(CHAT_LINES)]}")
        if n % 3
        else ChatMessage("assistant", CHAT_LINES[(n * 7) % len(CHAT_LINES)])
        for n in range(size - 1)
    ]
    return [ChatMessage("system", _SYSTEM), *history]


@contextlib.contextmanager
def _server_beside() -> Iterator[FakeLLMServer]:
    """Serve the fake LLM on an event loop of its own, in a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-llm", daemon=True)
    thread.start()
    server = FakeLLMServer()
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result()
        try:
            yield server
        finally:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Time ``OpenAILLM.complete`` on this thread, for each prompt size."""
    calls = 20 if quick else 300
    figures = []
    with _server_beside() as server:
        async with OpenAILLM(
            base_url=server.base_url,
            api_key="bench-key",
            model="bench",
            temperature=0.8,
            timeout_s=10.0,
            max_retries=0,
            max_output_tokens=1024,
        ) as llm:
            for size in SIZES:
                messages = _prompt(size)
                for _ in range(5):  # connections opened, caches filled
                    await llm.complete(messages, json_mode=True)
                held = []
                for _ in range(calls):
                    started = time.thread_time()
                    await llm.complete(messages, json_mode=True)
                    held.append(time.thread_time() - started)
                target = at_most(LOOP_TARGET_MS) if size == 32 else None
                p50 = Spread.of(held).p50 * 1e3
                figures.append(Figure(f"llmcall.m{size}.loop_p50", p50, "ms", target=target))
    return figures
