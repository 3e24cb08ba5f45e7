"""Fetch a QQ voice note (a ``record`` segment) when it is to be heard.

First the OneBot action ``get_record`` with ``out_format = "mp3"``: NapCat converts the
note and answers its bytes in ``base64`` (or a ``file`` path, read when this process can
read it, e.g. NapCat on the same host). An implementation without the action (Lagrange,
go-cqhttp), a failed conversion, or an answer that is no audio, and the segment's ``url``
is downloaded instead by the bot's one :class:`~adapters.qq.fetch.SafeFetch`, under the
picture rules: its SILK bytes are decoded by :mod:`adapters.audio`. The bot's own voice
goes out as MP3 in a ``record`` segment, which NapCat and Lagrange both take.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from loguru import logger

from adapters.audio import MAX_BYTES, voice_audio
from adapters.qq.fetch import SafeFetch
from bot.errors import VoiceUnavailable
from bot.models import VoiceNote
from bot.voice.ports import Audio

SPEECH_FORMAT: Final = "mp3"
"""What the speech endpoint is asked for: every OneBot implementation sends MP3 records."""

CallAction = Callable[..., Awaitable[Any]]
"""Call a OneBot action by name with keyword parameters; return its ``data``."""


class QQVoice:
    """The :class:`bot.voice.ports.VoiceSource` of QQ: ``get_record``, else the URL."""

    def __init__(self, call: CallAction, fetch: SafeFetch) -> None:
        self._call = call
        self._fetch = fetch

    async def fetch(self, note: VoiceNote) -> Audio:
        """Return the note's audio, measured; raise ``VoiceUnavailable``."""
        converted = await self._converted(note)
        if converted is not None:
            try:
                return await asyncio.to_thread(voice_audio, converted)
            except VoiceUnavailable as exc:  # NapCat's fallback converter can make noise
                logger.info("QQ: get_record gave no usable audio ({}); trying the URL", exc)
        if not note.url:
            msg = "QQ voice note has no URL to download, and get_record gave nothing"
            raise VoiceUnavailable(msg)
        data = await self._fetch.fetch_bytes(
            note.url, max_bytes=MAX_BYTES, what="QQ voice note", unavailable=VoiceUnavailable
        )
        return await asyncio.to_thread(voice_audio, data)

    async def _converted(self, note: VoiceNote) -> bytes | None:
        """Ask the implementation for the note as MP3; ``None`` if it cannot say."""
        try:
            data = await self._call("get_record", file=note.ref, out_format="mp3")
        except Exception as exc:  # an action it lacks, a failure, a timeout: try the URL
            logger.debug("QQ: get_record failed ({}: {})", type(exc).__name__, exc)
            return None
        if not isinstance(data, dict):
            return None
        encoded = data.get("base64")
        if isinstance(encoded, str) and encoded:
            try:
                return base64.b64decode(encoded.removeprefix("base64://"), validate=True)
            except (binascii.Error, ValueError):
                logger.info("QQ: get_record answered base64 that does not decode")
        path = data.get("file")
        return await asyncio.to_thread(_readable, path) if isinstance(path, str) else None


def _readable(path: str) -> bytes | None:
    """Read a converted file's bytes where this process can; ``None`` where it cannot."""
    file = Path(path)
    try:
        if not file.is_file() or file.stat().st_size > MAX_BYTES:
            return None
        return file.read_bytes()
    except OSError:
        return None
