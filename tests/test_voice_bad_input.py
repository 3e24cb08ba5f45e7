"""Bad voice input never costs an answer: an empty, cut-short, 50 MB or ten-minute voice
note, a transcription that hangs, a provider without audio endpoints. Each batch is
answered with the placeholder, in one chat call, with no traceback and no key logged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from adapters.app import Core
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from fakes import audio
from fakes.bot_api import FakeBotAPI, voice
from fakes.harness import TEST_KEY, telegram_bot, telegram_config, user_prompt
from fakes.openai_api import FakeLLMServer
from tests.log_capture import LogLines, captured_logs

ALICE = 1001
CHAT = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
FIFTY_MB = 50 * 1024 * 1024


def voice_config(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, **llm_extra: Any) -> Config:
    voice_on = {"transcribe": True, "speak": True}
    return telegram_config(tmp_path, llm, api, voice=voice_on, llm=llm_extra)


async def answered(api: FakeBotAPI, core: Core, *, duration: int = 3) -> None:
    """Send Alice's voice note and wait until its batch is answered and sent."""
    api.push_message(ALICE, extra=voice(duration=duration))
    await api.wait_for("sendMessage", timeout=10)
    await core.inbox.drain()


def clean(logs: LogLines, api: FakeBotAPI) -> bool:
    """Nothing was logged as a crash, and neither the key nor the bot token leaked."""
    text = "\n".join(logs)
    return not logs.tracebacks() and TEST_KEY not in text and api.token not in text


def placeholder_answered(llm: FakeLLMServer, placeholder: str) -> bool:
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    return len(llm.requests) == 1 and new.strip().endswith(f"Alice: {placeholder}")


@pytest.mark.parametrize(
    "data",
    [b"", audio.truncated(audio.ogg_opus(3.0))],
    ids=["empty", "cut-short"],
)
async def test_an_empty_or_cut_short_voice_file_keeps_its_placeholder(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, data: bytes
) -> None:
    """A file with no playable audio is downloaded but never uploaded; the batch is
    answered with "[voice 0:03]" and the stored message keeps it."""
    api.add_file("voice-1", data, path="voice/file_1.oga")
    with captured_logs() as logs:
        async with telegram_bot(voice_config(tmp_path, llm, api), api) as core:
            await answered(api, core)
            [trace] = await core.ops.traces.recent(CHAT, count=1)
    assert (api.downloads, llm.transcriptions) == (["voice/file_1.oga"], [])
    assert placeholder_answered(llm, "[voice 0:03]")
    assert trace.trace.heard == ((trace.trace.message_ids[0], ""),)
    assert clean(logs, api)


async def test_a_50_mb_voice_file_is_never_downloaded(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """getFile announcing 50 MB stops the download before it starts."""
    api.add_file("voice-1", audio.ogg_opus(3.0), announced_size=FIFTY_MB, path="voice/f.oga")
    with captured_logs() as logs:
        async with telegram_bot(voice_config(tmp_path, llm, api), api) as core:
            await answered(api, core)
    assert (len(api.calls_to("getFile")), api.downloads, llm.transcriptions) == (1, [], [])
    assert placeholder_answered(llm, "[voice 0:03]")
    assert logs.about("placeholder") == [
        f"INFO voice note 1 keeps its placeholder: the voice note is {FIFTY_MB} bytes, "
        "more than the 26214400 allowed"
    ]
    assert clean(logs, api)


async def test_a_ten_minute_voice_note_is_not_even_fetched(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Over voice.max_seconds (120) by what Telegram says: no getFile, no upload."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/f.oga")
    with captured_logs() as logs:
        async with telegram_bot(voice_config(tmp_path, llm, api), api) as core:
            await answered(api, core, duration=600)
    assert (api.calls_to("getFile"), llm.transcriptions) == ([], [])
    assert placeholder_answered(llm, "[voice 10:00]")
    assert clean(logs, api)


async def test_a_hanging_transcription_holds_the_batch_no_longer_than_the_llm_timeout(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A transcription that hangs for 30 s holds the batch llm.timeout_s (0.6 s) at most:
    the chat call goes out with the placeholder while the upload still hangs."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/f.oga")
    llm.transcription_hang(30.0)
    config = voice_config(tmp_path, llm, api, timeout_s=0.6)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            loop = asyncio.get_running_loop()
            api.push_message(ALICE, extra=voice(duration=3))
            await llm.wait_for_transcriptions(1, timeout=5)
            uploaded = loop.time()
            await llm.wait_for_requests(1, timeout=5)  # long before the 30 s hang ends
            held_s = loop.time() - uploaded
            await api.wait_for("sendMessage", timeout=5)
            await core.inbox.drain()
    assert held_s > 0.4
    assert placeholder_answered(llm, "[voice 0:03]")
    assert clean(logs, api)


async def test_a_provider_without_audio_endpoints_costs_only_the_voice(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Both audio endpoints answering 404: the note keeps its placeholder, the voice item
    goes as text once, the batch is answered in one chat call, the key never logged."""
    llm.audio_endpoints = False
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/f.oga")
    llm.reply_json({"replies": [{"voice": "收到啦"}]})
    with captured_logs() as logs:
        async with telegram_bot(voice_config(tmp_path, llm, api), api) as core:
            await answered(api, core)
    assert (len(llm.transcriptions), len(llm.speech_requests)) == (1, 1)
    assert placeholder_answered(llm, "[voice 0:03]")
    assert [m["text"] for m in api.sent_messages(ALICE)] == ["收到啦"]
    origin = llm.base_url.removesuffix("/v1")
    assert logs.about("HTTP 404") == [
        f"WARNING voice note 1 not transcribed: transcription whisper-1 at {origin}: HTTP 404 "
        "not found (check base_url and model): Not found: /v1/audio/transcriptions",
        f"WARNING voice item sent as text: speech failed (speech tts-1 at {origin}: HTTP 404 "
        "not found (check base_url and model): Not found: /v1/audio/speech)",
    ]
    assert clean(logs, api)
