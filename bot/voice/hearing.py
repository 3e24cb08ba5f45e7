"""Hear voice notes: each transcribed once, beside the debounce wait, into its message's text.

Hearing starts when a message with a voice note is stored (the composition root builds
it only with ``voice.transcribe`` on; off, nothing is fetched at all), a few at a time,
and runs while the chat's quiet wait runs. The batch then waits at most
``llm.timeout_s`` for the notes still being heard (:meth:`Hearing.heard`); one not heard
by then, one that fails, or one longer than ``voice.max_seconds`` keeps its placeholder
and the batch is answered all the same. What was heard is stored with the message as its
text (``[voice 0:07] 转写内容``), so every later prompt, summary and recall reads the words;
a note heard after its batch was answered still reaches the history that way. A note is
never transcribed twice: "" is stored for one given up on, and only notes with nothing
stored are heard again after a restart, each once its platform is connected
(:meth:`Hearing.resume`): a QQ note is fetched through OneBot's ``get_record`` then, not
from a URL that may have expired.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from loguru import logger

from bot.config.settings import Settings
from bot.errors import LLMError, StorageError, VoiceUnavailable
from bot.models import Batch, ChatKey, IncomingMessage, StoredMessage, VoiceNote, voice_label
from bot.tasks import start_task
from bot.voice.ports import Speech, TranscriptStore, VoiceSource

HEARING_CONCURRENCY: Final = 4
"""Voice notes fetched and transcribed at once."""


@dataclass(frozen=True, slots=True)
class Heard:
    """What hearing a voice note gave: the message's new text and the words alone."""

    text: str
    transcript: str


def heard_text(text: str, note: VoiceNote, words: str, duration_s: float | None) -> str:
    """Return a message's text with the transcript where its placeholder stood.

    ``[voice 0:07] 转写内容`` (an audio file keeps its own placeholder, ``[audio: 歌名]``,
    before the words); the label alone when nothing was said; a placeholder that an edit
    removed gives way to the transcript in front.
    """
    is_voice = note.placeholder.startswith("[voice")
    label = voice_label(duration_s) if is_voice else note.placeholder
    shown = " ".join(part for part in (label, words) if part)
    if note.placeholder in text:
        return text.replace(note.placeholder, shown, 1)
    return f"{shown} {text}".strip()


class Hearing:
    """Transcribe the voice notes of stored messages, and hand batches what was heard."""

    def __init__(
        self,
        config: Settings,
        store: TranscriptStore,
        speech: Speech,
        sources: Mapping[str, VoiceSource],
    ) -> None:
        self._config = config
        self._store = store
        self._speech = speech
        self._sources = sources
        self._gate = asyncio.Semaphore(HEARING_CONCURRENCY)
        # Each note being heard, or heard and not yet taken by its batch.
        self._notes: dict[tuple[ChatKey, str], asyncio.Task[Heard | None]] = {}
        self._running: set[asyncio.Task[object]] = set()
        self._resumed: set[str] = set()  # platforms whose cut-short notes were taken up

    def __len__(self) -> int:
        """Return how many voice notes are being heard or wait for their batch."""
        return len(self._notes)

    def hear(self, messages: Sequence[IncomingMessage | StoredMessage]) -> None:
        """Start hearing the voice notes of stored messages."""
        for message in messages:
            key = (message.chat, message.message_id)
            if message.voice is None or key in self._notes:
                continue
            self._notes[key] = start_task(
                self._hear(message.chat, message.message_id, message.text, message.voice),
                name=f"voice:{message.chat}:{message.message_id}",
                failure="hearing a voice note failed",
                owner=self._running,
                chat=str(message.chat),
            )

    async def resume(self, platform: str) -> None:
        """Once ``platform`` is first connected in this run: hear again its waiting notes
        whose hearing a restart cut short."""
        if platform in self._resumed:
            return
        self._resumed.add(platform)
        try:
            unheard = await self._store.unheard_voice_notes()
        except StorageError as exc:
            logger.warning("voice notes not heard again after the restart: {}", exc)
            return
        mine = [message for message in unheard if message.chat.platform == platform]
        if mine:
            logger.info("hearing {} {} voice note(s) the restart cut short", len(mine), platform)
        self.hear(mine)

    async def heard(self, batch: Batch, *, timeout_s: float) -> Batch:
        """Return ``batch`` with what was heard of its voice notes in their texts.

        Notes still being heard are waited for, ``timeout_s`` at most together; those not
        done by then keep their placeholders (and are stored once heard).
        """
        taken = {
            message.message_id: task
            for message in batch.messages
            if (task := self._notes.pop((batch.chat, message.message_id), None)) is not None
        }
        pending = [task for task in taken.values() if not task.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=timeout_s)
            if late:
                logger.bind(chat=str(batch.chat), batch=batch.id).info(
                    "{} voice note(s) not heard within {:g} s; answered with the placeholder",
                    len(late),
                    timeout_s,
                )
        results = {
            message_id: heard
            for message_id, task in taken.items()
            if task.done() and not task.cancelled() and task.exception() is None
            if (heard := task.result()) is not None
        }
        if not results:
            return batch
        messages = tuple(
            dataclasses.replace(
                message,
                text=results[message.message_id].text,
                transcript=results[message.message_id].transcript,
            )
            if message.message_id in results
            else message
            for message in batch.messages
        )
        return dataclasses.replace(batch, messages=messages)

    async def stop(self) -> None:
        """Stop hearing; notes cut short are heard again at the next start."""
        tasks = list(self._running)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._notes.clear()

    async def _hear(
        self, chat: ChatKey, message_id: str, text: str, note: VoiceNote
    ) -> Heard | None:
        """Hear one note and store what was heard (or "" for a note given up on)."""
        log = logger.bind(chat=str(chat))
        try:
            async with self._gate:
                words, duration_s = await self._transcribe(chat, note)
        except VoiceUnavailable as exc:
            log.info("voice note {} keeps its placeholder: {}", message_id, exc)
        except LLMError as exc:
            log.warning("voice note {} not transcribed: {}", message_id, exc)
        except Exception as exc:  # a bug in one note must not cost it a retry loop
            log.opt(exception=exc).error("hearing voice note {} failed", message_id)
        else:
            heard = Heard(heard_text(text, note, words, duration_s), words)
            await self._keep(chat, message_id, transcript=words, text=heard.text)
            log.debug("voice note {} heard: {} characters", message_id, len(words))
            return heard
        await self._keep(chat, message_id, transcript="", text=None)
        return None

    async def _transcribe(self, chat: ChatKey, note: VoiceNote) -> tuple[str, float | None]:
        """Fetch and transcribe ``note``; return its words and length in seconds."""
        self._check_length(note.duration_s)
        source = self._sources.get(chat.platform)
        if source is None:
            msg = f"voice notes of {chat.platform} cannot be fetched"
            raise VoiceUnavailable(msg)
        audio = await source.fetch(note)
        duration_s = audio.duration_s if audio.duration_s is not None else note.duration_s
        self._check_length(duration_s)
        words = await self._speech.transcribe(audio)
        return " ".join(words.split()), duration_s

    def _check_length(self, duration_s: float | None) -> None:
        """Refuse a note longer than ``voice.max_seconds``."""
        limit_s = self._config.voice.max_seconds
        if duration_s is not None and duration_s > limit_s:
            msg = f"it lasts {duration_s:.0f} s, more than voice.max_seconds = {limit_s:g}"
            raise VoiceUnavailable(msg)

    async def _keep(
        self, chat: ChatKey, message_id: str, *, transcript: str, text: str | None
    ) -> None:
        """Store what was heard; a failing store costs later prompts only, never this one."""
        try:
            await self._store.keep_transcript(chat, message_id, transcript=transcript, text=text)
        except StorageError as exc:
            logger.bind(chat=str(chat)).warning(
                "transcript of voice note {} not kept: {}", message_id, exc
            )
