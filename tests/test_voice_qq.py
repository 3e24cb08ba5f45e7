"""Voice on QQ over the real wires: nonebot ↔ the OneBot client over the reverse WebSocket,
the openai SDK ↔ the fake audio endpoints, SQLite. A record is heard through get_record,
else from its URL under the picture rules; a voice item goes out as a record of MP3."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.audio import sniff
from bot.config.model import Config
from fakes import audio
from fakes.harness import free_port, make_config, qq_bot, user_prompt
from fakes.image_host import ImageHost
from fakes.onebot import ApiCall, record, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE, QQ_SELF = 42, 10001
GOOD_NIGHT = "早点睡，明天还要考试呢"


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def qq_config(
    tmp_path: Path, llm: FakeLLMServer, *, private_hosts: bool = True, **voice: Any
) -> Config:
    return make_config(
        tmp_path,
        llm.base_url,
        qq={"enabled": True, "port": free_port(), "allow_private_image_hosts": private_hosts},
        voice=voice,
    )


def new_messages(llm: FakeLLMServer) -> str:
    return user_prompt(llm.requests[-1]).split("New messages")[1]


def segments(call: ApiCall) -> list[dict[str, Any]]:
    return list(call.params["message"])


async def test_a_qq_record_is_heard_through_get_record(tmp_path: Path, llm: FakeLLMServer) -> None:
    """get_record is asked for MP3; its base64 bytes are uploaded as voice.mp3 and the
    model reads "[voice 0:03] <transcript>", its length measured from the bytes."""
    mp3 = audio.mp3(3.0)
    async with qq_bot(qq_config(tmp_path, llm, transcribe=True)) as (core, onebot):
        onebot.records["a1b2.amr"] = mp3
        await onebot.send_private_message(ALICE, [record("a1b2.amr")])
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    [asked] = onebot.calls_of("get_record")
    [upload] = llm.transcriptions
    assert asked.params == {"file": "a1b2.amr", "out_format": "mp3"}
    assert (upload.filename, upload.data) == ("voice.mp3", mp3)
    assert f"[voice 0:03] {llm.transcript}" in new_messages(llm)
    assert len(llm.requests) == 1


async def test_without_get_record_the_silk_url_is_downloaded_and_decoded(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An implementation without get_record (Lagrange): the record's URL is downloaded,
    its SILK bytes decoded and uploaded as a WAV the endpoint takes."""
    config = qq_config(tmp_path, llm, transcribe=True)
    async with (
        ImageHost() as host,
        qq_bot(config, self_id=QQ_SELF, unsupported={"get_record"}) as (core, onebot),
    ):
        url = host.serve("/r.silk", audio.silk(2.0))
        await onebot.send_private_message(ALICE, [record("r.silk", url=url)])
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    [upload] = llm.transcriptions
    assert (upload.filename, upload.data[:4], host.requests) == ("voice.wav", b"RIFF", ["/r.silk"])
    assert f"[voice 0:02] {llm.transcript}" in new_messages(llm)


async def test_a_record_url_on_a_private_address_is_never_fetched(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Without qq.allow_private_image_hosts a record URL on loopback is refused unread;
    the batch is answered with the placeholder, and no traceback is logged."""
    config = qq_config(tmp_path, llm, private_hosts=False, transcribe=True)
    with captured_logs() as logs:
        async with (
            ImageHost() as host,
            qq_bot(config, self_id=QQ_SELF, unsupported={"get_record"}) as (
                core,
                onebot,
            ),
        ):
            url = host.serve("/r.silk", audio.silk(2.0))
            await onebot.send_private_message(ALICE, [record("r.silk", url=url), text(" 听")])
            [answer] = await onebot.wait_for_call("send_private_msg", within_s=5)
            await core.inbox.drain()
    assert (host.requests, llm.transcriptions) == ([], [])
    assert new_messages(llm).strip().endswith(": [voice] 听")
    assert segments(answer) == [{"type": "text", "data": {"text": "好的"}}]
    assert logs.about("a private or local address") == [
        "INFO voice note 1001 keeps its placeholder: QQ voice note host '127.0.0.1' is at "
        "127.0.0.1, a private or local address (set qq.allow_private_image_hosts = true to allow)"
    ]
    assert logs.tracebacks() == []


async def test_a_voice_item_goes_out_as_a_record_of_mp3(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The model's voice item is spoken as MP3 and posted as a record segment with those
    bytes inlined; the bot's message keeps its words."""
    async with qq_bot(qq_config(tmp_path, llm, speak=True)) as (core, onebot):
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        await onebot.send_private_message(ALICE, "我睡不着")
        [call] = await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
        llm.reply_json(plan({"content": "晚安"}))
        await onebot.send_private_message(ALICE, "好吧")
        await onebot.wait_for_call("send_private_msg", 2, within_s=5)
        await core.inbox.drain()
    [asked] = llm.speech_requests
    [segment] = segments(call)
    sent = base64.b64decode(segment["data"]["file"].removeprefix("base64://"))
    assert (asked["input"], asked["response_format"]) == (GOOD_NIGHT, "mp3")
    assert (segment["type"], sniff(sent), len(sent) > 1000) == ("record", "mp3", True)
    assert f"(you): {GOOD_NIGHT}" in user_prompt(llm.requests[1]).split("New messages")[0]


async def test_a_failed_synthesis_on_qq_sends_the_words_as_text_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Speech answering 503 posts the words as one text, and no record."""
    llm.speech_fail(503)
    async with qq_bot(qq_config(tmp_path, llm, speak=True)) as (core, onebot):
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        await onebot.send_private_message(ALICE, "晚安")
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    posted = [segments(call) for call in onebot.calls_of("send_private_msg")]
    assert posted == [[{"type": "text", "data": {"text": GOOD_NIGHT}}]]


async def test_a_record_the_implementation_refuses_is_sent_as_text_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """NapCat without its converter refuses every record ("语音转换失败"): the words go
    as text after that one refusal, never retried as voice."""
    async with qq_bot(qq_config(tmp_path, llm, speak=True)) as (core, onebot):
        onebot.fail_next("send_private_msg", wording="语音转换失败")
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        await onebot.send_private_message(ALICE, "晚安")
        await onebot.wait_for_call("send_private_msg", 2, within_s=5)
        await core.inbox.drain()
    posted = [segments(call)[0]["type"] for call in onebot.calls_of("send_private_msg")]
    assert posted == ["record", "text"]
    assert len(llm.speech_requests) == 1


async def test_a_record_a_stop_cut_short_is_fetched_again_once_onebot_is_back(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Stopped while a QQ record was being heard: after the restart it is fetched again
    through get_record once OneBot has connected (a record has no URL to fall back on),
    and its batch reads the words."""
    mp3 = audio.mp3(3.0)
    llm.transcription_hang(30.0)
    slow = {"debounce_min_s": 5.0, "debounce_max_s": 5.0}
    config = make_config(
        tmp_path,
        llm.base_url,
        qq={"enabled": True, "port": free_port()},
        voice={"transcribe": True},
        pacing=slow,
    )
    async with qq_bot(config) as (_, onebot):
        onebot.records["a1b2.amr"] = mp3
        await onebot.send_private_message(ALICE, [record("a1b2.amr")])
        await llm.wait_for_transcriptions(1, timeout=5)
    assert llm.requests == []
    # OneBot connects a moment after the bot starts: the batch waits a second for it.
    second = {"debounce_min_s": 1.0, "debounce_max_s": 1.0}
    restarted = config.model_copy(update={"pacing": config.pacing.model_copy(update=second)})
    async with qq_bot(restarted) as (core, onebot):
        onebot.records["a1b2.amr"] = mp3
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    [asked] = onebot.calls_of("get_record")
    assert (asked.params["file"], len(llm.transcriptions)) == ("a1b2.amr", 2)
    assert f"[voice 0:03] {llm.transcript}" in new_messages(llm)
