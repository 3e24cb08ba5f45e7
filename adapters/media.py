"""Open what the running platforms' pictures, stickers and voice need, for what is on.

Each platform downloads its files through one HTTP client, opened once here and closed on
exit: a :class:`~adapters.telegram.files.TelegramFiles` (one PTB ``Bot``) for Telegram, a
:class:`~adapters.qq.fetch.SafeFetch` for QQ and one for the official QQ bot (whose media
are on the platform's public hosts: no private address is allowed for it). Pictures for
the model (``llm.vision``), the stickers of collections (``[stickers]``) and voice notes
to hear (``[voice] transcribe``) are thin views over it, and its pool is big enough that a
sticker or a voice note never queues behind a batch's pictures. Telegram keeps stickers
by id and fetches one only to draw it on the dashboard; QQ downloads them to keep.

A feature that is off gets nothing built, so nothing can be downloaded for it; a platform
none of them needs gets no client. With voice on, the speech endpoint is opened here too
(the ``openai`` SDK loads on the first audio call, :class:`DeferredSpeech`). Each
platform's client is imported only when that platform runs (the Telegram one loads PTB).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from adapters.deferred import DeferredSpeech
from adapters.wiring import VoiceParts
from bot.config.model import Config
from bot.ports import PictureSource, Platform
from bot.secrets import Secrets
from bot.stickers import StickerSource
from bot.voice.ports import VoiceSource

if TYPE_CHECKING:
    from adapters.openai_audio import OpenAIAudio


@dataclass(frozen=True, slots=True)
class Media:
    """What the core takes of the running platforms' files: their picture and sticker
    sources, and what voice needs (``None`` with voice off)."""

    pictures: Mapping[str, PictureSource]
    stickers: Mapping[str, StickerSource]
    voice: VoiceParts | None


@dataclass(frozen=True, slots=True)
class _Wanted:
    """Which files the features that are on download, and whether voice is on at all."""

    pictures: bool
    stickers: bool
    voice_notes: bool
    voice: bool

    @classmethod
    def of(cls, config: Config, secrets: Secrets) -> _Wanted:
        voice = config.voice.enabled and secrets.voice_api_key is not None
        return cls(
            pictures=config.llm.vision,
            stickers=config.stickers.enabled,
            voice_notes=voice and config.voice.transcribe,
            voice=voice,
        )


@dataclass(slots=True)
class _Sources:
    """The views built so far, by platform, and the audio format each platform sends."""

    pictures: dict[str, PictureSource] = field(default_factory=dict)
    stickers: dict[str, StickerSource] = field(default_factory=dict)
    voice_notes: dict[str, VoiceSource] = field(default_factory=dict)
    speech_formats: dict[str, str] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def opened_media(
    config: Config, secrets: Secrets, platforms: Mapping[str, Platform]
) -> AsyncIterator[Media]:
    """Yield the running platforms' media, one client each, for what is on; close them."""
    wanted = _Wanted.of(config, secrets)
    sources = _Sources()
    async with contextlib.AsyncExitStack() as stack:
        if "telegram" in platforms and secrets.telegram_token:
            _add_telegram(config, secrets.telegram_token, wanted, sources, stack)
        qq = platforms.get("qq")
        if qq is not None:
            _add_qq(config, qq, wanted, sources, stack)
        if "qqbot" in platforms:
            _add_qqbot(wanted, sources, stack)
            if wanted.voice:
                from adapters.qqbot.outbound import SPEECH_FORMAT

                sources.speech_formats["qqbot"] = SPEECH_FORMAT
        voice = None
        if wanted.voice and secrets.voice_api_key is not None:
            speech = DeferredSpeech(functools.partial(_speech, config, secrets.voice_api_key))
            stack.push_async_callback(speech.aclose)
            voice = VoiceParts(speech, sources.voice_notes, sources.speech_formats)
        yield Media(sources.pictures, sources.stickers, voice)


def _add_telegram(
    config: Config,
    token: str,
    wanted: _Wanted,
    sources: _Sources,
    stack: contextlib.AsyncExitStack,
) -> None:
    """Add Telegram's views over one :class:`TelegramFiles`, if any feature needs one."""
    if wanted.voice:
        from adapters.telegram.voice import SPEECH_FORMAT

        sources.speech_formats["telegram"] = SPEECH_FORMAT
    if not (wanted.pictures or wanted.stickers or wanted.voice_notes):
        return
    from adapters.telegram.files import TelegramFiles
    from adapters.telegram.pictures import TelegramPictures
    from adapters.telegram.stickers import TelegramStickers
    from adapters.telegram.voice import TelegramVoice

    files = TelegramFiles(token=token, api_base_url=config.telegram.api_base_url)
    stack.push_async_callback(files.aclose)
    if wanted.pictures:
        sources.pictures["telegram"] = TelegramPictures(files)
    if wanted.stickers:
        sources.stickers["telegram"] = TelegramStickers(files)
    if wanted.voice_notes:
        sources.voice_notes["telegram"] = TelegramVoice(files)


def _add_qq(
    config: Config,
    qq: Platform,
    wanted: _Wanted,
    sources: _Sources,
    stack: contextlib.AsyncExitStack,
) -> None:
    """Add QQ's views over one :class:`SafeFetch`, if any feature needs one.

    Hearing a voice note asks the OneBot implementation first, so it needs the running
    :class:`QQPlatform` to call it through.
    """
    if wanted.voice:
        from adapters.qq.voice import SPEECH_FORMAT

        sources.speech_formats["qq"] = SPEECH_FORMAT
    call = None
    if wanted.voice_notes:
        from adapters.qq.platform import QQPlatform

        call = qq.call if isinstance(qq, QQPlatform) else None
    if not (wanted.pictures or wanted.stickers or call is not None):
        return
    from adapters.qq.fetch import SafeFetch
    from adapters.qq.pictures import QQPictures
    from adapters.qq.stickers import QQStickers
    from adapters.qq.voice import QQVoice

    fetch = SafeFetch(allow_private_hosts=config.qq.allow_private_image_hosts)
    stack.push_async_callback(fetch.aclose)
    if wanted.pictures:
        sources.pictures["qq"] = QQPictures(fetch)
    if wanted.stickers:
        sources.stickers["qq"] = QQStickers(QQPictures(fetch), config.stickers_dir)
    if call is not None:
        sources.voice_notes["qq"] = QQVoice(call, fetch)


def _add_qqbot(wanted: _Wanted, sources: _Sources, stack: contextlib.AsyncExitStack) -> None:
    """Add the official QQ bot's views over a :class:`SafeFetch` of its own, if needed.

    Its media hosts are the platform's, public: no private address is ever fetched for it.
    """
    if not (wanted.pictures or wanted.voice_notes):
        return
    from adapters.qq.fetch import SafeFetch
    from adapters.qq.pictures import QQPictures
    from adapters.qqbot.media import QQBotVoice

    fetch = SafeFetch(allow_private_hosts=False, allowed_by=None)
    stack.push_async_callback(fetch.aclose)
    if wanted.pictures:
        sources.pictures["qqbot"] = QQPictures(fetch)
    if wanted.voice_notes:
        sources.voice_notes["qqbot"] = QQBotVoice(fetch)


def _speech(config: Config, api_key: str) -> OpenAIAudio:
    from adapters.openai_audio import OpenAIAudio

    return OpenAIAudio.from_config(config, api_key=api_key)
