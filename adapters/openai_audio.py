"""Hear and speak through OpenAI-compatible audio endpoints with the official ``openai`` SDK.

:class:`OpenAIAudio` implements :class:`bot.voice.ports.Speech`: ``transcribe`` uploads
a voice note to ``/audio/transcriptions`` as a multipart file whose name carries its
format (``voice.ogg``: a bare upload is named "upload" and its format goes unrecognised),
``speak`` asks ``/audio/speech`` for ``opus`` or ``mp3`` and checks that what came back
is audio of that format (an HTML error page served with 200 is not). These are audio
calls, never chat completions: a batch still makes exactly one of those. Failures become
``LLMUnavailable`` or ``BadLLMReply`` without the key.
"""

from __future__ import annotations

from typing import Final, Literal, Self

import httpx2
import openai

from adapters.audio import duration_s, sniff
from adapters.openai_llm import SdkClient, endpoint_name, unavailable
from bot.config.model import Config
from bot.errors import BadLLMReply, LLMError, VoiceUnavailable
from bot.voice.ports import Audio

_MIME_TYPES: Final = {
    "ogg": "audio/ogg",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
}
_SPOKEN_AS: Final = {"opus": "ogg", "mp3": "mp3", "wav": "wav"}  # a format → the file's ending
_RESPONSE_FORMATS: Final[dict[str, Literal["opus", "mp3", "wav"]]] = {
    "opus": "opus",
    "mp3": "mp3",
    "wav": "wav",
}
TRANSCRIPTION_TIMEOUT_S: Final = 120.0
"""How long one transcription may take at least: a batch waits ``llm.timeout_s`` at most
for it, but its words, heard later, still reach the history."""


class OpenAIAudio(SdkClient):
    """Transcription and speech models behind the real ``openai.AsyncOpenAI`` client."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        stt_model: str,
        tts_model: str,
        tts_voice: str,
        timeout_s: float,
        max_retries: int,
        transcription_timeout_s: float | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        """``timeout_s`` bounds a synthesis, ``transcription_timeout_s`` (default the
        same) a transcription."""
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            http_client=http_client,
            empty_key="voice: the API key of the audio endpoints is empty",
        )
        self._transcription_timeout_s = transcription_timeout_s or timeout_s
        self._stt_model = stt_model
        self._tts_model = tts_model
        self._tts_voice = tts_voice
        self._endpoint = endpoint_name(base_url)

    @classmethod
    def from_config(cls, config: Config, *, api_key: str) -> Self:
        """Build it from ``[voice]``, an empty base URL taken from ``[llm]``."""
        voice = config.voice
        return cls(
            base_url=voice.base_url or config.llm.base_url,
            api_key=api_key,
            stt_model=voice.stt_model,
            tts_model=voice.tts_model,
            tts_voice=voice.tts_voice,
            timeout_s=config.llm.timeout_s,
            max_retries=config.llm.max_retries,
            transcription_timeout_s=max(config.llm.timeout_s, TRANSCRIPTION_TIMEOUT_S),
        )

    async def transcribe(self, audio: Audio) -> str:
        """Return the words spoken in ``audio``; raise an ``LLMError``."""
        where = f"transcription {self._stt_model} at {self._endpoint}"
        extension = audio.filename.rsplit(".", 1)[-1]
        mime_type = _MIME_TYPES.get(extension, "application/octet-stream")
        upload = (audio.filename, audio.data, mime_type)
        failure: LLMError | None = None
        try:
            words: object = await self._client.audio.transcriptions.create(
                model=self._stt_model,
                file=upload,
                response_format="text",
                timeout=self._transcription_timeout_s,
            )
        except openai.OpenAIError as exc:
            # Raised outside the except block: a chained SDK error may echo the key.
            failure = unavailable(exc, where=where, secret=self._api_key)
        if failure is not None:
            raise failure
        if not isinstance(words, str):
            msg = f"{where} answered with no text"
            raise BadLLMReply(msg)
        return words.strip()

    async def speak(self, text: str, *, audio_format: str) -> Audio:
        """Return ``text`` spoken as ``audio_format`` (``opus``, ``mp3``, ``wav``); raise an
        ``LLMError``."""
        where = f"speech {self._tts_model} at {self._endpoint}"
        if audio_format not in _SPOKEN_AS:
            msg = f"{where}: pacebot sends no {audio_format} voice"
            raise BadLLMReply(msg)
        failure: LLMError | None = None
        try:
            response = await self._client.audio.speech.create(
                model=self._tts_model,
                voice=self._tts_voice,
                input=text,
                response_format=_RESPONSE_FORMATS[audio_format],
            )
            data = await response.aread()
        except openai.OpenAIError as exc:
            failure = unavailable(exc, where=where, secret=self._api_key)
        if failure is not None:
            raise failure
        return _checked(data, audio_format, where)


def _checked(data: bytes, audio_format: str, where: str) -> Audio:
    """Return what a speech endpoint answered as audio, if it is ``audio_format``."""
    found = sniff(data)
    if found != audio_format:
        shown = data[:20].decode("utf-8", "replace").strip() or "nothing"
        msg = f"{where} answered {found or 'no audio'} ({shown!r}…), not {audio_format} audio"
        raise BadLLMReply(msg)
    try:
        length = duration_s(data, audio_format)
    except VoiceUnavailable as exc:
        msg = f"{where} answered broken {audio_format} audio: {exc}"
        raise BadLLMReply(msg) from None
    return Audio(data, f"speech.{_SPOKEN_AS[audio_format]}", length)
