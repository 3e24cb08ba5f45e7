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
a request carrying another key gets 401, as OpenAI answers (on both endpoints); with
``refuse_json_mode``, a request with ``response_format`` gets 400, as providers without
JSON mode answer. A step may be a call of a tool (``call_tool``), several at once
(``call_tools``), or a content made of parts (``reply_parts``); ``refuse_tools`` makes
every request that offers tools a 400.
``before_answer``, if set, is awaited with each chat request's body before it is
answered: a test can hold one request until another arrives, or answer them out of order.

``POST /v1/audio/transcriptions`` records each multipart upload (its file name, type,
bytes and fields) in ``transcriptions`` and answers ``transcript`` (as text, or as
``{"text": ...}`` for ``response_format = json``), refusing as OpenAI does a file whose
name or bytes are not audio of a format it takes; ``POST /v1/audio/speech`` records each
body in ``speech_requests`` and answers real audio of the asked format (Ogg/Opus, WAV or MP3
silence from :mod:`fakes.audio`, a fifth of a second per character). Each has a script
of its own (``transcription_fail``/``_hang``/``_respond``, ``speech_fail``/``_respond``);
``audio_endpoints = False`` answers both 404, as a provider without audio endpoints.

Each completion reports ``usage`` as OpenAI does (``prompt_tokens``, ``completion_tokens``,
``total_tokens``), counted from the request and the answer; ``report_usage = False`` plays
a provider that leaves it out, and :meth:`reported_tokens` adds up what was reported.

``POST /v1/embeddings`` has a script of its own (``embeddings_fail``,
``embeddings_hang``) and records its bodies in ``embedding_requests``. Unscripted, it
embeds each text deterministically: every word (a run of Latin letters, or one Han
character; numbers, as in the dates every summary holds, are left out) counts on one of
``embedding_dims`` axes, picked by a stable hash; the words of a ``synonyms`` group
(found anywhere in the text) share one axis — so "hotpot" can mean 火锅 in a test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import struct
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from fakes import audio

DEFAULT_REPLY = json.dumps(
    {"replies": [{"content": "好的", "send_delay_seconds": 0}]}, ensure_ascii=False
)
"""What the server says when nothing is scripted: a valid one-message reply plan."""
DEFAULT_TRANSCRIPT = "你听听这个，我今天面试过了"
"""What every voice note says when nothing else is scripted."""
TRANSCRIBED_FORMATS = frozenset({"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"})
"""The file endings OpenAI's transcription endpoint takes (``oga`` is not one)."""
_AUDIO_MAGIC = (b"OggS", b"ID3", b"\xff\xfb", b"\xff\xf3", b"RIFF", b"fLaC")


@dataclass(frozen=True, slots=True)
class Upload:
    """One file uploaded for transcription, and the form's other fields."""

    filename: str
    content_type: str
    data: bytes
    fields: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Step:
    """One scripted answer: a completion, an HTTP error or a raw body, maybe after a wait."""

    status: int = 200
    content: str | list[dict[str, Any]] | None = None  # a list: the content as parts
    finish_reason: str = "stop"
    body: Any = None  # a raw JSON body (dict/list) or text (str) instead of a completion
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    use_default: bool = False
    tool_calls: tuple[dict[str, Any], ...] = ()


class FakeLLMServer:
    """Serve ``/v1/chat/completions`` on 127.0.0.1 with a scripted FIFO of answers."""

    def __init__(
        self,
        *,
        default: str | None = DEFAULT_REPLY,
        model: str | None = None,
        api_key: str | None = None,
        refuse_json_mode: bool = False,
        embedding_dims: int = 2048,
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
        self.request_times: list[float] = []
        """When each chat request arrived (the event loop's clock), in order."""
        self.completions: list[dict[str, Any]] = []
        """The chat completions answered, in order (scripted errors are not among them)."""
        self.request_headers: list[dict[str, str]] = []
        self.embedding_dims = embedding_dims
        self.embedding_requests: list[dict[str, Any]] = []
        self.tools_refused = False
        """Answer 400 to every chat request that offers tools."""
        self.report_usage = True
        """Put ``usage`` in each completion, as OpenAI does; some providers leave it out."""
        self.before_answer: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Awaited with each chat request's body before it takes its scripted step."""
        self.transcript = DEFAULT_TRANSCRIPT
        """What an unscripted transcription answers."""
        self.transcriptions: list[Upload] = []
        self.speech_requests: list[dict[str, Any]] = []
        self.audio_endpoints = True
        """``False``: both audio endpoints answer 404, as a provider without them."""
        self._transcription_script: deque[_Step] = deque()
        self._speech_script: deque[_Step] = deque()
        self._axes: dict[str, int] = {}
        self._script: deque[_Step] = deque()
        self._embedding_script: deque[_Step] = deque()
        self._ids = itertools.count(1)
        self._arrived = asyncio.Condition()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- scripting -------------------------------------------------------------------

    def reply(self, content: str | None, *, finish_reason: str = "stop") -> None:
        """Answer the next request with this message content (``None`` = null content)."""
        self._script.append(_Step(content=content, finish_reason=finish_reason))

    def reply_parts(self, *parts: dict[str, Any]) -> None:
        """Answer the next request with the content as a list of parts, as some providers do.

        E.g. ``{"type": "thinking", "thinking": [...]}, {"type": "text", "text": "{...}"}``
        (Mistral's reasoning models).
        """
        self._script.append(_Step(content=list(parts)))

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

    def call_tool(self, name: str, arguments: Any, *, content: str | None = None) -> None:
        """Answer the next request with one call of ``name`` (``arguments`` as JSON)."""
        self.call_tools((name, arguments), content=content)

    def call_tools(self, *calls: tuple[str, Any], content: str | None = None) -> None:
        """Answer the next request with several calls at once, each ``(name, arguments)``."""
        step = len(self._script)
        made = tuple(
            {
                "id": f"call_{step}_{name}" if not position else f"call_{step}_{position}_{name}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for position, (name, arguments) in enumerate(calls)
        )
        self._script.append(_Step(content=content, finish_reason="tool_calls", tool_calls=made))

    def refuse_tools(self) -> None:
        """Answer 400 to every chat request that offers ``tools`` from now on."""
        self.tools_refused = True

    def synonyms(self, *words: str) -> None:
        """Make these words count on one axis of the fake embeddings."""
        axis = zlib.crc32(words[0].lower().encode()) % self.embedding_dims
        for word in words:
            self._axes[word.lower()] = axis

    def embeddings_fail(self, status: int) -> None:
        """Answer the next embeddings request with an HTTP error."""
        body = {"error": {"message": f"fake error {status}", "type": "server_error"}}
        self._embedding_script.append(_Step(status=status, body=body))

    def embeddings_hang(self, seconds: float) -> None:
        """Wait ``seconds`` before answering the next embeddings request."""
        self._embedding_script.append(_Step(delay_s=seconds, use_default=True))

    def embed(self, text: str) -> list[float]:
        """Return the fake vector of ``text``."""
        vector = [0.0] * self.embedding_dims
        text = text.lower()
        for word, axis in self._axes.items():  # a synonym counts wherever it stands
            vector[axis] += text.count(word)
            text = text.replace(word, " ")
        for word in re.findall(r"[a-z]+|[\u4e00-\u9fff]", text):
            axis = self._axes.get(word, zlib.crc32(word.encode()) % self.embedding_dims)
            vector[axis] += 1.0
        return vector

    def transcription_fail(self, status: int) -> None:
        """Answer the next transcription with an HTTP error."""
        body = {"error": {"message": f"fake error {status}", "type": "server_error"}}
        self._transcription_script.append(_Step(status=status, body=body))

    def transcription_hang(self, seconds: float, *, text: str | None = None) -> None:
        """Wait ``seconds`` before answering the next transcription."""
        self._transcription_script.append(
            _Step(delay_s=seconds, content=text, use_default=text is None)
        )

    def transcription_respond(self, text: str) -> None:
        """Answer the next transcription with ``text``."""
        self._transcription_script.append(_Step(content=text))

    def speech_fail(self, status: int) -> None:
        """Answer the next speech request with an HTTP error."""
        body = {"error": {"message": f"fake error {status}", "type": "server_error"}}
        self._speech_script.append(_Step(status=status, body=body))

    def speech_respond(self, body: str, *, status: int = 200) -> None:
        """Answer the next speech request with ``body`` as an HTML page (a proxy's)."""
        self._speech_script.append(_Step(status=status, body=body))

    async def wait_for_transcriptions(
        self,
        n: int,
        timeout: float = 2.0,  # noqa: ASYNC109 - a one-liner for tests beats a with-block
    ) -> list[Upload]:
        """Wait until at least ``n`` uploads for transcription have arrived; return them."""
        await self._wait_until(self.transcriptions, n, "transcriptions", timeout)
        return list(self.transcriptions)

    def reported_tokens(self) -> tuple[int, int]:
        """Return the prompt and completion tokens of every completion's ``usage``, summed."""
        usages = [c["usage"] for c in self.completions if "usage" in c]
        return (
            sum(u["prompt_tokens"] for u in usages),
            sum(u["completion_tokens"] for u in usages),
        )

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
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/audio/speech", self._speech)
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
        await self._wait_until(self.requests, n, "requests", timeout)
        return list(self.requests)

    async def _wait_until(self, records: list[Any], n: int, what: str, timeout_s: float) -> None:
        """Wait until ``records`` holds at least ``n``; fail naming ``what`` after ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s), self._arrived:
                await self._arrived.wait_for(lambda: len(records) >= n)
        except TimeoutError:
            msg = f"expected {n} {what} within {timeout_s} s, got {len(records)}"
            raise TimeoutError(msg) from None

    # --- the endpoint ----------------------------------------------------------------

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        async with self._arrived:
            self.requests.append(body)
            self.request_times.append(asyncio.get_running_loop().time())
            self.request_headers.append(dict(request.headers))
            self._arrived.notify_all()
        refusal = self._refusal(body, request.headers.get("Authorization", ""))
        if refusal is not None:
            return refusal
        if self.before_answer is not None:
            await self.before_answer(body)
        step = self._script.popleft() if self._script else _Step(use_default=True)
        if step.delay_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), step.delay_s)
        if step.body is not None:
            if isinstance(step.body, str):
                return web.Response(status=step.status, text=step.body, headers=step.headers)
            return web.json_response(step.body, status=step.status, headers=step.headers)
        content = self.default if step.use_default else step.content
        completion = self._completion(body, content, step.finish_reason, tool_calls=step.tool_calls)
        self.completions.append(completion)
        return web.json_response(completion)

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        async with self._arrived:
            self.embedding_requests.append(body)
            self._arrived.notify_all()
        refusal = self._refusal(body, request.headers.get("Authorization", ""))
        if refusal is not None:
            return refusal
        step = self._embedding_script.popleft() if self._embedding_script else _Step()
        if step.delay_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), step.delay_s)
        if step.body is not None:
            return web.json_response(step.body, status=step.status)
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = self.embed(str(text))
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append(
                {
                    "object": "embedding",
                    "index": index,
                    "embedding": packed if as_base64 else vector,
                }
            )
        tokens = sum(len(str(text)) for text in texts) // 4
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embeddings"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        fields = {name: value for name, value in form.items() if isinstance(value, str)}
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _invalid("'file' is a required property", "file")
        heard = Upload(upload.filename, upload.content_type, upload.file.read(), fields)
        refusal = await self._audio_arrived(self.transcriptions, heard, request)
        if refusal is not None:
            return refusal
        step = self._transcription_script.popleft() if self._transcription_script else None
        step = step or _Step(use_default=True)
        if step.delay_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), step.delay_s)
        if step.body is not None:
            return web.json_response(step.body, status=step.status)
        extension = heard.filename.rsplit(".", 1)[-1].lower()
        if extension not in TRANSCRIBED_FORMATS:
            return _invalid(f"Unsupported file format {extension}", "file")
        if not heard.data.startswith(_AUDIO_MAGIC):
            return _invalid("Audio file might be corrupted or unsupported", "file")
        text = self.transcript if step.use_default else str(step.content)
        if fields.get("response_format") == "text":
            return web.Response(text=text + "\n", content_type="text/plain")
        return web.json_response({"text": text})

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        refusal = await self._audio_arrived(self.speech_requests, body, request)
        if refusal is not None:
            return refusal
        step = self._speech_script.popleft() if self._speech_script else None
        if step is not None and isinstance(step.body, str):
            return web.Response(status=step.status, text=step.body, content_type="text/html")
        if step is not None:
            return web.json_response(step.body, status=step.status)
        seconds = max(0.2, len(str(body.get("input", ""))) / 5)
        if body.get("response_format") == "opus":
            return web.Response(body=audio.ogg_opus(seconds), content_type="audio/ogg")
        if body.get("response_format") == "wav":
            return web.Response(body=audio.wav(seconds), content_type="audio/wav")
        return web.Response(body=audio.mp3(seconds), content_type="audio/mpeg")

    async def _audio_arrived(
        self, records: list[Any], record: Any, request: web.Request
    ) -> web.Response | None:
        """Record an audio request; answer 404 for a provider without audio endpoints, or
        as a wrong key is answered; ``None`` if it goes on."""
        records.append(record)
        async with self._arrived:
            self._arrived.notify_all()
        if not self.audio_endpoints:
            error = {"message": f"Not found: {request.path}", "type": "not_found"}
            return web.json_response({"error": error}, status=404)
        return self._refusal({}, request.headers.get("Authorization", ""))

    def _refusal(self, body: dict[str, Any], authorization: str) -> web.Response | None:
        """Answer as a provider refuses a bad key, JSON mode or tools; ``None`` if it would not."""
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            status, message, param = 401, "Incorrect API key provided.", None
        elif self.refuse_json_mode and "response_format" in body:
            status, message, param = 400, "response_format is not supported by this model", None
        elif self.tools_refused and body.get("tools"):
            status, message, param = 400, "tools are not supported", "tools"
        else:
            return None
        error = {"message": message, "type": "invalid_request_error", "param": param}
        return web.json_response({"error": error}, status=status)

    def _completion(
        self,
        request: dict[str, Any],
        content: str | list[dict[str, Any]] | None,
        finish_reason: str,
        *,
        tool_calls: tuple[dict[str, Any], ...] = (),
    ) -> dict[str, Any]:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = len(content if isinstance(content, str) else str(content or "")) // 4
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or request.get("model", "fake-model"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": None,
                        **({"tool_calls": list(tool_calls)} if tool_calls else {}),
                    },
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            **({"usage": usage} if self.report_usage else {}),
        }


def _invalid(message: str, param: str) -> web.Response:
    """Answer 400 as OpenAI answers a request it cannot take."""
    error = {"message": message, "type": "invalid_request_error", "param": param}
    return web.json_response({"error": error}, status=400)
