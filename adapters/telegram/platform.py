"""Receive Telegram updates by long polling and post replies, as a pacebot platform.

PTB's ``Bot`` connects in an owned background task that keeps retrying while the Bot API
is unreachable, so a Telegram outage at start-up cannot take the rest of the bot down;
:mod:`adapters.telegram.polling` then fetches the updates page by page and hands each
page to the core at once. Updates are normalised at the edge by
:mod:`adapters.telegram.normalise`; sends translate PTB's errors into the
:mod:`bot.errors` tree through :mod:`adapters.telegram.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self

from loguru import logger
from telegram import (
    BotCommand,
    BotCommandScopeChat,
    Message,
    ReactionTypeEmoji,
    ReplyParameters,
    Update,
)
from telegram.constants import ChatAction
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError

from adapters.handover import hand_over
from adapters.inflight import InFlight
from adapters.telegram.errors import describe, quote_is_gone, topic_is_gone, translate
from adapters.telegram.normalise import PLATFORM_NAME, chat_key_of, normalise
from adapters.telegram.polling import Backoff, Poller
from adapters.telegram.reactions import telegram_reaction
from adapters.telegram.wire import build_bot, opt_into_timedelta_periods, quiet_http_loggers
from bot.addressing import BotNames
from bot.errors import ConfigError, MessageRefused, PacebotError, PlatformError, SendFailed
from bot.models import ChatKey, IncomingMessage
from bot.ports import MessageSink, PacingLimits
from bot.replies.items import ItemKind, Outgoing, Reaction, Sticker, Text, Voice
from bot.tasks import set_before_done, start_task

if TYPE_CHECKING:
    from bot.ports import Platform


_KINDS: Final = frozenset({ItemKind.CONTENT, ItemKind.REACT, ItemKind.STICKER, ItemKind.VOICE})
_OGG: Final = b"OggS"  # sendVoice shows Ogg/Opus as a voice note; the speech is asked for it


class TelegramPlatform:
    """Receive Telegram updates by long polling and post replies through the Bot API.

    ``start(sink)`` returns at once; polling begins in the background as soon as the Bot
    API answers. ``stop()`` is idempotent and also runs when leaving ``async with``.
    """

    name: Final = PLATFORM_NAME
    text_limit: Final = 4096
    typing_refresh_s: Final = 4.0
    limits: Final = PacingLimits(chat_interval_s=1.0, group_per_minute=20, overall_per_s=25.0)

    def __init__(
        self,
        *,
        token: str,
        api_base_url: str = "",
        bot_name: str,
        aliases: Sequence[str] = (),
        poll_timeout_s: float = 10.0,
        retry_initial_s: float = 1.0,
        retry_max_s: float = 60.0,
        request_timeout_s: float = 10.0,
        menu: Sequence[tuple[str, str]] = (),
        menu_chat_ids: Sequence[int] = (),
    ) -> None:
        if not token.strip():
            msg = "the Telegram bot token is empty (set the variable named by telegram.token_env)"
            raise ConfigError(msg)
        quiet_http_loggers(token)
        opt_into_timedelta_periods()
        self._names = BotNames.of(bot_name, aliases)
        self._request_timeout_s = request_timeout_s
        self._menu = tuple(menu)  # published in the menu_chat_ids chats once polling runs
        self._menu_chat_ids = tuple(menu_chat_ids)

        self._bot = build_bot(
            token=token, api_base_url=api_base_url, request_timeout_s=request_timeout_s
        )
        self._connecting = Backoff(
            initial_s=retry_initial_s, max_s=retry_max_s, trouble="Bot API unreachable"
        )
        self._poller = Poller(
            self._bot,
            self._on_page,
            timeout_s=poll_timeout_s,
            backoff=Backoff(initial_s=retry_initial_s, max_s=retry_max_s, trouble="polling failed"),
        )

        self._sink: MessageSink | None = None
        self._start_task: asyncio.Task[None] | None = None
        self._start_error: PacebotError | None = None
        self._ready = asyncio.Event()
        self._stopped = False
        self._stop_lock = asyncio.Lock()
        self._sends = InFlight("Telegram")
        self._bot_id: int | None = None
        self._bot_username: str | None = None

    # --- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def ready(self) -> asyncio.Event:
        """Set once polling has started; cleared again by ``stop()``."""
        return self._ready

    @property
    def is_connected(self) -> bool:
        """Tell whether polling runs, so replies can go out now (the dashboard shows it)."""
        return self._ready.is_set() and not self._stopped

    @property
    def bot_id(self) -> int | None:
        """The bot's user id, known once ``getMe`` has answered."""
        return self._bot_id

    @property
    def bot_username(self) -> str | None:
        """The bot's @username without the ``@``, known once ``getMe`` has answered."""
        return self._bot_username

    async def start(self, sink: MessageSink) -> None:
        """Begin delivering updates to ``sink``; return at once and connect in the background."""
        if self._start_task is not None or self._stopped:
            msg = "TelegramPlatform.start() may be called only once"
            raise RuntimeError(msg)
        self._sink = sink
        self._start_task = start_task(
            self._connect(),
            name="telegram:connect",
            failure="Telegram start-up crashed; Telegram stays off",
        )

    async def wait_ready(self) -> None:
        """Wait until polling has started (bound it with ``asyncio.timeout``).

        Raise the ``PacebotError`` that made the start give up, e.g. a ``ConfigError`` for
        a rejected token, instead of waiting for ever.
        """
        task = self._start_task
        if task is None:
            msg = "TelegramPlatform.start() has not been called"
            raise RuntimeError(msg)
        if await set_before_done(self._ready, task):
            return
        if self._start_error is not None:
            raise self._start_error
        msg = "the Telegram connection gave up before polling started"
        raise PlatformError(msg)

    async def stop(self) -> None:
        """Stop taking updates, finish the ones already fetched and close the connections.

        Idempotent: a second call (also a concurrent one) returns once the first is done.
        Sends already on the wire get their answer before the HTTP client closes; new
        sends are refused from the moment ``stop()`` began.
        """
        async with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
            self._ready.clear()
            task = self._start_task
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self._sends.settle(timeout_s=self._request_timeout_s + 1.0)
            await self._shut_down()
            logger.info("Telegram stopped")

    async def _shut_down(self) -> None:
        """Stop polling (confirming what was stored) and close the HTTP clients."""
        try:
            await self._poller.stop()
        finally:
            # Also after a failed initialize(), which leaves the clients open.
            await self._bot.shutdown()

    async def _connect(self) -> None:
        """Learn who the bot is and start polling, retrying while the Bot API is unreachable.

        Only ``stop()`` ends the attempts; a rejected token or another refusal gives up.
        The platform is ready once the first getUpdates has answered.
        """
        try:
            async for attempt in self._connecting.attempts(_transient):
                with attempt:
                    await self._bot.initialize()  # getMe; at once when done before
                    # A webhook would make every getUpdates fail with 409 Conflict.
                    await self._bot.delete_webhook(drop_pending_updates=False)
        except InvalidToken:
            self._start_error = ConfigError(
                "Telegram rejected the bot token: check the variable named by "
                "telegram.token_env (and telegram.api_base_url)"
            )
        except TelegramError as error:
            self._start_error = PlatformError(
                f"Telegram refused to start polling: {describe(error)}"
            )
        if self._start_error is None:
            self._bot_id = self._bot.id
            self._bot_username = self._bot.username
            logger.info("Telegram: token accepted for @{}; polling", self.bot_username)
            self._poller.start()
            if not await self._poller.first_answer():
                self._start_error = PlatformError("Telegram polling stopped before it answered")
        if self._start_error is not None:
            logger.error("{}; Telegram stays off", self._start_error)
            await self._shut_down()
            return
        self._ready.set()
        logger.info("Telegram running as @{}: first poll answered", self.bot_username)
        if self._sink is not None:  # replies queued while it was away go out now
            self._sink.platform_ready(self.name)
        if self._menu and self._menu_chat_ids:
            await self.set_commands(self._menu, chat_ids=self._menu_chat_ids)

    # --- inbound -------------------------------------------------------------------------

    async def _on_page(self, updates: Sequence[Update]) -> None:
        """Hand a page's new messages to the sink at once, edits in their place among them."""
        sink = self._sink
        if sink is None:
            return
        messages: list[IncomingMessage] = []
        for update in updates:
            if update.message is not None:
                incoming = self._normalise(update.message)
                if incoming is not None:
                    messages.append(incoming)
            elif update.edited_message is not None:
                await hand_over(sink, messages, wire="Telegram")  # what came before it first
                messages = []
                await self._edit(sink, update.edited_message)
        await hand_over(sink, messages, wire="Telegram")

    def _normalise(self, message: Message) -> IncomingMessage | None:
        """Turn ``message`` into ours; ``None`` if it is not for the core or cannot be read."""
        try:
            return normalise(
                message,
                bot_id=self.bot_id,
                bot_username=self.bot_username,
                names=self._names,
            )
        except Exception:
            chat = chat_key_of(message)
            logger.bind(chat=str(chat) if chat else "telegram:?").exception(
                "Telegram: reading message {} failed", message.message_id
            )
            return None

    async def _edit(self, sink: MessageSink, message: Message) -> None:
        incoming = self._normalise(message)
        if incoming is None:
            return
        try:
            await sink.receive_edit(incoming.chat, incoming.message_id, incoming.text)
        except Exception:
            logger.bind(chat=str(incoming.chat)).exception(
                "Telegram: handling the edit of message {} failed", incoming.message_id
            )

    # --- outbound ------------------------------------------------------------------------

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Texts, reactions, stickers and voice notes, in every chat."""
        return _KINDS

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        """Deliver ``item`` to ``chat``; return the id of the message it made, if any.

        A text is posted (quoting its ``reply_to``); a reaction is set on its message with
        the nearest emoji Telegram has (``MessageRefused`` if none is near); a sticker is
        sent by its ``file_id``; a voice note with ``sendVoice``, its Ogg/Opus uploaded
        (``MessageRefused`` without it, or when the chat takes no voice messages).
        """
        self._check_connected(chat)
        with self._sends.track():
            if isinstance(item, Text):
                return await self._send_text(chat, item.content, reply_to=item.reply_to)
            if isinstance(item, Reaction):
                await self._react(chat, item)
                return None
            if isinstance(item, Sticker) and item.file_ref:
                return await self._send_sticker(chat, item.file_ref)
            if isinstance(item, Voice) and item.audio.startswith(_OGG):
                return await self._send_voice(chat, item)
        msg = f"a {item.kind} item cannot be sent to Telegram"
        raise MessageRefused(msg)

    async def _send_sticker(self, chat: ChatKey, file_id: str) -> str:
        try:
            message = await self._in_topic(
                chat,
                lambda in_topic: self._bot.send_sticker(
                    chat_id=int(chat.id), message_thread_id=_thread(chat, in_topic), sticker=file_id
                ),
            )
        except TelegramError as error:
            raise translate(chat, error) from None
        return str(message.message_id)

    async def _send_voice(self, chat: ChatKey, voice: Voice) -> str:
        seconds = None if voice.duration_s is None else timedelta(seconds=round(voice.duration_s))
        try:
            message = await self._in_topic(
                chat,
                lambda in_topic: self._bot.send_voice(
                    chat_id=int(chat.id),
                    message_thread_id=_thread(chat, in_topic),
                    voice=voice.audio,
                    filename="voice.ogg",
                    duration=seconds,
                ),
            )
        except TelegramError as error:
            raise translate(chat, error) from None
        return str(message.message_id)

    async def _react(self, chat: ChatKey, reaction: Reaction) -> None:
        emoji = telegram_reaction(reaction.emoji)
        if emoji is None:
            msg = f"Telegram has no reaction like {reaction.emoji!r}"
            raise MessageRefused(msg)
        try:
            await self._bot.set_message_reaction(
                chat_id=int(chat.id),
                message_id=int(reaction.to),
                reaction=ReactionTypeEmoji(emoji),
            )
        except ValueError:
            msg = f"{reaction.to!r} is not a Telegram message id"
            raise MessageRefused(msg) from None
        except TelegramError as error:
            raise translate(chat, error) from None

    async def _send_text(self, chat: ChatKey, text: str, *, reply_to: str | None) -> str:
        try:
            try:
                message = await self._send(chat, text, reply_to=reply_to)
            except BadRequest as error:
                if reply_to is None or not quote_is_gone(error):
                    raise
                # The quoted message is gone (deleted, or from before a migration):
                # the words still matter more than the quote.
                logger.bind(chat=str(chat)).info(
                    "quoted message {} not found; sending without the quote", reply_to
                )
                message = await self._send(chat, text, reply_to=None)
        except TelegramError as error:
            raise translate(chat, error) from None
        return str(message.message_id)

    async def _send(self, chat: ChatKey, text: str, *, reply_to: str | None) -> Message:
        quote = ReplyParameters(message_id=int(reply_to)) if reply_to is not None else None
        return await self._in_topic(
            chat,
            lambda in_topic: self._bot.send_message(
                chat_id=int(chat.id),
                message_thread_id=_thread(chat, in_topic),
                text=text,
                reply_parameters=quote,
            ),
        )

    async def _in_topic(self, chat: ChatKey, post: Callable[[bool], Awaitable[Message]]) -> Message:
        """Post into ``chat``'s forum topic; into the group if Telegram has lost the topic.

        ``post(True)`` posts into the topic. Telegram loses topics now and then (deleted,
        or its root pruned in a very busy forum) while people still write in them; the
        words then still reach the group, and a quote keeps them beside its message.
        """
        try:
            return await post(True)
        except BadRequest as error:
            if not chat.topic or not topic_is_gone(error):
                raise
            logger.bind(chat=str(chat)).warning(
                "Telegram cannot find topic {}; posting to the group instead", chat.topic
            )
            return await post(False)

    def _check_connected(self, chat: ChatKey) -> None:
        if self._stopped or not self._ready.is_set():
            msg = f"Telegram is not connected; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show "typing…" in ``chat`` for about 5 s ("recording a voice message…" for a
        voice note); any failure is only logged at DEBUG."""
        if self._stopped or not self._ready.is_set():
            return
        try:
            await self._bot.send_chat_action(
                chat_id=int(chat.id),
                message_thread_id=_thread(chat, in_topic=True),
                action=ChatAction.RECORD_VOICE if kind is ItemKind.VOICE else ChatAction.TYPING,
            )
        except TelegramError as error:
            logger.bind(chat=str(chat)).debug("typing indicator failed: {}", describe(error))

    async def set_commands(
        self, commands: Sequence[tuple[str, str]], *, chat_ids: Sequence[int] = ()
    ) -> bool:
        """Publish the command menu (name, description); return whether Telegram took it.

        With ``chat_ids`` the menu shows only in those chats (e.g. the admins' private
        chats), otherwise everywhere.
        """
        if self._stopped or not self._ready.is_set():
            return False
        menu = [BotCommand(name, description) for name, description in commands]
        scopes: list[BotCommandScopeChat | None] = [BotCommandScopeChat(c) for c in chat_ids]
        try:
            for scope in scopes or [None]:
                if not await self._bot.set_my_commands(menu, scope=scope):
                    return False
        except TelegramError as error:
            logger.warning("setting the Telegram command menu failed: {}", describe(error))
            return False
        return True


if TYPE_CHECKING:

    def _conforms(platform: TelegramPlatform) -> Platform:
        return platform


def _transient(error: Exception) -> bool:
    """Tell whether connecting may succeed later: network trouble, 5xx answers, a 429."""
    return isinstance(error, NetworkError | RetryAfter)


def _thread(chat: ChatKey, in_topic: bool) -> int | None:
    """Return the ``message_thread_id`` that posts into ``chat``'s topic, if asked."""
    return int(chat.topic) if in_topic and chat.topic else None
