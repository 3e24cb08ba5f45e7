"""What the QQ platform posts: texts, stickers, voice and reactions, through the connected bot.

A text is a segment array, quoting a message when it names a QQ message id; a sticker an
image segment marked as one, its kept bytes inlined (``base64://``); a voice note a
``record`` segment of its MP3, inlined the same way; a reaction the QQ
face of its emoji on a group message, through NapCat's ``set_msg_emoji_like`` or else
Lagrange's ``set_group_reaction``. :mod:`adapters.qq.errors` translates what fails.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from loguru import logger
from nonebot.adapters.onebot.v11 import ActionFailed, Bot, Message, MessageSegment

from adapters.audio import sniff
from adapters.inflight import InFlight
from adapters.qq import errors
from adapters.qq.normalise import PLATFORM_NAME
from adapters.qq.reactions import qq_face
from bot.errors import MessageRefused, SendFailed
from bot.models import ChatKey
from bot.replies.items import ItemKind, Outgoing, Reaction, Sticker, Text, Voice

_MESSAGES: Final = frozenset({ItemKind.CONTENT, ItemKind.STICKER, ItemKind.VOICE})
_MESSAGES_AND_REACTIONS: Final = _MESSAGES | {ItemKind.REACT}
_REACTION_ACTIONS: Final = ("set_msg_emoji_like", "set_group_reaction")  # NapCat, Lagrange


class Outbound:
    """Post items through the connected bot, counting each send on the wire."""

    def __init__(
        self,
        *,
        bot: Callable[[], Bot | None],
        sends: InFlight,
        api_timeout_s: float,
        stickers_dir: Path | None,
    ) -> None:
        self._bot = bot
        self._sends = sends
        self._api_timeout_s = api_timeout_s
        self._stickers_dir = stickers_dir
        self._reaction_actions = list(_REACTION_ACTIONS)  # those not answered as unknown

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Texts, stickers and voice everywhere; reactions in groups, while the
        implementation takes them."""
        if chat.is_group and self._reaction_actions:
            return _MESSAGES_AND_REACTIONS
        return _MESSAGES

    async def send(self, chat: ChatKey, item: Outgoing) -> str | None:
        """Deliver ``item`` to ``chat``; return the id of the message it made, if any.

        A text is posted (quoting its ``reply_to``); a reaction is set with the QQ face of
        its emoji in a group (``MessageRefused`` where QQ has none, or in a private chat);
        a voice note is posted as a record of its MP3 (``MessageRefused`` without one).
        """
        if isinstance(item, Text):
            return await self._post(chat, _text_message(item.content, item.reply_to, chat))
        if isinstance(item, Reaction) and chat.is_group:
            await self._react(chat, item)
            return None
        if isinstance(item, Sticker) and item.file_ref and self._stickers_dir is not None:
            return await self._post(chat, await self._sticker_message(item.file_ref))
        if isinstance(item, Voice) and sniff(item.audio) == "mp3":
            record = Message(MessageSegment.record(item.audio))
            return await self._post(chat, record, refusal_is_final=True)
        msg = f"a {item.kind} item cannot be sent to {chat}"
        raise MessageRefused(msg)

    async def _sticker_message(self, file_ref: str) -> Message:
        """Return a kept sticker as an image segment marked as a sticker, bytes inlined."""
        assert self._stickers_dir is not None
        path = self._stickers_dir / Path(file_ref).name
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as error:
            msg = f"the sticker file {path.name} cannot be read ({error.strerror})"
            raise MessageRefused(msg) from None
        encoded = "base64://" + base64.b64encode(data).decode("ascii")
        segment = MessageSegment("image", {"file": encoded, "sub_type": 1, "summary": "[动画表情]"})
        return Message(segment)

    async def _react(self, chat: ChatKey, reaction: Reaction) -> None:
        """Set a reaction through the first action the implementation has.

        NapCat has ``set_msg_emoji_like``, Lagrange ``set_group_reaction``; an action
        answered as unknown is not asked again this run, and when none is left that is
        said once. Any other refusal costs this reaction only.
        """
        face = qq_face(reaction.emoji)
        group_id, message_id = as_int(chat.id), as_int(reaction.to)
        if face is None or group_id is None or message_id is None:
            msg = f"no QQ reaction for {reaction.emoji!r} on message {reaction.to!r}"
            raise MessageRefused(msg)
        bot = self._bot()
        if bot is None:
            msg = f"OneBot not connected; no reaction was set in {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        for action in list(self._reaction_actions):
            params = _reaction_params(action, group_id=group_id, message_id=message_id, face=face)
            try:
                with self._sends.track():
                    async with asyncio.timeout(self._api_timeout_s):
                        await bot.call_api(action, **params)
            except ActionFailed as error:
                if not errors.is_unsupported(error):
                    msg = f"OneBot refused {action} in {chat}: {errors.describe(error)}"
                    raise MessageRefused(msg) from None
                self._reaction_actions.remove(action)
            except Exception as error:
                raise errors.send_failure(
                    error, chat=chat, action=action, timeout_s=self._api_timeout_s
                ) from None
            else:
                return
        logger.info("QQ: the OneBot implementation has no reaction actions; none are set")
        msg = f"no reaction can be set in {chat}"
        raise MessageRefused(msg)

    async def _post(
        self, chat: ChatKey, message: Message, *, refusal_is_final: bool = False
    ) -> str:
        """Post ``message`` to ``chat``; return the new message id.

        With ``refusal_is_final`` (a record: NapCat without its audio converter answers
        "语音转换失败" every time) a refusal raises ``MessageRefused``, not a retry.
        """
        action, target = self._target(chat)
        bot = self._bot()
        if bot is None:
            msg = f"OneBot not connected; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        try:
            with self._sends.track():
                async with asyncio.timeout(self._api_timeout_s):
                    result = await bot.call_api(action, **target, message=message)
        except Exception as error:
            failure = errors.send_failure(
                error, chat=chat, action=action, timeout_s=self._api_timeout_s
            )
            refused = isinstance(failure, SendFailed) and not failure.maybe_delivered
            if refusal_is_final and refused and isinstance(error, ActionFailed):
                raise MessageRefused(str(failure)) from None
            raise failure from None
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if message_id is None:
            logger.bind(chat=str(chat)).warning(
                "OneBot posted to {} but returned no message id", chat
            )
            return ""
        return str(message_id)

    def _target(self, chat: ChatKey) -> tuple[str, dict[str, int]]:
        """Return the action and its target parameter for ``chat``."""
        chat_id = as_int(chat.id)
        if chat.platform != PLATFORM_NAME or chat_id is None:
            msg = f"{chat} is not a QQ chat; nothing was sent"
            raise SendFailed(msg, maybe_delivered=False)
        if chat.is_group:
            return "send_group_msg", {"group_id": chat_id}
        return "send_private_msg", {"user_id": chat_id}


def _text_message(text: str, reply_to: str | None, chat: ChatKey) -> Message:
    """Return a text as a segment array, quoting ``reply_to`` when it is a QQ message id."""
    message = Message()
    quote = as_int(reply_to)
    if quote is not None:
        message.append(MessageSegment.reply(quote))
    elif reply_to is not None:
        logger.bind(chat=str(chat)).info(
            "cannot quote message {!r} (not a QQ message id); sending without", reply_to
        )
    message.append(MessageSegment.text(text))
    return message


def _reaction_params(action: str, *, group_id: int, message_id: int, face: str) -> dict[str, Any]:
    """Return the parameters of one reaction action (the face id always as a string)."""
    if action == "set_group_reaction":  # Lagrange
        return {"group_id": group_id, "message_id": message_id, "code": face, "is_add": True}
    return {"message_id": message_id, "emoji_id": face, "set": True}  # NapCat


def as_int(value: str | None) -> int | None:
    """Return ``value`` as an int, or ``None`` when it is none or not a number."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None
