"""Fetch a Telegram voice note (or audio file) by its ``file_id`` when it is to be heard.

The download is the bot's one :class:`~adapters.telegram.files.TelegramFiles` (the file
URL holds the bot token and never leaves it); :mod:`adapters.audio` tells the format and
length from the bytes. Telegram's voice notes are Ogg/Opus files named ``.oga``, an
ending some transcription endpoints refuse: they go up as ``voice.ogg``. The bot's own
voice goes out through ``sendVoice`` as Ogg/Opus, the format Telegram shows as a voice
bubble.
"""

from __future__ import annotations

import asyncio
from typing import Final

from adapters.audio import MAX_BYTES, voice_audio
from adapters.telegram.files import TelegramFiles
from bot.errors import VoiceUnavailable
from bot.models import VoiceNote
from bot.voice.ports import Audio

SPEECH_FORMAT: Final = "opus"
"""What the speech endpoint is asked for: ``sendVoice`` shows Ogg/Opus as a voice note."""


class TelegramVoice:
    """The :class:`bot.voice.ports.VoiceSource` of Telegram: ``getFile``, download, measure."""

    def __init__(self, files: TelegramFiles) -> None:
        self._files = files

    async def fetch(self, note: VoiceNote) -> Audio:
        """Download the voice note behind ``note.ref``; raise ``VoiceUnavailable``."""
        data = await self._files.download(
            note.ref, max_bytes=MAX_BYTES, what="voice note", unavailable=VoiceUnavailable
        )
        return await asyncio.to_thread(voice_audio, data)
