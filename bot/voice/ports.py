"""What voice needs from the outside: each platform's voice notes, a speech endpoint, a store.

:class:`VoiceSource` fetches one platform's voice notes; :class:`Speech` is the
OpenAI-compatible audio endpoint pair (``/audio/transcriptions``, ``/audio/speech``);
:class:`TranscriptStore` keeps what was heard with its message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.models import ChatKey, StoredMessage, VoiceNote


@dataclass(frozen=True, slots=True)
class Audio:
    """A voice file in hand: its bytes, a file name whose extension names its format
    (``voice.ogg``, ``speech.mp3``) and its length, when it could be read."""

    data: bytes = field(repr=False)
    filename: str
    duration_s: float | None = None


class VoiceSource(Protocol):
    """Where one platform's voice notes are fetched from when they are to be heard."""

    async def fetch(self, note: VoiceNote) -> Audio:
        """Fetch ``note`` as audio a transcription endpoint takes, with its length.

        Raise ``VoiceUnavailable`` when it cannot be fetched, is too big, or is not audio
        that can be sent on; the message then keeps its placeholder.
        """
        ...


class Speech(Protocol):
    """An OpenAI-compatible pair of audio endpoints: speech to text, and text to speech."""

    async def transcribe(self, audio: Audio) -> str:
        """Return the words spoken in ``audio``; raise an ``LLMError`` when that fails."""
        ...

    async def speak(self, text: str, *, audio_format: str) -> Audio:
        """Return ``text`` spoken, as ``audio_format`` (``opus``, ``mp3``).

        Raise an ``LLMError`` when the endpoint fails or answers with anything but audio
        of that format.
        """
        ...


class TranscriptStore(Protocol):
    """Where what was heard in a voice note is kept, with its message."""

    async def keep_transcript(
        self, chat: ChatKey, message_id: str, *, transcript: str, text: str | None
    ) -> None:
        """Keep ``transcript`` ("" when nothing could be heard) and, if given, the
        message's new ``text`` (the transcript where the placeholder stood)."""
        ...

    async def unheard_voice_notes(self) -> Sequence[StoredMessage]:
        """Return the waiting messages whose voice note was never heard nor given up on."""
        ...
