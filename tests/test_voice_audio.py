"""Voice files known by their bytes (format, length, SILK decoded), the transcript's place
in a message's text, and the openai SDK against the fake audio endpoints."""

from __future__ import annotations

from importlib import resources

import pytest

from adapters.audio import MAX_BYTES, sniff, voice_audio
from bot.errors import BadLLMReply, LLMUnavailable, VoiceUnavailable
from bot.models import VoiceNote, voice_label
from bot.voice.hearing import heard_text
from bot.voice.ports import Audio
from fakes import audio
from fakes.harness import TEST_KEY, speech_client
from fakes.openai_api import FakeLLMServer


@pytest.mark.parametrize(
    ("data", "name", "seconds"),
    [
        (audio.ogg_opus(7.0), "voice.ogg", 7.0),
        (audio.mp3(3.0), "voice.mp3", 2.99),
        (audio.wav(2.0), "voice.wav", 2.0),
        (audio.silk(1.5), "voice.wav", 1.5),
    ],
    ids=["opus", "mp3", "wav", "silk"],
)
def test_a_voice_file_is_known_by_its_bytes(data: bytes, name: str, seconds: float) -> None:
    """Ogg/Opus, MP3 and WAV are named for their format and measured; QQ's SILK becomes a WAV."""
    heard = voice_audio(data)
    assert (heard.filename, round(heard.duration_s or 0, 2)) == (name, seconds)
    assert sniff(heard.data) == name.rsplit(".", 1)[1].replace("ogg", "opus")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (audio.truncated(audio.ogg_opus(3.0)), "broken or cut short"),
        (audio.truncated(audio.mp3(3.0)), "broken or cut short"),
        (audio.truncated(audio.silk(2.0), keep=30), "SILK voice does not decode"),
        (b"<html><body>502 Bad Gateway</body></html>", "not audio of a known format"),
        (b"#!AMR\n" + bytes(200), "AMR voice cannot be decoded"),
        (bytes(MAX_BYTES + 1), "more than the 26214400 allowed"),
    ],
    ids=["empty", "cut-ogg", "cut-mp3", "cut-silk", "html", "amr", "too-big"],
)
def test_a_bad_voice_file_is_refused_before_any_upload(data: bytes, why: str) -> None:
    """Empty, cut-short, non-audio, AMR and oversized files are refused, saying why."""
    with pytest.raises(VoiceUnavailable, match=why):
        voice_audio(data)


def test_the_bundled_second_of_silence_is_real_ogg_opus() -> None:
    """``pacebot check --online`` uploads a real one-second Ogg/Opus file."""
    data = (resources.files("adapters") / "sounds" / "silence.ogg").read_bytes()
    heard = voice_audio(data)
    assert (heard.filename, round(heard.duration_s or 0, 2)) == ("voice.ogg", 1.0)


@pytest.mark.parametrize(
    ("seconds", "label"), [(None, "[voice]"), (7.4, "[voice 0:07]"), (125, "[voice 2:05]")]
)
def test_a_voice_label_shows_its_length(seconds: float | None, label: str) -> None:
    """A voice note reads ``[voice m:ss]``, or ``[voice]`` while its length is unknown."""
    assert voice_label(seconds) == label


@pytest.mark.parametrize(
    ("text", "note", "words", "seconds", "shown"),
    [
        ("[voice 0:07]", VoiceNote("v", "[voice 0:07]", 7.0), "你好", 7.0, "[voice 0:07] 你好"),
        ("[voice] 听", VoiceNote("v", "[voice]"), "在吗", 3.2, "[voice 0:03] 在吗 听"),
        ("[voice 0:02]", VoiceNote("v", "[voice 0:02]", 2.0), "", 2.0, "[voice 0:02]"),
        (
            "[audio: 红豆]",
            VoiceNote("a", "[audio: 红豆]", 200.0),
            "还没好好地感受",
            200.0,
            "[audio: 红豆] 还没好好地感受",
        ),
        (
            "edited caption",
            VoiceNote("v", "[voice 0:05]", 5.0),
            "嗯",
            5.0,
            "[voice 0:05] 嗯 edited caption",
        ),
    ],
    ids=["telegram", "qq-length-learned", "silence", "audio-file", "placeholder-gone"],
)
def test_the_transcript_takes_the_placeholders_place(
    text: str, note: VoiceNote, words: str, seconds: float, shown: str
) -> None:
    """What was heard stands where the placeholder stood, with the note's real length."""
    assert heard_text(text, note, words, seconds) == shown


async def test_a_transcription_uploads_a_named_file_and_reads_text(llm: FakeLLMServer) -> None:
    """The SDK uploads the bytes as a multipart file named for its format, for whisper-1."""
    data = audio.ogg_opus(2.0)
    async with speech_client(llm) as speech:
        words = await speech.transcribe(Audio(data, "voice.ogg", 2.0))
    [upload] = llm.transcriptions
    assert words == llm.transcript
    assert (upload.filename, upload.content_type, upload.data) == ("voice.ogg", "audio/ogg", data)
    assert (upload.fields["model"], upload.fields["response_format"]) == ("whisper-1", "text")
    assert llm.requests == []  # an audio call, never a chat completion


@pytest.mark.parametrize(("audio_format", "magic"), [("opus", b"OggS"), ("mp3", b"\xff\xfb")])
async def test_speech_comes_back_as_real_audio_of_the_asked_format(
    llm: FakeLLMServer, audio_format: str, magic: bytes
) -> None:
    """``/audio/speech`` is asked for the platform's format and its bytes are measured."""
    async with speech_client(llm) as speech:
        spoken = await speech.speak("早点睡，明天还要考试呢", audio_format=audio_format)
    [asked] = llm.speech_requests
    assert (asked["model"], asked["voice"], asked["input"]) == (
        "tts-1",
        "alloy",
        "早点睡，明天还要考试呢",
    )
    assert asked["response_format"] == audio_format
    assert spoken.data[:4].startswith(magic)
    assert round(spoken.duration_s or 0, 1) == 2.2  # the fake speaks 5 characters a second


async def test_speech_answering_html_is_no_voice(llm: FakeLLMServer) -> None:
    """An HTML page served with 200 (a proxy's) is refused as no audio, not sent on."""
    llm.speech_respond("<html><body>Bad gateway</body></html>")
    async with speech_client(llm) as speech:
        with pytest.raises(BadLLMReply, match="answered no audio"):
            await speech.speak("好", audio_format="opus")


async def test_a_provider_without_audio_endpoints_says_so_without_its_key(
    llm: FakeLLMServer,
) -> None:
    """404 from both endpoints is LLMUnavailable naming the status, never the key."""
    llm.audio_endpoints = False
    async with speech_client(llm) as speech:
        with pytest.raises(LLMUnavailable) as heard:
            await speech.transcribe(Audio(audio.mp3(1.0), "voice.mp3", 1.0))
        with pytest.raises(LLMUnavailable) as spoken:
            await speech.speak("好", audio_format="mp3")
    for error in (heard.value, spoken.value):
        assert "HTTP 404" in str(error)
        assert TEST_KEY not in str(error)


async def test_an_oga_upload_is_refused_by_the_fake_as_by_openai(llm: FakeLLMServer) -> None:
    """The fake refuses a file name OpenAI refuses, so the ``voice.ogg`` naming is tested."""
    async with speech_client(llm) as speech:
        with pytest.raises(LLMUnavailable, match="Unsupported file format oga"):
            await speech.transcribe(Audio(audio.ogg_opus(1.0), "voice.oga", 1.0))
