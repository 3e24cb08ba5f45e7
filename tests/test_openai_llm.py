"""The OpenAI client: the real ``openai`` SDK against a local fake server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from adapters.openai_llm import SPLITTER_TEMPERATURE, OpenAILLM, message_text
from bot.config.model import LLMConfig, SplitterConfig
from bot.errors import BadLLMReply, ConfigError, LLMUnavailable
from bot.models import ChatMessage, Completion
from bot.replies.items import Text
from bot.replies.plan import parse_replies
from fakes.openai_api import DEFAULT_REPLY, FakeLLMServer
from tests.log_capture import captured_logs

API_KEY = "sk-test-S3CRET-0123456789abcdef"
MESSAGES = [ChatMessage("system", "你是小满。{persona} 100%"), ChatMessage("user", "在吗？")]


@pytest.fixture
async def server() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer() as fake:
        yield fake


def make_llm(
    base_url: str, *, timeout_s: float = 5.0, max_retries: int = 0, model: str = "test-model"
) -> OpenAILLM:
    return OpenAILLM(
        base_url=base_url,
        api_key=API_KEY,
        model=model,
        temperature=0.5,
        timeout_s=timeout_s,
        max_retries=max_retries,
        max_output_tokens=256,
    )


@pytest.fixture
async def llm(server: FakeLLMServer) -> AsyncIterator[OpenAILLM]:
    async with make_llm(server.base_url) as client:
        yield client


async def test_valid_reply_and_json_mode(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A JSON-mode call returns the content and asks for response_format json_object."""
    server.reply_json({"replies": [{"content": "在的", "send_delay_seconds": 0}]})
    completion = await llm.complete(MESSAGES, json_mode=True)
    expected_text = json.dumps(
        {"replies": [{"content": "在的", "send_delay_seconds": 0}]}, ensure_ascii=False
    )
    assert completion == Completion(text=expected_text, finish_reason="stop")
    assert server.requests[0]["response_format"] == {"type": "json_object"}


async def test_json_mode_off_omits_response_format(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """Without json_mode no response_format is sent at all."""
    await llm.complete(MESSAGES, json_mode=False)
    assert server.requests[0].get("response_format", "absent") == "absent"


async def test_request_carries_model_messages_and_limits(
    server: FakeLLMServer, llm: OpenAILLM
) -> None:
    """The model, the messages verbatim, temperature and max_tokens reach the server."""
    await llm.complete(MESSAGES, json_mode=True)
    body = server.requests[0]
    actual = {key: body.get(key) for key in ("model", "messages", "temperature", "max_tokens")}
    assert actual == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "你是小满。{persona} 100%"},
            {"role": "user", "content": "在吗？"},
        ],
        "temperature": 0.5,
        "max_tokens": 256,
    }


async def test_key_sent_as_bearer_token(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """The API key travels in the Authorization header, nowhere in the body."""
    await llm.complete(MESSAGES, json_mode=True)
    headers = {k.lower(): v for k, v in server.request_headers[0].items()}
    body_text = json.dumps(server.requests[0])
    assert (headers["authorization"], API_KEY in body_text) == (f"Bearer {API_KEY}", False)


async def test_default_answer_is_a_valid_plan(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """With an empty script the fake answers its default, a valid one-message plan."""
    completion = await llm.complete(MESSAGES, json_mode=True)
    plan = parse_replies(completion.text, finish_reason=completion.finish_reason, max_delay_s=5)
    assert (completion.text, [r.item for r in plan.replies]) == (DEFAULT_REPLY, [Text("好的")])


async def test_finish_reason_length_passed_through(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A cut-off answer comes back with finish_reason "length" for the parser to reject."""
    server.reply('{"replies": [{"content": "我想说的是', finish_reason="length")
    completion = await llm.complete(MESSAGES, json_mode=True)
    assert completion == Completion('{"replies": [{"content": "我想说的是', "length")


async def test_null_content_becomes_empty_text(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A message with null content is returned as empty text, not None."""
    server.reply(None)
    assert await llm.complete(MESSAGES, json_mode=True) == Completion("", "stop")


async def test_reasoning_block_is_stripped(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A leading <think> block of a reasoning model never reaches the caller."""
    server.reply('<think>先想想 {"replies": []}</think>\n{"replies": []}')
    assert await llm.complete(MESSAGES, json_mode=True) == Completion('{"replies": []}', "stop")


PLAN = '{"replies": [{"content": "在的", "send_delay_seconds": 0}]}'


async def test_content_as_a_list_of_parts_is_read_from_its_text_parts(
    server: FakeLLMServer, llm: OpenAILLM
) -> None:
    """A message content of thinking and text parts (Mistral's reasoning models) is its text."""
    server.reply_parts(
        {"type": "thinking", "thinking": [{"type": "text", "text": "The user asks if I am here."}]},
        {"type": "text", "text": PLAN},
    )
    completion = await llm.complete(MESSAGES, json_mode=True)
    plan = parse_replies(completion.text, finish_reason="stop", max_delay_s=5.0)
    assert (completion, [reply.item for reply in plan.replies]) == (
        Completion(PLAN, "stop"),
        [Text("在的")],
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(PLAN, PLAN, id="a string"),
        pytest.param(None, "", id="null"),
        pytest.param(
            [{"type": "text", "text": '{"replies": ['}, {"type": "text", "text": "]}"}],
            '{"replies": []}',
            id="text parts joined in order",
        ),
        pytest.param([{"text": "hi"}], "hi", id="a part without a type"),
        pytest.param(
            [{"type": "thinking", "thinking": "hm"}, {"type": "image_url"}, "stray", 3],
            "",
            id="no text part",
        ),
        pytest.param({"type": "text", "text": "hi"}, "", id="one part, not a list"),
    ],
)
def test_message_text_reads_strings_and_text_parts(content: object, expected: str) -> None:
    """Only a string or the text parts of a list are an answer's text."""
    assert message_text(content) == expected


async def test_no_choices_is_bad_reply(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """An answer without choices is a BadLLMReply, not a crash."""
    server.respond(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
    )
    with pytest.raises(BadLLMReply, match="no choices"):
        await llm.complete(MESSAGES, json_mode=True)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("<html>gateway says hi</html>", id="html"),
        pytest.param({"foo": 1}, id="no-choices-key"),
        pytest.param({"choices": None}, id="null-choices"),
        pytest.param([1, 2], id="json-array"),
    ],
)
async def test_malformed_body_is_bad_reply(
    server: FakeLLMServer, llm: OpenAILLM, body: object
) -> None:
    """A 200 answer that is not a chat completion raises BadLLMReply, never a library error."""
    server.respond(body)
    with pytest.raises(BadLLMReply, match="no choices"):
        await llm.complete(MESSAGES, json_mode=True)


async def test_choice_without_message_is_empty_text(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A choice with no message at all reads as empty text."""
    server.respond({"choices": [{"index": 0, "finish_reason": "stop"}]})
    assert await llm.complete(MESSAGES, json_mode=True) == Completion("", "stop")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (429, "HTTP 429 rate limited"),
        (500, "HTTP 500 server error"),
        (503, "HTTP 503 server error"),
        (401, "HTTP 401 unauthorized"),
        (404, "HTTP 404 not found"),
    ],
)
async def test_http_errors_are_unavailable(
    server: FakeLLMServer, llm: OpenAILLM, status: int, expected: str
) -> None:
    """HTTP errors become LLMUnavailable naming the status, after no retries."""
    server.fail(status)
    with pytest.raises(LLMUnavailable, match=expected):
        await llm.complete(MESSAGES, json_mode=True)
    assert len(server.requests) == 1


async def test_timeout_is_unavailable(server: FakeLLMServer) -> None:
    """A server that does not answer within timeout_s gives LLMUnavailable."""
    server.hang(1.0)
    async with make_llm(server.base_url, timeout_s=0.2) as llm:
        with pytest.raises(LLMUnavailable, match="timed out"):
            await llm.complete(MESSAGES, json_mode=True)


async def test_connection_refused_is_unavailable() -> None:
    """A closed port gives LLMUnavailable, not a library exception."""
    async with FakeLLMServer() as gone:
        base_url = gone.base_url
    async with make_llm(base_url) as llm:
        with pytest.raises(LLMUnavailable, match="connection failed"):
            await llm.complete(MESSAGES, json_mode=True)


async def test_retry_after_500_succeeds(server: FakeLLMServer) -> None:
    """With max_retries=1 a 500 is retried once and the second answer is returned."""
    server.fail(500, retry_after=0.01)
    server.reply("第二次")
    async with make_llm(server.base_url, max_retries=1) as llm:
        completion = await llm.complete(MESSAGES, json_mode=True)
    assert (completion.text, len(server.requests)) == ("第二次", 2)


async def test_retry_after_429_succeeds(server: FakeLLMServer) -> None:
    """A 429 is retried after the server's Retry-After, within max_retries."""
    server.fail(429, retry_after=0.01)
    server.reply("终于")
    async with make_llm(server.base_url, max_retries=1) as llm:
        completion = await llm.complete(MESSAGES, json_mode=True)
    assert (completion.text, len(server.requests)) == ("终于", 2)


async def test_retry_after_timeout_succeeds(server: FakeLLMServer) -> None:
    """A timed-out request is retried (after the SDK's ~0.5 s backoff) and can succeed."""
    server.hang(1.0)
    server.reply("终于")
    async with make_llm(server.base_url, max_retries=1, timeout_s=0.2) as llm:
        completion = await llm.complete(MESSAGES, json_mode=True)
    assert (completion.text, len(server.requests)) == ("终于", 2)


async def test_retries_exhausted_is_unavailable(server: FakeLLMServer) -> None:
    """When every retry fails too, the last failure becomes LLMUnavailable."""
    server.fail(502, retry_after=0.01)
    server.fail(503, retry_after=0.01)
    async with make_llm(server.base_url, max_retries=1) as llm:
        with pytest.raises(LLMUnavailable, match="HTTP 503"):
            await llm.complete(MESSAGES, json_mode=True)
    assert len(server.requests) == 2


async def test_client_error_is_not_retried(server: FakeLLMServer) -> None:
    """A 400 the client cannot fix by waiting is not retried."""
    server.fail(400, body={"error": {"message": "bad model", "type": "invalid_request_error"}})
    async with make_llm(server.base_url, max_retries=2) as llm:
        with pytest.raises(LLMUnavailable, match="HTTP 400 bad request: bad model"):
            await llm.complete(MESSAGES, json_mode=True)
    assert len(server.requests) == 1


async def test_max_tokens_refused_switches_to_max_completion_tokens(
    server: FakeLLMServer, llm: OpenAILLM
) -> None:
    """A model that refuses max_tokens is asked again, and from then on, with the new name."""
    server.fail(
        400,
        body={
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                "model. Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        },
    )
    await llm.complete(MESSAGES, json_mode=True)
    await llm.complete(MESSAGES, json_mode=True)
    actual = [(r.get("max_tokens"), r.get("max_completion_tokens")) for r in server.requests]
    assert actual == [(256, None), (None, 256), (None, 256)]


async def test_temperature_refused_is_dropped(server: FakeLLMServer, llm: OpenAILLM) -> None:
    """A model that allows only its default temperature is asked again without one."""
    server.fail(
        400,
        body={
            "error": {
                "message": "Unsupported value: 'temperature' does not support 0.5 with this "
                "model. Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value",
            }
        },
    )
    completion = await llm.complete(MESSAGES, json_mode=True)
    actual = [r.get("temperature") for r in server.requests]
    assert (completion.text, actual) == (DEFAULT_REPLY, [0.5, None])


async def test_api_key_never_in_errors(server: FakeLLMServer) -> None:
    """No error text, and no chained cause, carries the API key, even when the server echoes it."""
    echo = {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "auth"}}
    server.fail(401, body=echo)
    server.fail(429, body={"error": {"message": f"limit for key {API_KEY}"}})
    server.fail(500, body=f"boom Bearer {API_KEY}")
    server.hang(1.0)
    errors: list[LLMUnavailable] = []
    async with make_llm(server.base_url, timeout_s=0.3) as llm:
        for _ in range(4):
            with pytest.raises(LLMUnavailable) as caught:
                await llm.complete(MESSAGES, json_mode=True)
            errors.append(caught.value)
    async with FakeLLMServer() as gone:
        closed_url = gone.base_url
    async with make_llm(closed_url) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            await llm.complete(MESSAGES, json_mode=True)
        errors.append(caught.value)
    leaks = [e for e in errors if API_KEY in f"{e} {e!r} {e.__cause__} {e.__context__}"]
    assert (len(errors), leaks) == (5, [])
    assert "Incorrect API key provided: ***" in str(errors[0])


async def test_debug_log_has_model_latency_usage_but_no_key(
    server: FakeLLMServer, llm: OpenAILLM
) -> None:
    """The DEBUG line names the model, latency and tokens, and never the key or the text."""
    server.reply("秘密内容")
    with captured_logs() as lines:
        await llm.complete(MESSAGES, json_mode=True)
    ours = [line for line in lines if "test-model" in line]
    assert len(ours) == 1
    assert (
        "answered in" in ours[0],
        "prompt=" in ours[0],
        any(API_KEY in line or "秘密内容" in line for line in lines),
    ) == (True, True, False)


def test_empty_api_key_is_config_error() -> None:
    """An empty key is a configuration problem, reported before any request."""
    with pytest.raises(ConfigError, match="API key"):
        make_llm_with_key("  ")


def make_llm_with_key(api_key: str) -> OpenAILLM:
    return OpenAILLM(
        base_url="http://127.0.0.1:9/v1",
        api_key=api_key,
        model="m",
        temperature=0.5,
        timeout_s=1.0,
        max_retries=0,
        max_output_tokens=64,
    )


async def test_from_config_uses_llm_section(server: FakeLLMServer) -> None:
    """from_config takes endpoint, model, temperature and token limit from [llm]."""
    config = LLMConfig(base_url=server.base_url, model="main-model", temperature=1.1,
                       max_output_tokens=300, max_retries=0)  # fmt: skip
    async with OpenAILLM.from_config(config, api_key=API_KEY) as llm:
        await llm.complete(MESSAGES, json_mode=False)
    body = server.requests[0]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("main-model", 1.1, 300)


async def test_splitter_falls_back_to_llm_section(server: FakeLLMServer) -> None:
    """An empty [llm.splitter] reuses [llm]'s endpoint and model, at a low temperature."""
    config = LLMConfig(base_url=server.base_url, model="main-model", max_output_tokens=300)
    async with OpenAILLM.splitter_from_config(config, api_key=API_KEY) as llm:
        await llm.complete(MESSAGES, json_mode=True)
    body = server.requests[0]
    assert (body["model"], body["temperature"], body["max_tokens"]) == (
        "main-model",
        SPLITTER_TEMPERATURE,
        600,
    )


async def test_splitter_uses_its_own_endpoint_and_model(server: FakeLLMServer) -> None:
    """A filled-in [llm.splitter] sends to its own endpoint with its own model."""
    splitter = SplitterConfig(base_url=server.base_url, model="cheap-model")
    config = LLMConfig(base_url="http://127.0.0.1:9/v1", model="main-model", splitter=splitter)
    async with OpenAILLM.splitter_from_config(config, api_key=API_KEY) as llm:
        await llm.complete(MESSAGES, json_mode=True)
    assert [r["model"] for r in server.requests] == ["cheap-model"]
