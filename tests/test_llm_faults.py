"""The LLM fault table: malformed output and transport failures through the real pipeline.

Each row scripts the fake LLM server (the main call, then the splitter or a second
call where the fallback chain asks for one), lets one private-chat question go through
the real pipeline (SQLite, the ``openai`` SDK, the batch handler, the outbox, the
sender) and checks what the chat saw, how the batch ended and how many LLM calls it
cost; then a normal question must be answered, so no chat is ever stuck. Nothing a
chat sees may be JSON, an error text or a stack trace, and no log line may carry a
traceback. The same table, with these ids, is in docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakes.harness import PRIVATE, TEST_KEY, Harness, harness, make_config
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

QUESTION = "明天去爬山吗？"
FOLLOW_UP = "那后天呢？"
STILL_HERE = "后天也行"
NEXT_TIME = "那就下次"  # the answer after a fault: not the same words, which are never repeated
DOCS = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"

Script = Callable[[FakeLLMServer], None]


def plan(*items: dict[str, object]) -> str:
    return json.dumps({"replies": list(items)}, ensure_ascii=False)


def item(content: object, delay: object = 0, **extra: object) -> dict[str, object]:
    return {"content": content, "send_delay_seconds": delay, **extra}


def splitter_down(first: Script) -> Script:
    """The main call answers ``first``; the splitter (same server) answers HTTP 500."""

    def script(llm: FakeLLMServer) -> None:
        first(llm)
        llm.fail(500)

    return script


def says(content: str | None, *, finish_reason: str = "stop") -> Script:
    return lambda llm: llm.reply(content, finish_reason=finish_reason)


def body(raw: object, *, status: int = 200) -> Script:
    return lambda llm: llm.respond(raw, status=status)


def twice(first: Script) -> Script:
    def script(llm: FakeLLMServer) -> None:
        first(llm)
        first(llm)

    return script


@dataclass(frozen=True)
class Fault:
    """One row of the table."""

    id: str
    script: Script
    sent: tuple[str, ...]  # what the chat sees, in order
    state: str  # how the batch ends
    calls: int  # LLM requests the batch cost (main, splitter, one more ask)


HALF = '{"replies": [{"content": "好呀", "send_delay_seconds": 0}, {"content": "几点'
HALF_FIRST = '{"replies": [{"content": "好呀，几点'
TRAILING_COMMAS = '{"replies": [{"content": "好呀", "send_delay_seconds": 0,},],}'
FULL_WIDTH = (
    "{“replies”：[{“content”：“好呀”，“send_delay_seconds”：0}，{“content”：“几点出发？”}]}"
)
SINGLE_QUOTED = "{'replies': [{'content': '好呀', 'send_delay_seconds': 0}]}"
INNER_QUOTES = '{"replies": [{"content": "他说"明天见"就走了", "send_delay_seconds": 0}]}'
GARBLED = '{"replies": [@@, {"content": }]}'
FAULTS = [
    Fault("fenced-json", says(f"```json\n{plan(item('好呀'))}\n```"), ("好呀",), "answered", 1),
    Fault(
        "prose, splitter ok",
        lambda llm: (
            llm.reply("好呀。几点出发？"),
            llm.reply(plan(item("好呀。"), item("几点出发？"))),
        ),
        ("好呀。", "几点出发？"),
        "answered",
        2,
    ),
    Fault(
        "prose, splitter down",
        splitter_down(says("好呀。几点出发？")),
        ("好呀。", "几点出发？"),
        "answered",
        2,
    ),
    Fault(
        "prose, splitter prose",
        lambda llm: (llm.reply("好呀。几点出发？"), llm.reply("Sure, here you go: 好呀")),
        ("好呀。", "几点出发？"),
        "answered",
        2,
    ),
    Fault(
        "prose, splitter silent",
        lambda llm: (llm.reply("好呀。几点出发？"), llm.reply(plan())),
        ("好呀。", "几点出发？"),
        "answered",
        2,
    ),
    Fault("half an object", splitter_down(says(HALF)), ("好呀",), "answered", 2),
    # A cut-off plan is never completed into a shorter one: its finished texts only.
    Fault("cut off before its first message", splitter_down(says(HALF_FIRST)), (), "failed", 2),
    # The usual slips of a model's JSON are mended locally: one call, the splitter unused.
    Fault("trailing commas", says(TRAILING_COMMAS), ("好呀",), "answered", 1),
    Fault(
        "full-width quotes and colons",
        says(FULL_WIDTH),
        ("好呀", "几点出发？"),
        "answered",
        1,
    ),
    Fault("single-quoted keys", says(SINGLE_QUOTED), ("好呀",), "answered", 1),
    Fault(
        "unescaped inner quotes",
        says(INNER_QUOTES),
        ('他说"明天见"就走了',),
        "answered",
        1,
    ),
    # A mended plan never means silence: a plan with nothing readable goes down the chain.
    Fault("nothing readable to mend", splitter_down(says(GARBLED)), (), "failed", 2),
    Fault("empty object {}", splitter_down(says("{}")), (), "failed", 2),
    Fault(
        "replies a string, splitter ok",
        lambda llm: (llm.reply('{"replies": "好呀"}'), llm.reply(plan(item("好呀")))),
        ("好呀",),
        "answered",
        2,
    ),
    Fault("replies a string", splitter_down(says('{"replies": "好呀"}')), (), "failed", 2),
    Fault(
        "replies an object",
        splitter_down(says(json.dumps({"replies": item("好呀")}, ensure_ascii=False))),
        ("好呀",),
        "answered",
        2,
    ),
    Fault(
        "wrong field types",
        splitter_down(says(plan(item(123, "soon")))),
        (),
        "failed",
        2,
    ),
    Fault(
        "boolean delay",
        splitter_down(says(plan(item("好呀", True)))),
        ("好呀",),
        "answered",
        2,
    ),
    Fault("null content item", twice(says(plan(item(None)))), (), "silent", 2),
    Fault("null message content", says(None), (), "failed", 1),
    Fault("empty message content", says(""), (), "failed", 1),
    Fault("whitespace content", twice(says(plan(item("  \n ")))), (), "silent", 2),
    Fault(
        "50 kB content",
        says(plan(item("啊" * 50_000))),
        ("啊" * 4096,) * 12 + ("啊" * 848,),
        "answered",
        1,
    ),
    Fault(
        "negative delay",
        says(plan(item("好呀"), item("走", -5))),
        ("好呀", "走"),
        "answered",
        1,
    ),
    Fault(
        "NaN delay",
        says('{"replies": [{"content": "好呀", "send_delay_seconds": NaN}]}'),
        ("好呀",),
        "answered",
        1,
    ),
    Fault(
        "huge delay",
        says(plan(item("好呀"), item("走", 1e308))),
        ("好呀", "走"),
        "answered",
        1,
    ),
    Fault(
        "infinite delay",
        says('{"replies": [{"content": "好呀"}, {"content": "走", "send_delay_seconds": 1e999}]}'),
        ("好呀", "走"),
        "answered",
        1,
    ),
    Fault(
        "unknown reply_to",
        says(plan(item("好呀", reply_to="999999"))),
        ("好呀",),
        "answered",
        1,
    ),
    Fault(
        "finish_reason length",
        splitter_down(says(plan(item("好呀")), finish_reason="length")),
        ("好呀",),
        "answered",
        2,
    ),
    Fault(
        "cut off at length",
        splitter_down(says(HALF, finish_reason="length")),
        ("好呀",),
        "answered",
        2,
    ),
    Fault(
        "text around the object",
        says(f"Sure! Here it is:\n{plan(item('好呀'))}\nHope this helps."),
        ("好呀",),
        "answered",
        1,
    ),
    Fault("array, not object", says(json.dumps([item("好呀")])), ("好呀",), "answered", 1),
    Fault(
        "nested one level",
        says(json.dumps({"data": {"replies": [item("好呀")]}})),
        ("好呀",),
        "answered",
        1,
    ),
    Fault(
        "reasoning block",
        says(f"<think>想想</think>{plan(item('好呀'))}"),
        ("好呀",),
        "answered",
        1,
    ),
    Fault(
        "error object",
        splitter_down(says('{"error": {"message": "internal error", "code": 500}}')),
        (),
        "failed",
        2,
    ),
    Fault("empty list twice", twice(says(plan())), (), "silent", 2),
    Fault(
        "unknown key beside a good item",
        says(plan(item("好呀", mood="happy"), item("几点出发？"))),
        ("几点出发？",),
        "answered",
        1,
    ),
    Fault(
        "two kinds in one item",
        says(plan({"content": "好呀", "voice": "好呀"}, item("走吧"))),
        ("走吧",),
        "answered",
        1,
    ),
    Fault("a voice item, voice off", says(plan({"voice": "好呀"})), ("好呀",), "answered", 1),
    Fault(
        "a later item",
        says(plan(item("好呀"), {"later": {"in_seconds": 60, "note": "问问爬山"}})),
        ("好呀",),
        "answered",
        1,
    ),
    # A reaction alone is an answer: no text, and the question is not asked once more.
    Fault("a reaction alone", says(plan({"react": "👍", "to": "1"})), (), "answered", 1),
    # A reaction on a message it was never shown is dropped: asked once more.
    Fault(
        "a reaction on an unknown message",
        says(plan({"react": "👍", "to": "999"})),
        (STILL_HERE,),
        "answered",
        2,
    ),
    Fault(
        "the splitter hands reply JSON back",
        lambda llm: (
            llm.reply(plan({"react": "👍"})),
            llm.reply(plan(item(plan({"react": "👍"})))),
        ),
        (),
        "failed",
        2,
    ),
    Fault("HTTP 429", lambda llm: llm.fail(429, retry_after=0.01), (), "failed", 1),
    Fault("HTTP 500", lambda llm: llm.fail(500), (), "failed", 1),
    Fault("HTTP 401", lambda llm: llm.fail(401), (), "failed", 1),
    Fault("timeout", lambda llm: llm.hang(2.0), (), "failed", 1),
    Fault("HTML body", body("<html><body>502 Bad Gateway</body></html>"), (), "failed", 1),
    Fault(
        "no choices", body({"id": "x", "object": "chat.completion", "choices": []}), (), "failed", 1
    ),
]


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    reply = json.dumps({"replies": [{"content": STILL_HERE, "send_delay_seconds": 0}]})
    async with FakeLLMServer(default=reply) as server:
        yield server


def batch_states(bot: Harness) -> list[str]:
    with sqlite3.connect(bot.config.database_path) as db:
        return [state for (state,) in db.execute("SELECT state FROM batches ORDER BY id")]


def looks_broken(text: str) -> bool:
    """Tell whether a chat message shows machinery instead of words."""
    markers = ('{"', '"replies"', "send_delay", "Traceback", "Error", "error:", TEST_KEY)
    return any(marker in text for marker in markers)


PACING = {"max_delay_s": 0.1}
LLM = {"timeout_s": 0.3}


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
async def test_llm_fault(tmp_path: Path, llm: FakeLLMServer, fault: Fault) -> None:
    """A malformed or failed LLM answer never crashes, leaks or sticks: the next one works."""
    fault.script(llm)
    with captured_logs() as logs:
        async with harness(tmp_path, llm, pacing=PACING, llm=LLM) as bot:
            await bot.say(QUESTION)
            await bot.settle()
            faulty = bot.platform.texts()
            calls = len(llm.requests)
            llm.reply_json({"replies": [{"content": NEXT_TIME, "send_delay_seconds": 0}]})
            await bot.say(FOLLOW_UP)
            await bot.settle()
            states = batch_states(bot)
    assert (tuple(faulty), states[0], calls) == (fault.sent, fault.state, fault.calls)
    assert (bot.platform.texts()[len(faulty) :], states[1:]) == ([NEXT_TIME], ["answered"])
    assert [t for t in bot.platform.texts() if looks_broken(t)] == []
    assert logs.tracebacks() == []


async def test_each_fallback_is_logged_with_its_chat_and_batch(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Prose, the splitter down: both steps down the chain name the chat key and batch id."""
    splitter_down(says("好呀。几点出发？"))(llm)
    with captured_logs("INFO") as logs:
        async with harness(tmp_path, llm, pacing=PACING, llm=LLM) as bot:
            await bot.say(QUESTION)
            await bot.settle()
    with contextlib.closing(sqlite3.connect(bot.config.database_path)) as db:
        [(batch,)] = db.execute("SELECT id FROM batches").fetchall()
    fallbacks = [
        (line.split(": ", 1)[1].split(" (")[0], line.chat, line.extra.get("batch"))
        for line in logs
        if ": fallback:" in line
    ]
    assert fallbacks == [
        ("fallback: splitter", str(PRIVATE), batch),
        ("fallback: text split", str(PRIVATE), batch),
    ]


async def test_connection_refused_then_back(tmp_path: Path) -> None:
    """With nothing listening the chat stays silent; once the LLM is back it is answered."""
    server = FakeLLMServer()
    await server.start()
    url, port = server.base_url, int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    await server.close()
    config = make_config(tmp_path, url, pacing=PACING, llm=LLM)
    try:
        with captured_logs() as logs:
            async with harness(tmp_path, server, config=config) as bot:
                await bot.say(QUESTION)
                await bot.settle()
                refused = batch_states(bot)
                await server.start(port=port)
                server.reply_json({"replies": [{"content": STILL_HERE}]})
                await bot.say(FOLLOW_UP)
                await bot.settle()
                states = batch_states(bot)
    finally:
        await server.close()
    assert (refused, states, bot.platform.texts()) == (
        ["failed"],
        ["failed", "answered"],
        [STILL_HERE],
    )
    assert logs.tracebacks() == []


def test_the_table_is_documented() -> None:
    """Every row of the fault table appears, by id, in docs/reliability.md."""
    documented = DOCS.read_text(encoding="utf-8")
    ids = [*(f.id for f in FAULTS), "connection refused"]
    assert [i for i in ids if f"| {i} |" not in documented] == []
