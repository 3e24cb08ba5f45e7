"""The official QQ bot's pictures and voice notes, fetched by URL when a batch needs them.

Both come as attachments whose URLs point at the platform's media hosts; they are
downloaded by the bot's one :class:`~adapters.qq.fetch.SafeFetch` under the picture rules
(public addresses only, redirects checked, a size cap, 10 s). A voice note is fetched as
the platform's WAV of it (``voice_wav_url``) where the event gave one, else as its SILK,
which :mod:`adapters.audio` decodes.
"""

from __future__ import annotations

import asyncio

from adapters.audio import MAX_BYTES, voice_audio
from adapters.qq.fetch import SafeFetch
from bot.errors import VoiceUnavailable
from bot.models import VoiceNote
from bot.voice.ports import Audio


class QQBotVoice:
    """The :class:`bot.voice.ports.VoiceSource` of the official QQ bot: download by URL."""

    def __init__(self, fetch: SafeFetch) -> None:
        self._fetch = fetch

    async def fetch(self, note: VoiceNote) -> Audio:
        """Return the note's audio, measured; raise ``VoiceUnavailable``."""
        url = note.url or note.ref
        if not url:
            msg = "the voice note has no URL to download"
            raise VoiceUnavailable(msg)
        data = await self._fetch.fetch_bytes(
            url, max_bytes=MAX_BYTES, what="QQ bot voice note", unavailable=VoiceUnavailable
        )
        return await asyncio.to_thread(voice_audio, data)
