"""Build PTB's ``Bot`` for pacebot, and keep the bot token out of its logs.

:func:`build_bot` configures the client the way pacebot runs it: explicit timeouts, and
a getUpdates that gets past a page with updates PTB cannot read. pacebot polls
with it itself (:mod:`adapters.telegram.polling`); PTB's ``Application`` and
``Updater`` are not used, so ``telegram.ext`` is never imported.

The bot token is part of every request URL, so it is kept out of logs three ways: the
``httpx``/``httpcore`` loggers stay at WARNING, a filter redacts it from PTB's and httpx's
log records, and every message the adapter logs or raises goes through the redactor.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from http import HTTPStatus
from typing import Any, Final

from loguru import logger
from telegram import Bot, Update
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from bot.errors import ConfigError, PacebotError, PlatformError
from bot.log import redactor

_OFFICIAL_BOT_API: Final = "https://api.telegram.org/bot"

# --- keeping the token out of logs -------------------------------------------------------

# Loggers that see request URLs (and so the token): quiet them and redact what remains.
_URL_LOGGERS: Final = ("httpx", "httpcore")
_PTB_LOGGERS: Final = (
    "telegram",
    "telegram.Bot",
    "telegram.BaseRequest",
    "telegram.HTTPXRequest",
)


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


class _InvalidJSONFilter(logging.Filter):
    """Drop PTB's "Can not load invalid JSON data" record, with its traceback and the body.

    A proxy's HTML error page in front of a self-hosted Bot API server is enough to make
    it. PTB raises a ``TelegramError`` to the caller right after, and pacebot's caller
    (the poller, a send, a picture download) logs that in one line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Can not load invalid JSON data")


_INVALID_JSON_FILTER: Final = _InvalidJSONFilter()
_PTB_REQUEST_LOGGER: Final = "telegram.request.BaseRequest"


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
    request_logger = logging.getLogger(_PTB_REQUEST_LOGGER)
    if _INVALID_JSON_FILTER not in request_logger.filters:
        request_logger.addFilter(_INVALID_JSON_FILTER)


# --- PTB's time periods ------------------------------------------------------------------


def opt_into_timedelta_periods() -> None:
    """Ask PTB for ``timedelta`` time periods (``RetryAfter.retry_after`` and friends).

    The ``int`` form is deprecated since PTB 22.2 and warns on every 429; the
    ``timedelta`` form is what PTB will return in its next major version anyway. An
    explicit ``PTB_TIMEDELTA`` in the environment wins; both forms are handled here.
    """
    os.environ.setdefault("PTB_TIMEDELTA", "1")


# --- the getUpdates connection -----------------------------------------------------------


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
    """The getUpdates connection; while ``careful``, it skips the updates PTB cannot read."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.careful = False

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        code, payload = await super().do_request(*args, **kwargs)
        if code != HTTPStatus.OK or not self.careful:
            return code, payload
        return code, _readable_updates(payload)


class _UnreadablePageFilter(logging.Filter):
    """Drop PTB's CRITICAL "Error while parsing updates!" record, traceback and raw data.

    :class:`_PollingBot` fetches that page again carefully and warns about the update it
    skips; PTB's record would add a traceback and the page's raw messages to the log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Error while parsing updates!")


_UNREADABLE_PAGE_FILTER: Final = _UnreadablePageFilter()


class _PollingBot(Bot):
    """PTB's ``Bot``, whose getUpdates gets past a page PTB cannot read.

    PTB reads a page whole: one update it cannot parse fails the page, which is fetched
    again and again without being confirmed, and the bot turns deaf. A self-hosted Bot
    API server older than PTB (one missing a field PTB now requires, e.g. in polls) is
    enough. Checking every update before PTB reads it would parse each page twice, so
    only a page that failed is fetched again, carefully: the updates PTB cannot read are
    replaced by empty ones.
    """

    def __init__(self, token: str, *, polls: _ReadableUpdatesRequest, **kwargs: Any) -> None:
        super().__init__(token, get_updates_request=polls, **kwargs)
        self._polls = polls
        ptb_logger = logging.getLogger("telegram.Bot")
        if _UNREADABLE_PAGE_FILTER not in ptb_logger.filters:
            ptb_logger.addFilter(_UNREADABLE_PAGE_FILTER)

    async def get_updates(self, *args: Any, **kwargs: Any) -> tuple[Update, ...]:
        try:
            return await super().get_updates(*args, **kwargs)
        except TelegramError:
            raise
        except Exception:  # PTB could not read the page: the careful fetch says which update
            self._polls.careful = True
        try:
            return await super().get_updates(*args, **kwargs)
        finally:
            self._polls.careful = False


# --- the client --------------------------------------------------------------------------


def build_bot(*, token: str, api_base_url: str, request_timeout_s: float) -> Bot:
    """Build PTB's ``Bot``; an empty ``api_base_url`` means Telegram's own Bot API server."""
    polls = _ReadableUpdatesRequest(
        # Stopping cancels the long poll and httpx may hold its connection a
        # moment longer: a second one lets the final getUpdates confirm the
        # offset instead of waiting out the pool timeout.
        connection_pool_size=2,
        connect_timeout=request_timeout_s,
        read_timeout=request_timeout_s,
        write_timeout=request_timeout_s,
    )
    sends = HTTPXRequest(  # PTB's pool of 256 connections: the pacing limits the sends
        connect_timeout=request_timeout_s,
        read_timeout=request_timeout_s,
        write_timeout=request_timeout_s,
    )
    if api_base_url:
        return _PollingBot(token, base_url=api_base_url, request=sends, polls=polls)
    return _PollingBot(token, request=sends, polls=polls)


async def bot_username(token: str, *, api_base_url: str, timeout_s: float = 10.0) -> str:
    """Ask the Bot API who the bot is (``getMe``); return its @username without the ``@``.

    Raise ``ConfigError`` when the token is rejected, ``PlatformError`` when the server
    cannot be reached or refuses otherwise; neither message carries the token.
    """
    quiet_http_loggers(token)
    request = HTTPXRequest(connect_timeout=timeout_s, read_timeout=timeout_s)
    bot = Bot(token, base_url=api_base_url or _OFFICIAL_BOT_API, request=request)
    try:
        async with bot:  # initialising the bot is the getMe call
            return bot.username
    except InvalidToken:
        msg = "the bot token was rejected: check the variable named by telegram.token_env"
        error: PacebotError = ConfigError(msg)
    except TelegramError as exc:
        error = PlatformError(f"getMe failed: {redactor(f'{type(exc).__name__}: {exc}')}")
    raise error
