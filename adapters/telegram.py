"""Talk to Telegram through python-telegram-bot, without letting it own the process.

PTB's ``Application`` is started by hand (never ``run_polling()``, never signal handlers)
in an owned background task that keeps retrying while the Bot API is unreachable, so a
Telegram outage at start-up cannot take the rest of the bot down. Updates are normalised
at the edge into :class:`~bot.models.IncomingMessage` by :func:`normalise`; sends
translate PTB's errors into the :mod:`bot.errors` tree.

The bot token is part of every request URL, so it is kept out of logs three ways: the
``httpx``/``httpcore`` loggers stay at WARNING, a filter redacts it from PTB's and httpx's
log records, and every message this module logs or raises goes through the redactor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import re
import traceback
import warnings
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from http import HTTPStatus
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import httpx
from loguru import logger
from telegram import (
    BotCommand,
    BotCommandScopeChat,
    Message,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.constants import ChatAction, ChatType
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.ext import (
    Application,
    ApplicationBuilder,
    ContextTypes,
    ExtBot,
    MessageHandler,
    filters,
)
from telegram.request import HTTPXRequest
from telegram.warnings import PTBDeprecationWarning

from bot.errors import (
    ChatUnavailable,
    ConfigError,
    MessageRefused,
    PacebotError,
    PlatformError,
    RateLimited,
    SendFailed,
)
from bot.log import redactor
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import MessageSink, PacingLimits

if TYPE_CHECKING:
    from bot.ports import Platform

PLATFORM_NAME: Final = "telegram"

# Loggers that see request URLs (and so the token): quiet them and redact what remains.
_URL_LOGGERS: Final = ("httpx", "httpcore")
_PTB_LOGGERS: Final = (
    "telegram",
    "telegram.Bot",
    "telegram.BaseRequest",
    "telegram.HTTPXRequest",
    "telegram.ext",
    "telegram.ext.ExtBot",
    "telegram.ext.Application",
    "telegram.ext.Updater",
)

# How long a poll waits for the updates fetched before to be handled (stored).
_HANDLED_WAIT_S: Final = 30.0

# Telegram's own words for "the message you quote does not exist (any more)".
_REPLY_NOT_FOUND = ("message to be replied not found", "replied message not found")
_CHAT_GONE = ("chat not found",)

# A command addressed to one bot in particular: ``/status@some_bot args``.
_ADDRESSED_COMMAND = re.compile(r"^(/[A-Za-z0-9_]+)@([A-Za-z0-9_]+)(?=\s|$)")

# Fields that only service messages carry (joins, pins, title changes, payments, ...).
# A message with none of these and no content we understand is shown as unsupported.
_SERVICE_FIELDS: Final = frozenset(
    {
        "new_chat_members",
        "left_chat_member",
        "new_chat_title",
        "new_chat_photo",
        "delete_chat_photo",
        "group_chat_created",
        "supergroup_chat_created",
        "channel_chat_created",
        "message_auto_delete_timer_changed",
        "migrate_to_chat_id",
        "migrate_from_chat_id",
        "pinned_message",
        "successful_payment",
        "refunded_payment",
        "users_shared",
        "chat_shared",
        "connected_website",
        "write_access_allowed",
        "passport_data",
        "proximity_alert_triggered",
        "boost_added",
        "chat_background_set",
        "chat_owner_changed",
        "chat_owner_left",
        "checklist_tasks_done",
        "checklist_tasks_added",
        "direct_message_price_changed",
        "forum_topic_created",
        "forum_topic_edited",
        "forum_topic_closed",
        "forum_topic_reopened",
        "general_forum_topic_hidden",
        "general_forum_topic_unhidden",
        "gift",
        "gift_upgrade_sent",
        "unique_gift",
        "giveaway_created",
        "giveaway_completed",
        "managed_bot_created",
        "paid_message_price_changed",
        "poll_option_added",
        "poll_option_deleted",
        "suggested_post_approved",
        "suggested_post_approval_failed",
        "suggested_post_declined",
        "suggested_post_paid",
        "suggested_post_refunded",
        "video_chat_scheduled",
        "video_chat_started",
        "video_chat_ended",
        "video_chat_participants_invited",
        "web_app_data",
    }
)

UNSUPPORTED: Final = "[unsupported message]"
FORWARDED_PREFIX: Final = "[forwarded] "


# --- keeping the token out of logs -------------------------------------------------------


class _SecretFilter(logging.Filter):
    """Redact known secrets from stdlib log records, including their tracebacks.

    pacebot's loguru sinks redact too; this keeps PTB's and httpx's records clean for
    any other handler a host application may have attached.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redactor(message)
        if record.exc_info and record.exc_info[1] is not None:
            trace = "".join(traceback.format_exception(*record.exc_info))
            clean = redactor(trace)
            if clean != trace:
                redacted = f"{redacted}\n{clean}"
                record.exc_info = None
                record.exc_text = None
        if redacted != message:
            record.msg = redacted
            record.args = None
        return True


_SECRET_FILTER: Final = _SecretFilter()


def quiet_http_loggers(*secrets: str) -> None:
    """Keep URL-logging libraries at WARNING and redact ``secrets`` from their records.

    httpx logs every request URL at INFO, and Telegram URLs contain the bot token.
    """
    for name in _URL_LOGGERS:
        library_logger = logging.getLogger(name)
        if library_logger.level < logging.WARNING:  # NOTSET would follow the root down
            library_logger.setLevel(logging.WARNING)
    redactor.add(*secrets)
    existing = [
        name
        for name in logging.root.manager.loggerDict
        if name == "telegram" or name.startswith("telegram.")
    ]
    for name in (*_URL_LOGGERS, *_PTB_LOGGERS, *existing):
        library_logger = logging.getLogger(name)
        if _SECRET_FILTER not in library_logger.filters:
            library_logger.addFilter(_SECRET_FILTER)


def _opt_into_timedelta_periods() -> None:
    """Ask PTB for ``timedelta`` time periods (``RetryAfter.retry_after`` and friends).

    The ``int`` form is deprecated since PTB 22.2 and warns on every 429; the
    ``timedelta`` form is what PTB will return in its next major version anyway. An
    explicit ``PTB_TIMEDELTA`` in the environment wins; both forms are handled here.
    """
    os.environ.setdefault("PTB_TIMEDELTA", "1")


# --- inbound: PTB Message → IncomingMessage ----------------------------------------------


def chat_key_of(message: Message) -> ChatKey | None:
    """Return the chat key of a message; ``None`` for channels and unknown chat types."""
    chat = message.chat
    if chat.type == ChatType.PRIVATE:
        return ChatKey(PLATFORM_NAME, ChatKind.PRIVATE, str(chat.id))
    if chat.type in (ChatType.GROUP, ChatType.SUPERGROUP):
        return ChatKey(PLATFORM_NAME, ChatKind.GROUP, str(chat.id))
    return None


def _placeholder(message: Message) -> str | None:
    """Describe non-text content in a few words; ``None`` if there is none we know."""
    # Order matters: an animation also carries a document, a venue also a location.
    if message.photo:
        return "[photo]"
    if message.sticker:
        emoji = message.sticker.emoji
        return f"[sticker {emoji}]" if emoji else "[sticker]"
    if message.voice:
        return "[voice message]"
    if message.audio:
        title = " – ".join(p for p in (message.audio.performer, message.audio.title) if p)
        return f"[audio: {title}]" if title else "[audio]"
    if message.animation:
        return "[GIF]"
    if message.video:
        return "[video]"
    if message.video_note:
        return "[video message]"
    if message.document:
        name = message.document.file_name
        return f"[file {name}]" if name else "[file]"
    if message.venue:
        return f"[venue: {message.venue.title}]"
    if message.location:
        return "[location]"
    if message.contact:
        name = " ".join(p for p in (message.contact.first_name, message.contact.last_name) if p)
        return f"[contact: {name}]" if name else "[contact]"
    if message.poll:
        return f"[poll: {message.poll.question}]"
    if message.dice:
        return f"[dice {message.dice.emoji} {message.dice.value}]"
    return None


def _is_service(message: Message) -> bool:
    """Tell whether a message is a service message (someone joined, a pin, a new title)."""
    fields = message.to_dict()  # includes fields PTB does not know yet (api_kwargs)
    return any(fields.get(name) for name in _SERVICE_FIELDS)


def _sender(message: Message) -> tuple[str, str] | None:
    """Return ``(sender_id, sender_name)``; ``None`` for bots and messages without a sender.

    An anonymous group admin or a message posted "as a channel" comes from a helper bot
    account with ``sender_chat`` set: the chat is the real sender, so it is kept.
    """
    if message.sender_chat is not None:
        title = message.sender_chat.title or message.sender_chat.username
        return str(message.sender_chat.id), title or str(message.sender_chat.id)
    user = message.from_user
    if user is None or user.is_bot:
        return None
    name = (user.full_name or "").strip() or user.username or str(user.id)
    return str(user.id), name


def _mentions_bot(message: Message, *, bot_id: int | None, bot_username: str | None) -> bool:
    """Tell whether an entity of the text or caption names the bot."""
    types: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]
    entities = {**message.parse_entities(types), **message.parse_caption_entities(types)}
    handle = f"@{bot_username}".casefold() if bot_username else None
    for entity, text in entities.items():
        if entity.type == MessageEntity.MENTION and handle and text.casefold() == handle:
            return True
        if (
            entity.type == MessageEntity.TEXT_MENTION
            and entity.user is not None
            and bot_id is not None
            and entity.user.id == bot_id
        ):
            return True
    return False


def _replied_to(message: Message) -> Message | None:
    """Return the message this one quotes, ignoring the implicit forum-topic root."""
    parent = message.reply_to_message
    if parent is None or parent.forum_topic_created is not None:
        return None
    return parent


def normalise(
    message: Message,
    *,
    bot_id: int | None,
    bot_username: str | None,
    bot_name: str,
    aliases: Sequence[str] = (),
) -> IncomingMessage | None:
    """Turn a Telegram message into an ``IncomingMessage``; ``None`` if the bot ignores it.

    Ignored: channels, bots (the bot itself included), service messages and commands
    meant for another bot (``/cmd@otherbot``).
    """
    chat = chat_key_of(message)
    if chat is None:
        return None
    sender = _sender(message)
    if sender is None:
        return None

    original = message.text or message.caption or ""
    addressed_by_command = False
    if message.text:
        text = message.text
        command = _ADDRESSED_COMMAND.match(text)
        if command is not None:
            if bot_username is None or command.group(2).casefold() != bot_username.casefold():
                return None
            text = command.group(1) + text[command.end() :]
            addressed_by_command = True
    else:
        placeholder = _placeholder(message)
        if placeholder is None:
            if _is_service(message):
                return None
            placeholder = UNSUPPORTED
        text = f"{placeholder} {message.caption}" if message.caption else placeholder
    if message.forward_origin is not None:
        text = FORWARDED_PREFIX + text

    parent = _replied_to(message)
    if chat.kind is ChatKind.PRIVATE:
        addresses_bot = True
    else:
        folded = original.casefold()
        names = [n.casefold() for n in (bot_name, *aliases) if n.strip()]
        addresses_bot = (
            addressed_by_command
            or _mentions_bot(message, bot_id=bot_id, bot_username=bot_username)
            or (
                parent is not None
                and parent.from_user is not None
                and bot_id is not None
                and parent.from_user.id == bot_id
            )
            or any(name in folded for name in names)
        )

    sender_id, sender_name = sender
    return IncomingMessage(
        chat=chat,
        message_id=str(message.message_id),
        sender_id=sender_id,
        sender_name=sender_name,
        text=text,
        sent_at=message.date,
        addresses_bot=addresses_bot,
        reply_to_id=str(parent.message_id) if parent is not None else None,
        chat_title=message.chat.title,
    )


# --- retry timing -------------------------------------------------------------------------


def backoff_delay(attempt: int, *, initial_s: float, max_s: float, jitter: float) -> float:
    """Return the wait before retry number ``attempt`` (0-based): doubling, capped, jittered.

    ``jitter`` is a uniform random number in [0, 1); the result lies in [base/2, base).
    """
    base = min(max_s, initial_s * 2.0 ** min(attempt, 62))
    return base / 2 + base / 2 * jitter


def retry_after_seconds(error: RetryAfter) -> float:
    """Return how long Telegram asked to wait, whether PTB gives an int or a timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value: int | float | timedelta = error.retry_after
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


# --- polling ------------------------------------------------------------------------------


def _readable(update: dict[str, Any]) -> dict[str, Any]:
    """Return ``update`` if PTB can read it, else an empty update with the same id."""
    try:
        Update.de_json(update, None)
    except Exception as error:
        logger.warning(
            "skipping Telegram update {} that PTB cannot read ({}: {}); fields: {}",
            update.get("update_id"),
            type(error).__name__,
            error,
            sorted(update),
        )
        return {"update_id": update.get("update_id")}
    return update


def _readable_updates(payload: bytes) -> bytes:
    """Replace the updates of a getUpdates answer that PTB cannot read."""
    try:
        answer = json.loads(payload)
    except ValueError:
        return payload  # PTB reports a broken answer itself
    updates = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(updates, list):
        return payload
    readable = [_readable(u) if isinstance(u, dict) else u for u in updates]
    if all(new is old for new, old in zip(readable, updates, strict=True)):
        return payload
    answer["result"] = readable
    return json.dumps(answer).encode()


class _ReadableUpdatesRequest(HTTPXRequest):
    """The getUpdates connection: confirms only stored updates, skips unreadable ones.

    Each getUpdates confirms every update fetched before (its ``offset``), and PTB sends
    the next one as soon as it has queued the last batch, before the handlers ran: a
    crash then loses updates that Telegram already forgot. ``before_poll`` holds each
    poll until the updates fetched so far have been handled (stored), so a crash can
    only make Telegram deliver them again, and storing is idempotent.

    PTB fetches a batch it cannot parse again and again without confirming it: the bot
    turns deaf and logs a traceback per poll. A self-hosted Bot API server older than
    PTB (one missing a field PTB now requires, e.g. in polls) is enough to cause that,
    so unreadable updates are replaced by empty ones.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.before_poll: Callable[[], Awaitable[None]] | None = None

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        if self.before_poll is not None:
            await self.before_poll()
        code, payload = await super().do_request(*args, **kwargs)
        if code != HTTPStatus.OK:
            return code, payload
        return code, _readable_updates(payload)


# --- the platform ---------------------------------------------------------------------------

_Application = Application[
    ExtBot[None],
    ContextTypes.DEFAULT_TYPE,
    dict[Any, Any],
    dict[Any, Any],
    dict[Any, Any],
    None,
]


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
        jitter: Callable[[], float] = random.random,
        menu: Sequence[tuple[str, str]] = (),
        menu_chat_ids: Sequence[int] = (),
    ) -> None:
        if not token.strip():
            msg = "the Telegram bot token is empty (set the variable named by telegram.token_env)"
            raise ConfigError(msg)
        quiet_http_loggers(token)
        _opt_into_timedelta_periods()
        self._bot_name = bot_name
        self._aliases = tuple(aliases)
        self._poll_timeout_s = poll_timeout_s
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._jitter = jitter
        self._menu = tuple(menu)  # published in the menu_chat_ids chats once polling runs
        self._menu_chat_ids = tuple(menu_chat_ids)

        polls = _ReadableUpdatesRequest(
            # Stopping cancels the long poll and httpx may hold its connection a
            # moment longer: a second one lets the final getUpdates confirm the
            # offset instead of waiting out the pool timeout.
            connection_pool_size=2,
            connect_timeout=request_timeout_s,
            read_timeout=request_timeout_s,
            write_timeout=request_timeout_s,
        )
        polls.before_poll = self._wait_until_handled
        builder = (
            ApplicationBuilder()
            .token(token)
            .job_queue(None)  # scheduling lives in scheduler/, not in PTB
            .concurrent_updates(False)  # keep a chat's messages in order
            .connect_timeout(request_timeout_s)
            .read_timeout(request_timeout_s)
            .write_timeout(request_timeout_s)
            .get_updates_request(polls)
        )
        if api_base_url:
            builder = builder.base_url(api_base_url)
        self._app: _Application = builder.build()
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
        self._request_timeout_s = request_timeout_s
        self._sends_in_flight = 0
        self._sends_idle = asyncio.Event()
        self._sends_idle.set()
        self._bot_id: int | None = None
        self._bot_username: str | None = None

    # --- lifecycle ---------------------------------------------------------------------

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
        self._start_task = asyncio.create_task(self._connect(), name="telegram:connect")
        self._start_task.add_done_callback(self._log_connect_crash)

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
            await self._finish_sends()
            await self._shut_down()
            logger.info("Telegram stopped")

    async def _finish_sends(self) -> None:
        """Let sends already on the wire get their answer before the HTTP client closes.

        Closing the client under a send turns Telegram's answer into a ``ReadError``
        although the message may well have been posted; waiting keeps the outbox true.
        New sends are refused from the moment ``stop()`` began.
        """
        if not self._sends_in_flight:
            return
        try:
            async with asyncio.timeout(self._request_timeout_s + 1.0):
                await self._sends_idle.wait()
        except TimeoutError:
            logger.warning("Telegram: {} send(s) unanswered at stop", self._sends_in_flight)

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
        """Start PTB and the polling, retrying with backoff while the Bot API is unreachable."""
        attempt = 0
        while True:
            try:
                await self._start_polling()
            except InvalidToken:
                self._start_error = ConfigError(
                    "Telegram rejected the bot token: check the variable named by "
                    "telegram.token_env (and telegram.api_base_url)"
                )
                logger.error("{}; Telegram stays off", self._start_error)
                await self._shut_down()
                return
            except (NetworkError, RetryAfter) as error:
                delay = backoff_delay(
                    attempt,
                    initial_s=self._retry_initial_s,
                    max_s=self._retry_max_s,
                    jitter=self._jitter(),
                )
                if isinstance(error, RetryAfter):
                    delay = max(delay, retry_after_seconds(error))
                attempt += 1
                logger.warning(
                    "Telegram Bot API unreachable ({}); retry {} in {:.1f} s",
                    self._describe(error),
                    attempt,
                    delay,
                )
                await asyncio.sleep(delay)
            except TelegramError as error:
                self._start_error = PlatformError(
                    f"Telegram refused to start polling: {self._describe(error)}"
                )
                logger.error("{}; Telegram stays off", self._start_error)
                await self._shut_down()
                return
            else:
                self._ready.set()
                logger.info("Telegram polling started as @{}", self.bot_username)
                if self._sink is not None:  # replies queued while it was away go out now
                    self._sink.platform_ready(self.name)
                if self._menu and self._menu_chat_ids:
                    await self.set_commands(self._menu, chat_ids=self._menu_chat_ids)
                return

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

    def _log_connect_crash(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.opt(exception=error).error("Telegram start-up crashed; Telegram stays off")

    def _on_polling_error(self, error: TelegramError) -> None:
        # PTB retries polling by itself (growing waits up to 30 s); say why, no traceback.
        logger.warning("Telegram polling failed ({}); PTB retries", self._describe(error))

    def _describe(self, error: BaseException) -> str:
        """Describe an error in one line without the token."""
        text = str(error) or type(error).__name__
        return redactor(f"{type(error).__name__}: {text}")

    # --- inbound -----------------------------------------------------------------------

    def _normalise(self, message: Message) -> IncomingMessage | None:
        return normalise(
            message,
            bot_id=self.bot_id,
            bot_username=self.bot_username,
            bot_name=self._bot_name,
            aliases=self._aliases,
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
            self._describe(error) if error is not None else "unknown error",
        )

    # --- outbound ----------------------------------------------------------------------

    async def send_text(self, chat: ChatKey, text: str, *, reply_to: str | None = None) -> str:
        """Post ``text`` to ``chat`` (quoting ``reply_to``); return the new message id."""
        self._check_connected(chat)
        self._sends_in_flight += 1
        self._sends_idle.clear()
        try:
            return await self._send_text(chat, text, reply_to=reply_to)
        finally:
            self._sends_in_flight -= 1
            if not self._sends_in_flight:
                self._sends_idle.set()

    async def _send_text(self, chat: ChatKey, text: str, *, reply_to: str | None) -> str:
        try:
            try:
                message = await self._send(chat, text, reply_to=reply_to)
            except BadRequest as error:
                if reply_to is None or not _says(error, _REPLY_NOT_FOUND):
                    raise
                # The quoted message is gone (deleted, or from before a migration):
                # the words still matter more than the quote.
                logger.bind(chat=str(chat)).info(
                    "quoted message {} not found; sending without the quote", reply_to
                )
                message = await self._send(chat, text, reply_to=None)
        except TelegramError as error:
            raise self._translate(chat, error) from None
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

    def _translate(self, chat: ChatKey, error: TelegramError) -> PacebotError:
        """Map a PTB error to the ``bot.errors`` tree."""
        reason = self._describe(error)
        if isinstance(error, RetryAfter):
            seconds = retry_after_seconds(error)
            msg = f"Telegram asked to wait {seconds:g} s before posting to {chat}"
            return RateLimited(msg, retry_after_s=seconds)
        if isinstance(error, Forbidden):
            return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
        if isinstance(error, ChatMigrated):
            return ChatUnavailable(
                f"{chat} became supergroup telegram:group:{error.new_chat_id}: {reason}"
            )
        if isinstance(error, BadRequest):
            if _says(error, _CHAT_GONE):
                return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
            return MessageRefused(f"Telegram refused a message to {chat}: {reason}")
        if isinstance(error, TimedOut):
            return SendFailed(
                f"sending to {chat} timed out: {reason}", maybe_delivered=not _never_sent(error)
            )
        return SendFailed(
            f"sending to {chat} failed: {reason}", maybe_delivered=not _never_sent(error)
        )

    async def show_typing(self, chat: ChatKey) -> None:
        """Show "typing…" in ``chat`` for about 5 s; any failure is only logged at DEBUG."""
        if self._stopped or not self._ready.is_set():
            return
        try:
            await self._app.bot.send_chat_action(chat_id=int(chat.id), action=ChatAction.TYPING)
        except TelegramError as error:
            logger.bind(chat=str(chat)).debug("typing indicator failed: {}", self._describe(error))

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
            logger.warning("setting the Telegram command menu failed: {}", self._describe(error))
            return False
        return True


# httpx errors raised before a request leaves this machine: it certainly did not arrive.
_BEFORE_SENDING: Final = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)


def _never_sent(error: TelegramError) -> bool:
    """Tell whether a failed request certainly did not reach Telegram.

    PTB raises ``NetworkError`` both for an error answer (a 5xx: Telegram answered and
    posted nothing; no cause) and for a broken connection (the httpx error as the cause).
    A connection that broke after the request went out (``ReadError``, a read timeout,
    the client closed under it) may have delivered it: never resend that.
    """
    cause = error.__cause__
    if cause is None:
        return not isinstance(error, TimedOut)
    return isinstance(cause, _BEFORE_SENDING)


def _says(error: TelegramError, phrases: Sequence[str]) -> bool:
    text = error.message.casefold()
    return any(phrase in text for phrase in phrases)


if TYPE_CHECKING:

    def _conforms(platform: TelegramPlatform) -> Platform:
        return platform
