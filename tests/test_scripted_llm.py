"""The scripted in-process LLM: it plays back its script in order and records every call."""

from __future__ import annotations

import pytest

from adapters.scripted_llm import LLMCall, ScriptedLLM, ScriptExhausted
from bot.errors import BadLLMReply, LLMUnavailable, PacebotError
from bot.models import ChatMessage, Completion
from bot.ports import LLM

SYSTEM = ChatMessage("system", "You are 小满.")
HELLO = ChatMessage("user", "你好")


async def ask(llm: LLM, text: str, *, json_mode: bool = True) -> Completion:
    """Ask ``llm`` once, as the core does, through the port."""
    return await llm.complete([SYSTEM, ChatMessage("user", text)], json_mode=json_mode)


async def test_completions_come_back_in_order() -> None:
    """Scripted completions are returned one per call, in script order."""
    cut_off = Completion('{"replies": ["一', finish_reason="length")
    llm = ScriptedLLM(Completion('{"replies": []}', finish_reason="stop"), cut_off)

    answers = [await ask(llm, "one"), await ask(llm, "two")]

    assert answers == [Completion('{"replies": []}', finish_reason="stop"), cut_off]


async def test_text_is_short_for_a_normal_stop() -> None:
    """A plain string in the script is a completion that stopped normally."""
    llm = ScriptedLLM("hello")

    assert await ask(llm, "hi") == Completion("hello", finish_reason="stop")


async def test_errors_are_raised_in_their_turn() -> None:
    """A scripted error is raised on its call; the script goes on after it."""
    llm = ScriptedLLM(LLMUnavailable("down"), BadLLMReply("no choices"), "back")

    with pytest.raises(LLMUnavailable, match="down"):
        await ask(llm, "one")
    with pytest.raises(BadLLMReply, match="no choices"):
        await ask(llm, "two")
    answer = await ask(llm, "three")

    assert answer == Completion("back", finish_reason="stop")


async def test_every_call_is_recorded() -> None:
    """Each call's messages and json_mode are recorded, failed calls included."""
    llm = ScriptedLLM(LLMUnavailable("down"), "ok")

    with pytest.raises(LLMUnavailable):
        await llm.complete([SYSTEM, HELLO], json_mode=True)
    await llm.complete((HELLO,), json_mode=False)

    assert llm.calls == [LLMCall((SYSTEM, HELLO), json_mode=True), LLMCall((HELLO,), False)]


async def test_running_out_says_so() -> None:
    """A call past the end of the script raises ScriptExhausted naming the call and its text."""
    llm = ScriptedLLM("only one")
    await ask(llm, "first")

    with pytest.raises(ScriptExhausted) as raised:
        await ask(llm, "second question")

    assert str(raised.value) == (
        "the scripted LLM has no answer for call 2: its script had 1 step(s);"
        " the call ended with 'second question'"
    )
    assert len(llm.calls) == 2


async def test_running_out_is_no_llm_outage() -> None:
    """The exhausted-script error is not a PacebotError the core would swallow as an outage."""
    llm = ScriptedLLM()

    with pytest.raises(ScriptExhausted) as raised:
        await ask(llm, "anyone?")

    assert isinstance(raised.value, PacebotError) is False


async def test_add_extends_the_script() -> None:
    """Steps added later play after those already scripted; remaining counts what is left."""
    llm = ScriptedLLM("a")
    llm.add("b", Completion("c", finish_reason=None))
    before = llm.remaining

    texts = [(await ask(llm, str(n))).text for n in range(3)]

    assert (before, texts, llm.remaining) == (3, ["a", "b", "c"], 0)


async def test_calls_are_a_copy() -> None:
    """The recorded calls handed out cannot change what the LLM recorded."""
    llm = ScriptedLLM("a")
    await ask(llm, "hi")

    llm.calls.clear()

    assert len(llm.calls) == 1
