"""What the official QQ bot posts: passive replies, messages that answer nothing, media.

An item that answers a message is a **passive reply**: it names that message's id
(``msg_id``) and a ``msg_seq`` unique per message, numbered in the store so a restart
never repeats one. An item that answers nothing (a reminder, a follow-up, an opener) is
**proactive**: allowed in C2C always and in a group only with ``qq_official.proactive``,
and at most ``proactive_per_month`` per chat and calendar month (counted in the store, in
the platform's +08:00). Texts go as ``msg_type`` 0; a kept sticker and a voice note
(spoken as WAV, encoded to SILK here) are uploaded first
(``/v2/{groups|users}/{id}/files``), then sent as ``msg_type`` 7.
:mod:`adapters.qqbot.errors` translates what fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

from nonebot.adapters.qq import Bot, Message, MessageSegment

from adapters.audio import sniff, wav_to_silk
from adapters.inflight import InFlight
from adapters.qqbot import errors
from adapters.qqbot.ledger import Ledger
from adapters.qqbot.normalise import PLATFORM_NAME
from bot.config.qq_official import QQOfficialConfig
from bot.errors import MessageRefused, SendFailed, VoiceUnavailable
from bot.models import ChatKey
from bot.replies.items import ItemKind, Outgoing, Sticker, Text, Voice

PLATFORM_ZONE: Final = timezone(timedelta(hours=8))  # the platform counts months here
KINDS: Final = frozenset({ItemKind.CONTENT, ItemKind.STICKER, ItemKind.VOICE})
"""What the platform can post; it has no reactions."""
SPEECH_FORMAT: Final = "wav"
"""What the speech endpoint is asked for: it is encoded to the SILK the platform takes."""


class Outbound:
    """Post items through the bot, numbering replies and counting what answers nothing."""

    def __init__(
        self,
        *,
        bot: Callable[[], Bot | None],
        ledger: Ledger,
        config: Callable[[], QQOfficialConfig],
        sends: InFlight,
        api_timeout_s: float,
        stickers_dir: Path | None,
        now: Callable[[], datetime],
    ) -> None:
        self._bot = bot
        self._ledger = ledger
        self._config = config
        self._sends = sends
        self._api_timeout_s = api_timeout_s
        self._stickers_dir = stickers_dir
        self._now = now

    async def send(self, chat: ChatKey, item: Outgoing, *, answers: str | None) -> str | None:
        """Deliver ``item`` to ``chat`` as a reply to ``answers`` (or answering nothing);
        return the id of the message it made."""
        message = await self._message(chat, item)
        bot = self._bot()
        if bot is None:
            msg = f"the official QQ bot is not running; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        if answers is None:
            await self._may_answer_nothing(chat)
            seq = None
        else:
            seq = await self._ledger.next_reply_seq(PLATFORM_NAME, answers, now=self._now())
        try:
            with self._sends.track():
                async with asyncio.timeout(self._api_timeout_s):
                    result = await self._post(bot, chat, message, msg_id=answers, msg_seq=seq)
        except Exception as error:
            raise errors.send_failure(error, chat=chat, timeout_s=self._api_timeout_s) from None
        sent_id = getattr(result, "id", None)
        return str(sent_id) if sent_id else ""

    async def _post(self, bot: Bot, chat: ChatKey, message: Message, **reply: Any) -> object:
        if chat.platform != PLATFORM_NAME:
            msg = f"{chat} is not a chat of the official QQ bot; nothing was sent"
            raise SendFailed(msg, maybe_delivered=False)
        if chat.is_group:
            return await bot.send_to_group(group_openid=chat.id, message=message, **reply)
        return await bot.send_to_c2c(openid=chat.id, message=message, **reply)

    async def _may_answer_nothing(self, chat: ChatKey) -> None:
        """Count a message that answers nothing; raise ``MessageRefused`` where it may not go."""
        config = self._config()
        if chat.is_group and not config.proactive:
            msg = (
                f"{chat}: a message that answers nothing is not sent to a group unless its "
                "owner allowed it (qq_official.proactive)"
            )
            raise MessageRefused(msg)
        month = self._now().astimezone(PLATFORM_ZONE).strftime("%Y-%m")
        taken = await self._ledger.take_proactive(chat, month, per_month=config.proactive_per_month)
        if taken is None:
            msg = (
                f"{chat}: the {config.proactive_per_month} message(s) that answer nothing "
                f"of {month} are spent (qq_official.proactive_per_month)"
            )
            raise MessageRefused(msg)

    async def _message(self, chat: ChatKey, item: Outgoing) -> Message:
        """Return ``item`` as the adapter's message; ``MessageRefused`` if it cannot be one."""
        if isinstance(item, Text):
            return Message(MessageSegment.text(item.content))
        if isinstance(item, Sticker) and item.file_ref and self._stickers_dir is not None:
            path = self._stickers_dir / Path(item.file_ref).name
            try:
                data = await asyncio.to_thread(path.read_bytes)
            except OSError as error:
                msg = f"the sticker file {path.name} cannot be read ({error.strerror})"
                raise MessageRefused(msg) from None
            return Message(MessageSegment.file_image(data))
        if isinstance(item, Voice) and sniff(item.audio) == "wav":
            try:
                silk = await asyncio.to_thread(wav_to_silk, item.audio)
            except VoiceUnavailable as error:
                raise MessageRefused(str(error)) from None
            return Message(MessageSegment.file_audio(silk))
        msg = f"a {item.kind} item cannot be sent to {chat}"
        raise MessageRefused(msg)
