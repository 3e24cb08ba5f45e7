"""A local fake OpenAI-compatible server, scripted per test, for the real ``openai`` SDK.

::

    async with FakeLLMServer() as llm_server:
        llm_server.reply_json({"replies": [{"content": "hi", "send_delay_seconds": 0}]})
        llm_server.fail(429, retry_after=0.01)
        llm_server.hang(1.0)
        ...  # point OpenAILLM(base_url=llm_server.base_url, ...) at it
        await llm_server.wait_for_requests(3)
        assert llm_server.requests[0]["messages"][-1]["content"] == "..."

Each request to ``POST /v1/chat/completions`` takes the next scripted step (FIFO); once
the script is empty it is answered with ``default``. Every request body is recorded in
``requests`` (headers in ``request_headers``), whatever the answer. With ``api_key`` set,
a request carrying another key gets 401, as OpenAI answers; with ``refuse_json_mode``,
a request with ``response_format`` gets 400, as providers without JSON mode answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

DEFAULT_REPLY = json.dumps(
    {"replies": [{"content": "好的", "send_delay_seconds": 0}]}, ensure_ascii=False
)
"""What the server says when nothing is scripted: a valid one-message reply plan."""


@dataclass(frozen=True, slots=True)
class _Step:
    """One scripted answer: a completion, an HTTP error or a raw body, maybe after a wait."""

    status: int = 200
    content: str | None = None
    finish_reason: str = "stop"
    body: Any = None  # a raw JSON body (dict/list) or text (str) instead of a completion
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    use_default: bool = False


class FakeLLMServer:
    """Serve ``/v1/chat/completions`` on 127.0.0.1 with a scripted FIFO of answers."""

    def __init__(
        self,
        *,
        default: str | None = DEFAULT_REPLY,
        model: str | None = None,
        api_key: str | None = None,
        refuse_json_mode: bool = False,
    ) -> None:
        self.default = default
        """Content of the answer when the script is empty."""
        self.model = model
        """Model name in answers; ``None`` echoes the requested one."""
        self.api_key = api_key
        """The only key accepted; ``None`` accepts any."""
        self.refuse_json_mode = refuse_json_mode
        """Answer 400 to every request that sets ``response_format``."""
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self._script: deque[_Step] = deque()
        self._ids = itertools.count(1)
        self._arrived = asyncio.Condition()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- scripting -------------------------------------------------------------------

    def reply(self, content: str | None, *, finish_reason: str = "stop") -> None:
        """Answer the next request with this message content (``None`` = null content)."""
        self._script.append(_Step(content=content, finish_reason=finish_reason))

    def reply_json(self, obj: Any, *, finish_reason: str = "stop") -> None:
        """Answer the next request with ``obj`` serialised as the message content."""
        self.reply(json.dumps(obj, ensure_ascii=False), finish_reason=finish_reason)

    def fail(self, status: int, *, retry_after: float | None = None, body: Any = None) -> None:
        """Answer the next request with an HTTP error (OpenAI-style error body by default).

        ``retry_after`` (seconds) sets ``retry-after`` and ``retry-after-ms``, which the
        SDK honours, so a retry in a test takes milliseconds instead of its 0.5 s backoff.
        """
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
            headers["retry-after-ms"] = f"{retry_after * 1000:g}"
        if body is None:
            body = {
                "error": {
                    "message": f"fake error {status}",
                    "type": "rate_limit_exceeded" if status == 429 else "server_error",
                    "param": None,
                    "code": None,
                }
            }
        self._script.append(_Step(status=status, body=body, headers=headers))

    def respond(self, body: Any, *, status: int = 200) -> None:
        """Answer the next request with an arbitrary body: a dict/list as JSON, a str as text."""
        self._script.append(_Step(status=status, body=body))

    def hang(self, seconds: float, *, content: str | None = None) -> None:
        """Wait ``seconds`` before answering the next request (with ``content`` or default).

        The wait ends early when the server closes, so a timed-out test never lingers.
        """
        self._script.append(_Step(content=content, delay_s=seconds, use_default=content is None))

    def image_urls(self, index: int = -1) -> list[str]:
        """Return the image URLs of one recorded request (the last by default), in order."""
        urls: list[str] = []
        for message in self.requests[index].get("messages", []):
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    urls.append(part["image_url"]["url"])
        return urls

    @property
    def pending(self) -> int:
        """How many scripted answers have not been used yet."""
        return len(self._script)

    # --- lifecycle -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL to give the SDK, e.g. ``http://127.0.0.1:43817/v1``."""
        if self._port is None:
            raise RuntimeError("FakeLLMServer is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self, *, port: int = 0) -> None:
        """Listen on 127.0.0.1: a free port, or ``port`` (to come back after ``close()``)."""
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        self._runner = runner
        self._port = runner.addresses[0][1]

    async def close(self) -> None:
        """Stop listening and end any hanging answers."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def wait_for_requests(
        self,
        n: int,
        timeout: float = 2.0,  # noqa: ASYNC109 - a one-liner for tests beats a with-block
    ) -> list[dict[str, Any]]:
        """Wait until at least ``n`` requests have arrived; return all recorded so far."""
        try:
            async with asyncio.timeout(timeout), self._arrived:
                await self._arrived.wait_for(lambda: len(self.requests) >= n)
        except TimeoutError:
            msg = f"expected {n} requests within {timeout} s, got {len(self.requests)}"
            raise TimeoutError(msg) from None
        return list(self.requests)

    # --- the endpoint ----------------------------------------------------------------

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        async with self._arrived:
            self.requests.append(body)
            self.request_headers.append(dict(request.headers))
            self._arrived.notify_all()
        refusal = self._refusal(body, request.headers.get("Authorization", ""))
        if refusal is not None:
            status, message = refusal
            error = {"message": message, "type": "invalid_request_error", "param": None}
            return web.json_response({"error": error}, status=status)
        step = self._script.popleft() if self._script else _Step(use_default=True)
        if step.delay_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), step.delay_s)
        if step.body is not None:
            if isinstance(step.body, str):
                return web.Response(status=step.status, text=step.body, headers=step.headers)
            return web.json_response(step.body, status=step.status, headers=step.headers)
        content = self.default if step.use_default else step.content
        return web.json_response(self._completion(body, content, step.finish_reason))

    def _refusal(self, body: dict[str, Any], authorization: str) -> tuple[int, str] | None:
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return 401, "Incorrect API key provided."
        if self.refuse_json_mode and "response_format" in body:
            return 400, "response_format is not supported by this model"
        return None

    def _completion(
        self, request: dict[str, Any], content: str | None, finish_reason: str
    ) -> dict[str, Any]:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = len(content or "") // 4
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or request.get("model", "fake-model"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
