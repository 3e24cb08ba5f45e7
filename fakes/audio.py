"""Voice files for tests and benchmarks, made on the spot: real Ogg/Opus, MP3, WAV and SILK.

Every file is silence, but a real stream of its format that a decoder plays and
``mutagen`` measures: an Ogg/Opus stream (``OpusHead`` and ``OpusTags`` pages, then
20 ms Opus frames of digital silence, each page with its Ogg CRC), MPEG-1 Layer III
frames at 32 kbit/s, a PCM WAV (stdlib ``wave``) and a QQ-style SILK v3 stream
(``silk-python``). ``truncated`` cuts any of them short, as a broken upload would.
"""

from __future__ import annotations

import io
import struct
import wave

import pysilk

OPUS_RATE = 48_000
OPUS_PRE_SKIP = 312
OPUS_SILENCE = b"\xf8\xff\xfe"  # one 20 ms CELT frame of silence (TOC 0xF8: fullband, mono)
_OPUS_FRAME_SAMPLES = 960
_FRAMES_PER_PAGE = 50  # one second of audio per page
_SERIAL = 0x7061_6365

_MP3_HEADER = b"\xff\xfb\x10\xc4"  # MPEG-1 Layer III, 32 kbit/s, 44.1 kHz, no CRC, mono
_MP3_FRAME_BYTES = 104  # 144 * 32000 / 44100, no padding
_MP3_FRAME_S = 1152 / 44_100

WAV_RATE = 16_000
SILK_RATE = 24_000


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
        table.append(crc & 0xFFFFFFFF)
    return table


_CRC_TABLE = _crc_table()


def _ogg_crc(data: bytes) -> int:
    """Return the CRC-32 Ogg puts in a page (polynomial 0x04C11DB7, not reflected)."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC_TABLE[((crc >> 24) & 0xFF) ^ byte]
    return crc


def _ogg_page(packets: list[bytes], *, granule: int, sequence: int, flags: int) -> bytes:
    """Return one Ogg page holding whole ``packets`` (each under 255 bytes)."""
    lacing = bytes(len(packet) for packet in packets)
    header = struct.pack(
        "<4sBBqIIIB", b"OggS", 0, flags, granule, _SERIAL, sequence, 0, len(packets)
    )
    page = header + lacing + b"".join(packets)
    crc = _ogg_crc(page)
    return page[:22] + struct.pack("<I", crc) + page[26:]


def ogg_opus(seconds: float) -> bytes:
    """Return ``seconds`` of silence as an Ogg/Opus stream, as Telegram's voice notes are."""
    head = struct.pack("<8sBBHIhB", b"OpusHead", 1, 1, OPUS_PRE_SKIP, OPUS_RATE, 0, 0)
    vendor = b"pacebot fakes"
    tags = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
    pages = [
        _ogg_page([head], granule=0, sequence=0, flags=0x02),
        _ogg_page([tags], granule=0, sequence=1, flags=0),
    ]
    frames = max(1, round(seconds * OPUS_RATE / _OPUS_FRAME_SAMPLES))
    written = 0
    while written < frames:
        count = min(_FRAMES_PER_PAGE, frames - written)
        written += count
        last = written == frames
        pages.append(
            _ogg_page(
                [OPUS_SILENCE] * count,
                granule=OPUS_PRE_SKIP + written * _OPUS_FRAME_SAMPLES,
                sequence=len(pages),
                flags=0x04 if last else 0,
            )
        )
    return b"".join(pages)


def mp3(seconds: float) -> bytes:
    """Return ``seconds`` of silence as MPEG-1 Layer III frames (what OpenAI's ``mp3`` is)."""
    frame = _MP3_HEADER + bytes(_MP3_FRAME_BYTES - len(_MP3_HEADER))
    return frame * max(1, round(seconds / _MP3_FRAME_S))


def pcm(seconds: float, rate: int) -> bytes:
    """Return ``seconds`` of 16-bit mono silence at ``rate`` Hz, as raw samples."""
    return bytes(2 * round(seconds * rate))


def wav(seconds: float) -> bytes:
    """Return ``seconds`` of silence as a 16-bit mono PCM WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(WAV_RATE)
        file.writeframes(pcm(seconds, WAV_RATE))
    return out.getvalue()


def silk(seconds: float) -> bytes:
    """Return ``seconds`` of silence as QQ's SILK v3 voice bytes (``\\x02#!SILK_V3``)."""
    out = io.BytesIO()
    pysilk.encode(io.BytesIO(pcm(seconds, SILK_RATE)), out, SILK_RATE, 24_000, tencent=True)
    return out.getvalue()


def truncated(data: bytes, *, keep: int = 40) -> bytes:
    """Return the first ``keep`` bytes of a file: a header and nothing that plays."""
    return data[:keep]
