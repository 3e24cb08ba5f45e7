"""Know a voice file by its bytes: its format and its length, and decode QQ's SILK.

Every voice note and every synthesised voice passes through here. The format comes from
the file's own first bytes, never from a name or a MIME type a sender chose; the length
from ``mutagen`` (imported with the first voice note), which reads headers and pages
without decoding the audio. A file that
is empty, cut short or not audio at all is refused here, before anything is uploaded.
QQ's own voice bytes are SILK (``#!SILK_V3``), which no transcription endpoint takes:
they are decoded to a WAV with ``silk-python``. AMR, QQ's older voice format, needs
ffmpeg, which pacebot does not bring: such a note keeps its placeholder.
"""

from __future__ import annotations

import importlib
import io
import wave
from typing import Final

import pysilk

from bot.errors import VoiceUnavailable
from bot.voice.ports import Audio

MAX_BYTES: Final = 25 * 1024 * 1024
"""The largest voice file sent to be transcribed: what OpenAI's endpoint takes."""
SILK_RATE: Final = 24_000
"""The sample rate SILK voice is decoded at (QQ records at 24 kHz)."""
SILK_BIT_RATE: Final = 24_000
"""The bit rate the bot's own SILK voice is encoded at, in bits per second."""

# mutagen's reader of each format, by module and class: imported with the first voice note
# (about 1 MiB that a bot without voice never needs).
_READERS: Final = {
    "opus": ("mutagen.oggopus", "OggOpus"),
    "vorbis": ("mutagen.oggvorbis", "OggVorbis"),
    "mp3": ("mutagen.mp3", "MP3"),
    "wav": ("mutagen.wave", "WAVE"),
    "flac": ("mutagen.flac", "FLAC"),
    "m4a": ("mutagen.mp4", "MP4"),
}
_EXTENSIONS: Final = {"opus": "ogg", "vorbis": "ogg"}  # what a transcription endpoint knows


def sniff(data: bytes) -> str | None:
    """Return the audio format ``data`` starts like (``opus``, ``mp3``, ``wav``, ``silk``,
    ``amr``, …); ``None`` if it looks like none."""
    head = data[:64]
    if head.startswith(b"OggS"):
        return "opus" if b"OpusHead" in head else "vorbis" if b"\x01vorbis" in head else None
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"fLaC"):
        return "flac"
    if head[4:8] == b"ftyp":
        return "m4a"
    if head.lstrip(b"\x02").startswith(b"#!SILK"):
        return "silk"
    if head.startswith(b"#!AMR"):
        return "amr"
    return None


def duration_s(data: bytes, audio_format: str) -> float:
    """Return how long ``data`` (of ``audio_format``) plays, in seconds.

    Raise ``VoiceUnavailable`` when it does not read as that format (cut short, broken).
    """
    where = _READERS.get(audio_format)
    if where is None:
        msg = f"the length of {audio_format} audio cannot be read"
        raise VoiceUnavailable(msg)
    from mutagen import MutagenError

    reader = getattr(importlib.import_module(where[0]), where[1])
    try:
        info: object = reader(io.BytesIO(data)).info
    except (MutagenError, ValueError, EOFError, OSError, IndexError) as exc:
        msg = f"the {audio_format} file is broken or cut short ({type(exc).__name__})"
        raise VoiceUnavailable(msg) from None
    length = getattr(info, "length", 0.0)
    if not isinstance(length, int | float) or length <= 0:
        msg = f"the {audio_format} file holds no audio"
        raise VoiceUnavailable(msg)
    return float(length)


def silk_to_wav(data: bytes) -> bytes:
    """Decode SILK voice bytes to a 16-bit mono WAV; raise ``VoiceUnavailable``."""
    pcm = io.BytesIO()
    try:
        pysilk.decode(io.BytesIO(data), pcm, SILK_RATE)
    except (pysilk.SilkError, ValueError, OSError) as exc:
        msg = f"the SILK voice does not decode ({exc})"
        raise VoiceUnavailable(msg) from None
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(SILK_RATE)
        file.writeframes(pcm.getvalue())
    return out.getvalue()


def wav_to_silk(data: bytes) -> bytes:
    """Encode a 16-bit mono WAV as QQ's SILK voice; raise ``VoiceUnavailable``.

    CPU work: call it in a worker thread.
    """
    try:
        with wave.open(io.BytesIO(data), "rb") as file:
            if file.getsampwidth() != 2 or file.getnchannels() != 1:
                msg = "the WAV is not 16-bit mono"
                raise VoiceUnavailable(msg)
            rate, pcm = file.getframerate(), file.readframes(file.getnframes())
    except (wave.Error, EOFError) as exc:
        msg = f"the WAV does not read ({exc})"
        raise VoiceUnavailable(msg) from None
    silk = io.BytesIO()
    try:
        pysilk.encode(io.BytesIO(pcm), silk, rate, SILK_BIT_RATE, tencent=True)
    except (pysilk.SilkError, ValueError, OSError) as exc:
        msg = f"the voice does not encode as SILK ({exc})"
        raise VoiceUnavailable(msg) from None
    return silk.getvalue()


def voice_audio(data: bytes, *, name: str = "voice") -> Audio:
    """Return a voice note's bytes as audio a transcription endpoint takes, measured.

    SILK is decoded to WAV first (CPU work: call it in a worker thread). Raise
    ``VoiceUnavailable`` for a file that is empty, over ``MAX_BYTES``, of no format an
    endpoint takes, or broken.
    """
    if not data:
        msg = "the voice file is empty"
        raise VoiceUnavailable(msg)
    if len(data) > MAX_BYTES:
        msg = f"the voice file is {len(data)} bytes, more than the {MAX_BYTES} allowed"
        raise VoiceUnavailable(msg)
    audio_format = sniff(data)
    if audio_format == "silk":
        data, audio_format = silk_to_wav(data), "wav"
    if audio_format == "amr":
        msg = "AMR voice cannot be decoded here (it needs ffmpeg)"
        raise VoiceUnavailable(msg)
    if audio_format is None:
        msg = "the voice file is not audio of a known format"
        raise VoiceUnavailable(msg)
    length = duration_s(data, audio_format)
    extension = _EXTENSIONS.get(audio_format, audio_format)
    return Audio(data, f"{name}.{extension}", length)
