"""Speak the model's voice items: synthesised just before they are sent, or sent as text.

A ``voice`` item is spoken by the speech endpoint when its turn comes, in the format its
platform sends (Telegram's ``sendVoice`` takes Ogg/Opus, a QQ record MP3). Its words go
out as a text message instead when they are longer than ``voice.max_chars``, when the
synthesis fails (an endpoint that is down, answers HTML, or has no audio endpoints at
all), or when the platform refuses the voice message: never lost, and sent once, since
the sender sends what replaces a refused item only after that refusal (the outbox
records which form went out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from loguru import logger

from bot.config.settings import Settings
from bot.errors import LLMError
from bot.models import ChatKey
from bot.replies.items import ItemKind, Outgoing, Text, Voice
from bot.voice.ports import Speech


class Speaking:
    """The sender's hooks for voice items (see :class:`bot.replies.hooks.ItemHooks`)."""

    def __init__(self, config: Settings, speech: Speech, formats: Mapping[str, str]) -> None:
        """``formats`` names the audio format each platform sends voice notes in."""
        self._config = config
        self._speech = speech
        self._formats = formats

    def kind_sent(self, chat: ChatKey, item: Outgoing) -> ItemKind:
        """A voice item goes out as voice where it can be spoken, else as text."""
        if isinstance(item, Voice) and self._speaks(chat, item) is None:
            return ItemKind.VOICE
        return ItemKind.CONTENT if isinstance(item, Voice) else item.kind

    async def prepare(self, chat: ChatKey, item: Outgoing) -> Outgoing | None:
        """Speak a voice item in its platform's format; its words as text if that fails."""
        if not isinstance(item, Voice):
            return item
        log = logger.bind(chat=str(chat))
        why_not = self._speaks(chat, item)
        if why_not is not None:
            log.info("voice item sent as text: {}", why_not)
            return Text(item.text)
        audio_format = self._formats[chat.platform]
        try:
            audio = await self._speech.speak(item.text, audio_format=audio_format)
        except LLMError as exc:
            log.warning("voice item sent as text: speech failed ({})", exc)
            return Text(item.text)
        return dataclasses.replace(item, audio=audio.data, duration_s=audio.duration_s)

    def instead(self, item: Outgoing) -> Outgoing | None:
        """A voice note the platform refused goes as its words."""
        return Text(item.text) if isinstance(item, Voice) else None

    async def delivered(self, chat: ChatKey, item: Outgoing) -> None:
        return None

    def _speaks(self, chat: ChatKey, item: Voice) -> str | None:
        """Return why ``item`` cannot be spoken in ``chat``; ``None`` if it can."""
        if not self._config.for_chat(chat).speak:
            return "voice.speak is off"
        if chat.platform not in self._formats:
            return f"{chat.platform} sends no voice notes"
        limit = self._config.voice.max_chars
        if len(item.text) > limit:
            return f"{len(item.text)} characters, more than voice.max_chars = {limit}"
        return None
