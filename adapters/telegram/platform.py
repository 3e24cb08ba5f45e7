"""Receive Telegram updates by long polling and post replies, as a pacebot platform.

PTB's ``Application`` is started by hand (never ``run_polling()``, never signal handlers)
in an owned background task that keeps retrying while the Bot API is unreachable, so a
Telegram outage at start-up cannot take the rest of the bot down. Updates are normalised
at the edge by :mod:`adapters.telegram.normalise`; sends translate PTB's errors into the
:mod:`bot.errors` tree through :mod:`adapters.telegram.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self

import stamina
from loguru import logger
from telegram import BotCommand, BotCommandScopeChat, Message, ReplyParameters, Update
from telegram.constants import ChatAction
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.ext import ContextTypes, MessageHandler, filters

from adapters.inflight import InFlight
from adapters.telegram.errors import describe, quote_is_gone, retry_after_seconds, translate
from adapters.telegram.normalise import PLATFORM_NAME, chat_key_of, normalise
from adapters.telegram.wire import (
    TelegramApplication,
    build_application,
    opt_into_timedelta_periods,
    quiet_http_loggers,
)
from bot.addressing import BotNames
from bot.errors import ConfigError, PacebotError, PlatformError, SendFailed
from bot.models import ChatKey, IncomingMessage
from bot.ports import MessageSink, PacingLimits
from bot.tasks import start_task

if TYPE_CHECKING:
    from bot.ports import Platform

# How long a poll waits for the updates fetched before to be handled (stored).
_HANDLED_WAIT_S: Final = 30.0

# Start-up errors the Bot API may get over: network trouble, 5xx answers, a 429.
_TRANSIENT: Final = (NetworkError, RetryAfter)


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
        self._poll_timeout_s = poll_timeout_s
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._request_timeout_s = request_timeout_s
        self._menu = tuple(menu)  # published in the menu_chat_ids chats once polling runs
        self._menu_chat_ids = tuple(menu_chat_ids)

        self._app: TelegramApplication = build_application(
            token=token,
            api_base_url=api_base_url,
            request_timeout_s=request_timeout_s,
            before_poll=self._wait_until_handled,
        )
        self._app.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self._on_message))
        self._app.add_handler(
            MessageHandler(filters.UpdateType.EDITED_MESSAGE, self._on_edited_message)
        )
        self._app.add_error_handler(self._on_handler_error)

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
        waiter = asyncio.create_task(self._ready.wait(), name="telegram:wait-ready")
        try:
            await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self._ready.is_set():
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
        """Undo whatever part of the start succeeded, in reverse order."""
        app = self._app
        try:
            if app.updater is not None and app.updater.running:
                await app.updater.stop()
            if app.running:
                await app.stop()
            await app.shutdown()
        finally:
            # A failed initialize() leaves the HTTP clients open without marking the app
            # initialized; this closes them (a no-op when they are closed already).
            await app.bot.shutdown()

    async def _connect(self) -> None:
        """Start PTB and the polling, retrying with back-off while the Bot API is unreachable.

        The waits double from ``retry_initial_s`` with a jitter of up to
        ``retry_initial_s``, and stop growing at ``retry_max_s``; after a 429 the wait is at
        least what Telegram asked for.
        Only ``stop()`` ends the attempts; a rejected token or another refusal gives up.
        """
        attempt: stamina.Attempt | None = None

        def retry_wait(error: Exception) -> bool | float:
            """Tell stamina whether to retry after ``error`` (or how long to wait); log it."""
            if attempt is None or not isinstance(error, _TRANSIENT):
                return False
            if isinstance(error, RetryAfter):
                wait = max(attempt.next_wait, retry_after_seconds(error))
                logger.warning(
                    "Telegram Bot API asks to wait ({}); retry {} in {:.1f} s",
                    describe(error),
                    attempt.num,
                    wait,
                )
                return wait
            # stamina adds its jitter to next_wait, then caps the sum at retry_max_s.
            shortest = min(attempt.next_wait, self._retry_max_s)
            longest = min(attempt.next_wait + self._retry_initial_s, self._retry_max_s)
            logger.warning(
                "Telegram Bot API unreachable ({}); retry {} in {:.1f}–{:.1f} s",
                describe(error),
                attempt.num,
                shortest,
                longest,
            )
            return True

        try:
            async for attempt in stamina.retry_context(
                on=retry_wait,
                attempts=None,
                timeout=None,
                wait_initial=self._retry_initial_s,
                wait_max=self._retry_max_s,
                wait_jitter=self._retry_initial_s,
            ):
                with attempt:
                    await self._start_polling()
        except InvalidToken:
            self._start_error = ConfigError(
                "Telegram rejected the bot token: check the variable named by "
                "telegram.token_env (and telegram.api_base_url)"
            )
        except TelegramError as error:
            self._start_error = PlatformError(
                f"Telegram refused to start polling: {describe(error)}"
            )
        if self._start_error is not None:
            logger.error("{}; Telegram stays off", self._start_error)
            await self._shut_down()
            return
        self._ready.set()
        logger.info("Telegram polling started as @{}", self.bot_username)
        if self._sink is not None:  # replies queued while it was away go out now
            self._sink.platform_ready(self.name)
        if self._menu and self._menu_chat_ids:
            await self.set_commands(self._menu, chat_ids=self._menu_chat_ids)

    async def _start_polling(self) -> None:
        """Run each start step that has not succeeded yet; each is safe to repeat."""
        app = self._app
        await app.initialize()  # getMe; returns at once when already initialized
        self._bot_id = app.bot.id
        self._bot_username = app.bot.username
        if not app.running:
            await app.start()
        if app.updater is not None and not app.updater.running:
            await app.updater.start_polling(
                timeout=timedelta(seconds=self._poll_timeout_s),
                allowed_updates=[Update.MESSAGE, Update.EDITED_MESSAGE],
                error_callback=self._on_polling_error,
            )

    async def _wait_until_handled(self) -> None:
        """Hold the next poll (which confirms what was fetched) until that is handled.

        PTB marks each update done after its handler, which stores the message first:
        an update confirmed to Telegram is in the database. A handler stuck for longer
        than the bound lets the poll go on, as PTB alone would.
        """
        try:
            async with asyncio.timeout(_HANDLED_WAIT_S):
                await self._app.update_queue.join()  # at once when nothing is pending
        except TimeoutError:
            logger.warning(
                "Telegram updates still being handled after {:g} s; confirming them anyway",
                _HANDLED_WAIT_S,
            )

    def _on_polling_error(self, error: TelegramError) -> None:
        # PTB retries polling by itself (growing waits up to 30 s); say why, no traceback.
        logger.warning("Telegram polling failed ({}); PTB retries", describe(error))

    # --- inbound -------------------------------------------------------------------------

    def _normalise(self, message: Message) -> IncomingMessage | None:
        return normalise(
            message,
            bot_id=self.bot_id,
            bot_username=self.bot_username,
            names=self._names,
        )

    async def _on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.message
        if message is None or self._sink is None:
            return
        incoming = self._normalise(message)
        if incoming is not None:
            await self._sink.receive(incoming)

    async def _on_edited_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.edited_message
        if message is None or self._sink is None:
            return
        incoming = self._normalise(message)
        if incoming is not None:
            await self._sink.receive_edit(incoming.chat, incoming.message_id, incoming.text)

    async def _on_handler_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        chat: ChatKey | str = "telegram:?"
        if isinstance(update, Update):
            message = update.effective_message
            key = chat_key_of(message) if message is not None else None
            chat = key if key is not None else chat
        error = context.error
        logger.bind(chat=str(chat)).opt(exception=error).error(
            "handling a Telegram update failed: {}",
            describe(error) if error is not None else "unknown error",
        )

    # --- outbound ------------------------------------------------------------------------

    async def send_text(self, chat: ChatKey, text: str, *, reply_to: str | None = None) -> str:
        """Post ``text`` to ``chat`` (quoting ``reply_to``); return the new message id."""
        self._check_connected(chat)
        with self._sends.track():
            return await self._send_text(chat, text, reply_to=reply_to)

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
        return await self._app.bot.send_message(
            chat_id=int(chat.id), text=text, reply_parameters=quote
        )

    def _check_connected(self, chat: ChatKey) -> None:
        if self._stopped or not self._ready.is_set():
            msg = f"Telegram is not connected; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)

    async def show_typing(self, chat: ChatKey) -> None:
        """Show "typing…" in ``chat`` for about 5 s; any failure is only logged at DEBUG."""
        if self._stopped or not self._ready.is_set():
            return
        try:
            await self._app.bot.send_chat_action(chat_id=int(chat.id), action=ChatAction.TYPING)
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
                if not await self._app.bot.set_my_commands(menu, scope=scope):
                    return False
        except TelegramError as error:
            logger.warning("setting the Telegram command menu failed: {}", describe(error))
            return False
        return True


if TYPE_CHECKING:

    def _conforms(platform: TelegramPlatform) -> Platform:
        return platform
