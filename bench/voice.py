"""What voice adds: hearing one voice note, speaking one voice item, and the bytes sent.

**A voice note.** Telegram: PTB's ``getFile`` and the download from the fake Bot API of a
10-second Ogg/Opus note, its format and length read (``adapters.audio``), then the
upload to ``/audio/transcriptions`` through the ``openai`` SDK against the instant fake:
the time a batch waits for it when it does not fit in the quiet wait it runs beside. QQ:
the same for a 10-second SILK record downloaded from a local host through the SSRF
checks and decoded to WAV (the fallback when ``get_record`` is missing, the heavier way).

**A voice item.** The synthesis of a 20-character sentence at ``/audio/speech`` (Ogg/Opus)
and its upload with ``sendVoice`` through the real Telegram platform; and the MP3 a QQ
record inlines. The fake answers silence, so these bytes say what the wire carries for
silence of that length, not what real speech weighs (see docs/benchmarks.md).

**Calls per batch.** Private chats each send a voice note through ``pacebot``'s own
composition (``running_bot``, Telegram against the fake Bot API) and are answered with a
text and a voice item: the chat completions per batch (exactly one: hearing and speaking
are audio calls).
"""

from __future__ import annotations

import time
from pathlib import Path

from adapters.openai_audio import OpenAIAudio
from adapters.qq.fetch import SafeFetch
from adapters.qq.voice import QQVoice
from adapters.telegram.files import TelegramFiles
from adapters.telegram.platform import TelegramPlatform
from adapters.telegram.voice import TelegramVoice
from bench.report import Figure, exactly, spread_figures
from bench.rig import fresh_path
from bench.stats import Spread
from bot.models import ChatKey, ChatKind, VoiceNote, voice_label
from bot.replies.items import Voice
from bot.voice.ports import Audio, Speech, VoiceSource
from fakes import audio
from fakes.bot_api import FakeBotAPI
from fakes.harness import RecordingSink, speech_client, telegram_bot, telegram_config
from fakes.image_host import ImageHost
from fakes.openai_api import FakeLLMServer

NOTE_S = 10.0
SENTENCE = "早点睡，明天还要考试呢。晚安，做个好梦"  # 20 characters


async def _no_get_record(action: str, **params: object) -> object:
    msg = f"不支持的Api {action}"
    raise RuntimeError(msg)


async def _hearing(
    name: str, source: VoiceSource, speech: Speech, note: VoiceNote, *, rounds: int
) -> tuple[list[Figure], Audio]:
    """Time fetching and transcribing ``note``; return the figures and what was uploaded."""
    took: list[float] = []
    uploaded = Audio(b"", "")
    for _ in range(rounds):
        started = time.perf_counter()
        uploaded = await source.fetch(note)
        await speech.transcribe(uploaded)
        took.append((time.perf_counter() - started) * 1e3)
    return [
        *spread_figures(f"voice.note.{name}", Spread.of(took), "ms"),
        Figure(f"voice.note.{name}.uploaded", len(uploaded.data) / 1024, "KiB"),
    ], uploaded


async def _notes(llm: FakeLLMServer, speech: OpenAIAudio, *, rounds: int) -> list[Figure]:
    """Hear a Telegram note and a QQ record (the URL way), ``rounds`` times each."""
    label = voice_label(NOTE_S)
    async with FakeBotAPI() as api:
        api.add_file("voice-1", audio.ogg_opus(NOTE_S), path="voice/file_1.oga")
        files = TelegramFiles(token=api.token, api_base_url=api.base_url)
        try:
            telegram = TelegramVoice(files)
            figures, _ = await _hearing(
                "telegram", telegram, speech, VoiceNote("voice-1", label, NOTE_S), rounds=rounds
            )
        finally:
            await files.aclose()
    async with ImageHost() as host:
        silk = audio.silk(NOTE_S)
        url = host.serve("/r.silk", silk)
        fetch = SafeFetch(allow_private_hosts=True)
        try:
            qq, wav = await _hearing(
                "qq",
                QQVoice(_no_get_record, fetch),
                speech,
                VoiceNote("r", "[voice]", url=url),
                rounds=rounds,
            )
        finally:
            await fetch.aclose()
    downloaded = Figure("voice.note.qq.downloaded", len(silk) / 1024, "KiB", note="SILK")
    return [*figures, *qq, downloaded, Figure("voice.note.qq.wav_s", wav.duration_s or 0, "s")]


async def _items(llm: FakeLLMServer, speech: OpenAIAudio, *, rounds: int) -> list[Figure]:
    """Speak the sentence and send it with sendVoice; and speak it as a QQ record's MP3."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, "1001")
    took: list[float] = []
    async with FakeBotAPI() as api:
        platform = TelegramPlatform(
            token=api.token, api_base_url=api.base_url, bot_name="小满", poll_timeout_s=1.0
        )
        await platform.start(RecordingSink())
        try:
            await platform.wait_ready()
            for _ in range(rounds):
                started = time.perf_counter()
                spoken = await speech.speak(SENTENCE, audio_format="opus")
                await platform.send(chat, Voice(SENTENCE, spoken.data, spoken.duration_s))
                took.append((time.perf_counter() - started) * 1e3)
        finally:
            await platform.stop()
        sent = api.voices[-1]["voice"]["size"]
    mp3 = await speech.speak(SENTENCE, audio_format="mp3")
    inlined = (len(mp3.data) + 2) // 3 * 4 + len("base64://")
    return [
        *spread_figures("voice.item.telegram", Spread.of(took), "ms"),
        Figure("voice.item.telegram.sent", sent / 1024, "KiB", note=f"{spoken.duration_s:.1f} s"),
        Figure("voice.item.qq.sent", inlined / 1024, "KiB", note="MP3 as base64"),
    ]


async def _batches(workdir: Path, *, chats: int) -> list[Figure]:
    """Answer a voice note in each of ``chats`` private chats; count the chat calls."""
    reply = '{"replies": [{"content": "恭喜！"}, {"voice": "晚安"}]}'
    async with FakeLLMServer(default=reply) as llm, FakeBotAPI() as api:
        api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
        voice_on = {"transcribe": True, "speak": True}
        config = telegram_config(fresh_path(workdir, "voice"), llm, api, voice=voice_on)
        async with telegram_bot(config, api) as core:
            for chat_id in range(1, chats + 1):
                api.push_message(chat_id, user_id=chat_id, extra=voice_message())
            await api.wait_for("sendVoice", count=chats, timeout=30)
            await core.inbox.drain()
        heard = len(llm.transcriptions)
        calls = len(llm.requests)
    return [
        Figure("voice.calls_per_batch", calls / chats, "calls", target=exactly(1.0)),
        Figure("voice.transcriptions_per_note", heard / chats, "calls"),
    ]


def voice_message() -> dict[str, object]:
    return {"voice": {"file_id": "voice-1", "file_unique_id": "uv-1", "duration": 3}}


async def measure(*, quick: bool, workdir: Path) -> list[Figure]:
    """Hear one voice note on each platform and speak one voice item, many times; count
    the chat calls of batches that hear and speak."""
    rounds = 3 if quick else 30
    async with FakeLLMServer() as llm:
        speech = speech_client(llm)
        try:
            figures = await _notes(llm, speech, rounds=rounds)
            figures += await _items(llm, speech, rounds=rounds)
        finally:
            await speech.aclose()
    return [*figures, *await _batches(workdir, chats=2 if quick else 20)]
