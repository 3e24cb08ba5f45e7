"""Open what voice needs when ``[voice]`` transcribes or speaks: the speech endpoint, and
the voice notes of the running platforms.

With voice off nothing is built, so no voice note is ever downloaded and no audio
endpoint called; with ``transcribe`` off the platforms' voice sources are not built
either. The ``openai`` SDK loads on the first audio call (:class:`DeferredSpeech`); each
platform's source is imported only when that platform runs (the Telegram one loads PTB).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

from adapters.deferred import DeferredSpeech
from adapters.wiring import VoiceParts
from bot.config import Config
from bot.ports import Platform
from bot.secrets import Secrets
from bot.voice.ports import VoiceSource

if TYPE_CHECKING:
    from adapters.openai_audio import OpenAIAudio


def _speech(config: Config, api_key: str) -> OpenAIAudio:
    from adapters.openai_audio import OpenAIAudio

    return OpenAIAudio.from_config(config, api_key=api_key)


@contextlib.asynccontextmanager
async def opened_voice(
    config: Config, secrets: Secrets, platforms: Mapping[str, Platform]
) -> AsyncIterator[VoiceParts | None]:
    """Yield what voice needs (``None`` with voice off); close it all on exit."""
    if not config.voice.enabled or secrets.voice_api_key is None:
        yield None
        return
    async with contextlib.AsyncExitStack() as stack:
        speech = DeferredSpeech(functools.partial(_speech, config, secrets.voice_api_key))
        stack.push_async_callback(speech.aclose)
        sources: dict[str, VoiceSource] = {}
        formats: dict[str, str] = {}
        if "telegram" in platforms and secrets.telegram_token:
            from adapters.telegram.voice import SPEECH_FORMAT, TelegramVoice

            formats["telegram"] = SPEECH_FORMAT
            if config.voice.transcribe:
                telegram = TelegramVoice(
                    token=secrets.telegram_token, api_base_url=config.telegram.api_base_url
                )
                stack.push_async_callback(telegram.aclose)
                sources["telegram"] = telegram
        qq = platforms.get("qq")
        if qq is not None:
            from adapters.qq.fetch import SafeFetch
            from adapters.qq.platform import QQPlatform
            from adapters.qq.voice import SPEECH_FORMAT as QQ_FORMAT
            from adapters.qq.voice import QQVoice

            formats["qq"] = QQ_FORMAT
            if config.voice.transcribe and isinstance(qq, QQPlatform):
                fetch = SafeFetch(allow_private_hosts=config.qq.allow_private_image_hosts)
                stack.push_async_callback(fetch.aclose)
                sources["qq"] = QQVoice(qq.call, fetch)
        yield VoiceParts(speech, sources, formats)
