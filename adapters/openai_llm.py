"""Talk to any OpenAI-compatible chat model through the official ``openai`` SDK.

:class:`OpenAILLM` implements :class:`bot.ports.LLM`. The SDK does the retries with
backoff (honouring ``Retry-After``); what is left after them is translated into
``LLMUnavailable``, an answer without choices into ``BadLLMReply``. No error text or log
line carries the API key.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx2
import openai
from loguru import logger
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionContentPartParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from bot.config.model import LLMConfig
from bot.errors import BadLLMReply, ConfigError, ImagesRefused, LLMError, LLMUnavailable
from bot.models import ChatMessage, Completion, ToolCall, ToolSpec
from bot.replies.parse import strip_reasoning

SPLITTER_TEMPERATURE = 0.2
"""The splitter reformats text; it should not be creative."""

_DETAIL_CHARS = 200
_KEYISH_RE = re.compile(r"\b(?:sk|pk|rk|key)-[A-Za-z0-9_*.\-]{6,}|(?i:bearer)\s+\S+")


class SdkClient:
    """Own one ``openai.AsyncOpenAI`` client: close it on ``aclose`` or leaving ``async with``.

    The key is kept to scrub it from error texts (see :func:`unavailable`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout_s: float,
        max_retries: int,
        http_client: httpx2.AsyncClient | None,
        empty_key: str,
    ) -> None:
        """``empty_key`` is the ``ConfigError`` raised for an empty ``api_key``: no client
        is ever built without a key."""
        if not api_key.strip():
            raise ConfigError(empty_key)
        self._api_key = api_key
        self._client = openai.AsyncOpenAI(
            base_url=base_url or None,
            api_key=api_key,
            timeout=timeout_s,
            max_retries=max_retries,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class OpenAILLM(SdkClient):
    """An OpenAI-compatible chat model behind the real ``openai.AsyncOpenAI`` client."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        temperature: float,
        timeout_s: float,
        max_retries: int,
        max_output_tokens: int,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            http_client=http_client,
            empty_key=f"llm: the API key for model {model!r} is empty",
        )
        self._model = model
        self._temperature: float | None = temperature
        self._max_output_tokens = max_output_tokens
        # Most OpenAI-compatible servers know only max_tokens; OpenAI's reasoning models
        # reject it and want max_completion_tokens. Start with the former, switch once.
        self._tokens_param = "max_tokens"
        # A provider that answers 400 to a request with tools is asked again without them;
        # from then on they are never offered to it (and that is logged once).
        self._tools_refused = False
        self._endpoint = endpoint_name(base_url)

    @classmethod
    def from_config(cls, llm: LLMConfig, *, api_key: str) -> Self:
        """Build the main chat model from ``[llm]``."""
        return cls(
            base_url=llm.base_url,
            api_key=api_key,
            model=llm.model,
            temperature=llm.temperature,
            timeout_s=llm.timeout_s,
            max_retries=llm.max_retries,
            max_output_tokens=llm.max_output_tokens,
        )

    @classmethod
    def splitter_from_config(cls, llm: LLMConfig, *, api_key: str) -> Self:
        """Build the splitter from ``[llm.splitter]``, each empty field taken from ``[llm]``.

        The caller resolves the key from ``splitter.api_key_env or api_key_env``. The
        splitter re-emits the whole draft wrapped in JSON, so it gets twice the tokens.
        """
        splitter = llm.splitter
        return cls(
            base_url=splitter.base_url or llm.base_url,
            api_key=api_key,
            model=splitter.model or llm.model,
            temperature=SPLITTER_TEMPERATURE,
            timeout_s=llm.timeout_s,
            max_retries=llm.max_retries,
            max_output_tokens=2 * llm.max_output_tokens,
        )

    @property
    def model(self) -> str:
        return self._model

    @property
    def tools_refused(self) -> bool:
        """Whether this provider answered 400 to a request with tools (they are off since)."""
        return self._tools_refused

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_mode: bool,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Return the model's answer; raise ``LLMUnavailable`` or ``BadLLMReply``."""
        params = [_message_param(message) for message in messages]
        with_images = any(message.images for message in messages)
        loop = asyncio.get_running_loop()
        started = loop.time()
        tool_params = [_tool_param(tool) for tool in tools]
        request = _Request(params, json_mode, tool_params, tool_choice, with_images=with_images)
        response = await self._call(request)
        latency_ms = (loop.time() - started) * 1000
        # Compatible servers send odd bodies; the SDK does not validate them.
        choices = response.choices if isinstance(response, ChatCompletion) else None
        if not choices:
            msg = f"LLM {self._model} at {self._endpoint} returned no choices"
            raise BadLLMReply(msg)
        choice = choices[0]
        usage = response.usage if isinstance(response, ChatCompletion) else None
        logger.debug(
            "llm {} answered in {:.0f} ms: finish={} tokens prompt={} completion={}",
            self._model,
            latency_ms,
            choice.finish_reason,
            usage.prompt_tokens if usage else "?",
            usage.completion_tokens if usage else "?",
        )
        message = choice.message
        text = strip_reasoning(message_text(message.content if message is not None else None))
        return Completion(
            text=text,
            finish_reason=choice.finish_reason,
            tool_calls=_tool_calls(message) if request.tools else (),
            model=self._model,
            latency_ms=latency_ms,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    async def _call(self, request: _Request) -> object:
        """Send the request, again if the model refused a parameter we can drop.

        A 400 to a request with pictures is ``ImagesRefused``: many models and compatible
        servers answer image input that way, and the caller asks again without them
        (tools are dropped only when a request without pictures is refused). Errors are
        raised outside the ``except`` blocks so that no chained SDK error, whose text may
        echo the key, rides along.
        """
        failure: LLMError | None = None
        for _ in range(4):  # as configured, then at most one change per refused parameter
            try:
                return await self._create(request)
            except openai.BadRequestError as exc:
                if self._adapt_to(exc):
                    continue
                failure = self._unavailable(exc)
                if request.with_images:
                    failure = ImagesRefused(str(failure))
                elif self._drop_tools(request):
                    continue
            except openai.OpenAIError as exc:
                failure = self._translate(exc)
            break
        if failure is None:
            msg = f"LLM {self._model} at {self._endpoint} refused every parameter change"
            failure = LLMUnavailable(msg)
        raise failure

    async def _create(self, request: _Request) -> object:
        """Post the chat completion as ``chat.completions.create`` would, without its
        transform of the body.

        ``create`` walks every message through the SDK's type-driven transform (for
        aliases and formats that chat parameters do not have), once per member of each
        union type: 1 ms more of the event loop for a prompt of 8 messages, 4 ms for 32,
        8 ms for 64, on every call (docs/benchmarks.md, "One LLM call"). Posted as it is,
        in ``create``'s order of keys, the body on the wire is the same bytes, with the
        same key and the client's retries and timeout.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": request.messages,
            self._tokens_param: self._max_output_tokens,
        }
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if request.tools and not self._tools_refused:
            body["tool_choice"] = request.tool_choice
            body["tools"] = request.tools
        return await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            options={"security": {"bearer_auth": True}},  # the key only, as ``create`` sends
        )

    def _drop_tools(self, request: _Request) -> bool:
        """After a 400 to a request with tools, stop offering them; tell whether to retry."""
        if not request.tools or self._tools_refused:
            return False
        self._tools_refused = True
        logger.warning(
            "llm {} refused a request with tools (HTTP 400); asking again without them, and"
            " no tool is offered to this model again in this run (set llm.memory_tool = false"
            " and [tools] enabled = false)",
            self._model,
        )
        return True

    def _adapt_to(self, exc: openai.BadRequestError) -> bool:
        """Drop a parameter this model refuses (once each); tell whether to try again."""
        text = f"{exc.param or ''} {exc.message}"
        if self._tokens_param == "max_tokens" and (
            exc.param == "max_tokens" or "max_completion_tokens" in text
        ):
            self._tokens_param = "max_completion_tokens"
            logger.warning("llm {} refuses max_tokens; using max_completion_tokens", self._model)
            return True
        if self._temperature is not None and exc.param == "temperature":
            self._temperature = None
            logger.warning("llm {} refuses temperature; using its default", self._model)
            return True
        return False

    def _translate(self, exc: openai.OpenAIError) -> LLMUnavailable | BadLLMReply:
        if isinstance(exc, openai.APIResponseValidationError):
            msg = f"LLM {self._model} at {self._endpoint} sent a malformed response"
            return BadLLMReply(msg)
        return self._unavailable(exc)

    def _unavailable(self, exc: openai.OpenAIError) -> LLMUnavailable:
        return unavailable(
            exc, where=f"LLM {self._model} at {self._endpoint}", secret=self._api_key
        )


def unavailable(exc: openai.OpenAIError, *, where: str, secret: str) -> LLMUnavailable:
    """Say what went wrong with a request to ``where``, never echoing ``secret``."""
    if isinstance(exc, openai.APITimeoutError):
        msg = f"{where}: request timed out"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        msg = f"{where}: connection failed{redact(reason, secret)}"
    elif isinstance(exc, openai.APIStatusError):
        kind = _status_kind(exc.status_code)
        msg = f"{where}: HTTP {exc.status_code} {kind}: {redact(_detail(exc), secret)}"
    else:
        msg = f"{where}: {type(exc).__name__}: {redact(str(exc), secret)}"
    return LLMUnavailable(msg)


def redact(text: str, secret: str) -> str:
    """Blank ``secret`` and anything shaped like a key out of ``text``, and keep it short."""
    if len(secret) >= 4:
        text = text.replace(secret, "***")
    text = _KEYISH_RE.sub("***", text)
    if len(text) > _DETAIL_CHARS:
        text = text[:_DETAIL_CHARS] + "…"
    return text


def endpoint_name(base_url: str) -> str:
    """Name the server without any credentials a URL might carry."""
    if not base_url:
        return "the default endpoint"
    parts = urlsplit(base_url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}:{parts.port}" if parts.port else f"{parts.scheme}://{host}"


@dataclass(frozen=True, slots=True)
class _Request:
    """One chat-completion request before the parameters this model refuses are dropped."""

    messages: list[ChatCompletionMessageParam]
    json_mode: bool
    tools: list[ChatCompletionToolParam]
    tool_choice: str
    with_images: bool = False


def _tool_param(tool: ToolSpec) -> ChatCompletionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": json.loads(tool.parameters),
        },
    }


def message_text(content: object) -> str:
    """Return the text of an answer's ``message.content``: a string, or its text parts.

    Some providers (Mistral's reasoning models among them) send the content as a list of
    parts, e.g. ``[{"type": "thinking", ...}, {"type": "text", "text": "{...}"}]``: the
    text parts, joined in order, are the answer; thinking and other parts are not.
    Anything else (``None``, an odd body) reads as no text.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type", "text") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "".join(texts)


def _tool_calls(message: ChatCompletionMessage | None) -> tuple[ToolCall, ...]:
    """Return the function calls of an answer; other kinds of tool call are skipped."""
    calls = message.tool_calls if message is not None else None
    if not isinstance(calls, list):
        return ()
    found = []
    for call in calls:
        function = getattr(call, "function", None)
        if function is not None and isinstance(function.name, str):
            arguments = function.arguments if isinstance(function.arguments, str) else "{}"
            found.append(ToolCall(str(call.id), function.name, arguments))
    return tuple(found)


def _message_param(message: ChatMessage) -> ChatCompletionMessageParam:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user" and message.images:
        parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": message.content}]
        for image in message.images:
            parts.append({"type": "text", "text": image.label})
            parts.append({"type": "image_url", "image_url": {"url": image.jpeg.data_url}})
        return {"role": "user", "content": parts}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    if message.role == "assistant":
        return {"role": "assistant", "content": message.content}
    if message.role == "tool" and message.tool_call_id is not None:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    msg = f"unknown chat message role {message.role!r}; use system, user, assistant or tool"
    raise ValueError(msg)


def _status_kind(status: int) -> str:
    kinds = {
        400: "bad request",
        401: "unauthorized (check the API key)",
        403: "forbidden",
        404: "not found (check base_url and model)",
        408: "request timeout",
        409: "conflict",
        422: "unprocessable",
        429: "rate limited",
    }
    return kinds.get(status, "server error" if status >= 500 else "error")


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return exc.message
