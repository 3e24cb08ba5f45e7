"""Talk to QQ through a OneBot v11 implementation (NapCat, Lagrange) and nonebot2.

The OneBot implementation connects to nonebot2's reverse WebSocket at
``ws://HOST:PORT/onebot/v11/ws``; :class:`QQPlatform` serves nonebot's ASGI app with an
in-process ``uvicorn.Server`` on a socket it binds itself, so ``start()`` fails at once
when the port is taken and SIGINT/SIGTERM stay pacebot's (uvicorn installs no handlers).

Inbound, message events are taken from the adapter in the order they arrive and handed
to one delivery task; they never run through nonebot's matchers, which handle each event
in its own task (so a message could overtake an earlier one) and call ``get_msg`` for
every quote. :func:`normalise` turns each into an :class:`~bot.models.IncomingMessage`,
reading the raw segments itself: an @bot anywhere, the bot's name or an alias anywhere,
or a quote of a message this process sent addresses the bot. Outbound, ``send_text``
calls ``send_group_msg``/``send_private_msg`` with a segment array and translates
nonebot's errors into the :mod:`bot.errors` tree. Only the reverse WebSocket is served:
the adapter's HTTP routes are removed, since nonebot checks no access token on them.

nonebot is a process-wide singleton, so this module sets it up once, when it is
imported: explicitly configured (no environment variable or ``.env`` file decides
anything), with the OneBot v11 adapter registered. At most one ``QQPlatform`` runs at a
time; it may be started and stopped again in the same process (tests do).

Import order matters: importing nonebot calls ``loguru.logger.remove()`` and
``nonebot.init()`` replaces loguru's patcher and extra, so import this module *before*
``bot.log.setup_logging()`` runs. The access token is never given to nonebot's config
(which nonebot logs at DEBUG) and the loggers that would print request headers stay at
INFO.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import unescape
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self

import nonebot
import nonebot.log
import uvicorn
from fastapi import FastAPI
from fastapi.routing import APIRoute
from loguru import logger
from nonebot.adapters.onebot.v11 import (
    ActionFailed,
    Adapter,
    ApiNotAvailable,
    Bot,
    Event,
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
    MetaEvent,
    NetworkError,
    PrivateMessageEvent,
)
from nonebot.adapters.onebot.v11.config import Config as OneBotConfig
from nonebot.compat import type_validate_python
from nonebot.config import Config as NonebotConfig
from nonebot.drivers import ASGIMixin, Driver

from bot.config import is_loopback
from bot.errors import ChatUnavailable, ConfigError, PacebotError, SendFailed
from bot.log import redactor
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import MessageSink, PacingLimits

if TYPE_CHECKING:
    from bot.ports import Platform

PLATFORM_NAME: Final = "qq"
WS_PATH: Final = "/onebot/v11/ws"

UNSUPPORTED: Final = "[unsupported message]"
_NAME_LIMIT: Final = 60  # characters of a file name or card title shown in a placeholder
_CARD_PARSE_LIMIT: Final = 64_000  # larger card payloads are not parsed for a title
_XML_BRIEF = re.compile(r'\bbrief="([^"]{1,200})"')

# Words OneBot implementations use when the bot can no longer post to a chat. There is
# no standard error code for these (NapCat, Lagrange and go-cqhttp all differ).
_CHAT_GONE: Final = (
    "not in group",
    "not in the group",
    "group not found",
    "group not exist",
    "not a member",
    "muted",
    "not friend",
    "not a friend",
    "friend not found",
    "blocked",
    "kicked",
    "群不存在",
    "不在群",
    "不是群成员",
    "禁言",
    "非好友",
    "不是好友",
    "好友不存在",
    "拉黑",
    "被移出",
)
# An implementation that timed out *internally* may still have posted the message.
_MAYBE_POSTED: Final = ("timeout", "timed out", "超时")
# The OneBot v11 code for "no such action", and the words implementations use for it.
_UNSUPPORTED_RETCODE: Final = 1404
_UNSUPPORTED_WORDS: Final = ("unsupported", "not support", "unknown action", "不支持")

# uvicorn hands its logger to the websockets protocol, which prints every request
# header (the Authorization one too) and every frame at DEBUG.
_HEADER_LOGGERS: Final = ("uvicorn", "uvicorn.error", "websockets")
# A truthy value naming no regular file: nonebot.init() replaces a falsy ``_env_file``
# with ``.env`` and ``.env.{environment}`` from the working directory.
_NO_DOTENV_FILES: Final = (os.devnull,)


# --- inbound: OneBot message event → IncomingMessage -------------------------------------


def chat_key_of(event: MessageEvent) -> ChatKey | None:
    """Return the chat of a message: the group, not nonebot's per-user session."""
    if isinstance(event, GroupMessageEvent):
        return ChatKey(PLATFORM_NAME, ChatKind.GROUP, str(event.group_id))
    if isinstance(event, PrivateMessageEvent):
        return ChatKey(PLATFORM_NAME, ChatKind.PRIVATE, str(event.user_id))
    return None


def _one_line(text: str, limit: int = _NAME_LIMIT) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _card_title(payload: object) -> str | None:
    """Return the summary line of a QQ ``json`` card (its ``prompt``), if it has one."""
    if not isinstance(payload, str) or len(payload) > _CARD_PARSE_LIMIT:
        return None
    try:
        card = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(card, dict):
        return None
    prompt = card.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return _one_line(prompt)
    return None


def _xml_title(payload: object) -> str | None:
    """Return the ``brief`` of a QQ ``xml`` card without parsing the XML."""
    if not isinstance(payload, str):
        return None
    found = _XML_BRIEF.search(payload[:_CARD_PARSE_LIMIT])
    if found is None:
        return None
    title = _one_line(unescape(found.group(1)))
    return title or None


def _file_name(data: dict[str, Any]) -> str | None:
    for key in ("name", "file"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and "://" not in value:
            return _one_line(value.replace("\\", "/").rsplit("/", 1)[-1])
    return None


def placeholder(segment: MessageSegment) -> str:
    """Describe a non-text segment in a few words; never fails."""
    kind, data = segment.type, segment.data if isinstance(segment.data, dict) else {}
    simple = {
        "face": "[face]",
        "record": "[voice message]",
        "video": "[video]",
        "forward": "[forwarded messages]",
        "node": "[forwarded messages]",
        "poke": "[poke]",
        "shake": "[poke]",
        "rps": "[rock paper scissors]",
        "music": "[music]",
        "contact": "[contact]",
        "mface": "[sticker]",
        "location": "[location]",
    }
    if kind == "image":
        # NapCat marks stickers (表情包) as images with sub_type 1.
        return "[sticker]" if str(data.get("sub_type", "0")) == "1" else "[image]"
    if kind == "dice":
        result = data.get("result")
        return f"[dice {result}]" if isinstance(result, (int, str)) and str(result) else "[dice]"
    if kind == "file":
        name = _file_name(data)
        return f"[file {name}]" if name else "[file]"
    if kind == "share":
        title = data.get("title")
        return (
            f"[link: {_one_line(title)}]" if isinstance(title, str) and title.strip() else "[link]"
        )
    if kind in ("json", "xml"):
        title = _card_title(data.get("data")) if kind == "json" else _xml_title(data.get("data"))
        return f"[card: {title}]" if title else "[card]"
    return simple.get(kind, UNSUPPORTED)


@dataclass(frozen=True, slots=True)
class _Rendered:
    text: str  # what the chatter sees, placeholders included
    spoken: str  # only the typed words, for finding the bot's name
    mentions_bot: bool
    reply_to_id: str | None


def render(message: Message, *, self_id: str, bot_name: str) -> _Rendered:
    """Turn a segment array into text; drop an @bot that opens or closes the message.

    Leading and trailing @bot are addressing, not words (and ``@bot /status`` must still
    read as the command ``/status``); one in the middle of a sentence stays as ``@name``.
    """
    parts: list[tuple[str, str]] = []  # (kind, text); kind is "text", "at_bot" or "other"
    spoken: list[str] = []
    mentions_bot = False
    reply_to_id: str | None = None
    for segment in message:
        data = segment.data if isinstance(segment.data, dict) else {}
        if segment.type == "text":
            words = data.get("text")
            if isinstance(words, str) and words:
                parts.append(("text", words))
                spoken.append(words)
        elif segment.type == "reply":
            if reply_to_id is None and data.get("id") is not None:
                reply_to_id = str(data["id"])
        elif segment.type == "at":
            target = str(data.get("qq", ""))
            if target == self_id:
                mentions_bot = True
                parts.append(("at_bot", f"@{bot_name}"))
            elif target == "all":
                parts.append(("other", "@all"))
            else:
                name = data.get("name")
                shown = name.strip() if isinstance(name, str) and name.strip() else target
                parts.append(("other", f"@{_one_line(shown)}"))
        else:
            parts.append(("other", placeholder(segment)))

    def trim(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        while items and (items[0][0] == "at_bot" or not items[0][1].strip()):
            items = items[1:]
        return items

    trimmed = trim(parts)
    trimmed = list(reversed(trim(list(reversed(trimmed)))))
    pieces: list[str] = []
    previous_kind = "text"
    for kind, value in trimmed:
        touching = pieces and not pieces[-1][-1:].isspace() and not value[:1].isspace()
        if touching and (kind != "text" or previous_kind != "text"):
            pieces.append(" ")
        pieces.append(value)
        previous_kind = kind
    text = "".join(pieces).strip()
    if not text and mentions_bot:
        text = f"@{bot_name}"  # a bare "@bot": keep something the model can read
    return _Rendered(text, "".join(spoken), mentions_bot, reply_to_id)


def _sender_is_bot(event: MessageEvent) -> bool:
    """Tell whether the event marks its sender as a bot (some implementations do)."""
    extra = event.sender.model_extra or {}
    return extra.get("is_robot") is True or extra.get("is_bot") is True


def _sender_name(event: MessageEvent) -> str:
    if isinstance(event, GroupMessageEvent) and event.anonymous is not None:
        return event.anonymous.name or "anonymous"
    for name in (event.sender.card, event.sender.nickname):
        if name and name.strip():
            return name.strip()
    return str(event.user_id)


def normalise(
    event: MessageEvent,
    *,
    bot_name: str,
    aliases: Sequence[str] = (),
) -> IncomingMessage | None:
    """Turn a OneBot message event into an ``IncomingMessage``; ``None`` if it is ignored.

    Ignored: the bot's own messages, senders the event marks as bots, group system
    notices and chats other than groups and private chats. A quote carries only the
    quoted id here; whether it quotes the bot, the pipeline looks up in the store.
    """
    chat = chat_key_of(event)
    if chat is None or event.user_id == event.self_id or _sender_is_bot(event):
        return None
    if isinstance(event, GroupMessageEvent) and event.sub_type == "notice":
        return None
    rendered = render(event.message, self_id=str(event.self_id), bot_name=bot_name)
    title: str | None = None
    if chat.is_group:
        folded = rendered.spoken.casefold()
        names = [n.casefold() for n in (bot_name, *aliases) if n.strip()]
        addresses_bot = rendered.mentions_bot or any(n in folded for n in names)
        group_name = (event.model_extra or {}).get("group_name")
        title = group_name if isinstance(group_name, str) and group_name.strip() else None
    else:
        addresses_bot = True
    return IncomingMessage(
        chat=chat,
        message_id=str(event.message_id),
        sender_id=str(event.user_id),
        sender_name=_sender_name(event),
        text=rendered.text,
        sent_at=datetime.fromtimestamp(event.time, tz=UTC),
        addresses_bot=addresses_bot,
        reply_to_id=rendered.reply_to_id,
        chat_title=title,
    )


# --- nonebot, set up once per process -----------------------------------------------------


class _OneBotAdapter(Adapter):
    """The OneBot v11 adapter, handing messages and connections to the running platform."""

    running: ClassVar[QQPlatform | None] = None

    def __init__(self, driver: Driver, **kwargs: Any) -> None:
        super().__init__(driver, **kwargs)
        # The stock adapter read its config from the environment (ONEBOT_ACCESS_TOKEN,
        # ONEBOT_WS_URLS, ...); only what a running QQPlatform sets counts.
        self.onebot_config = _onebot_config(None)

    @classmethod
    def json_to_event(cls, json_data: Any) -> Event | None:
        """Parse one frame; take message events here, in arrival order."""
        if isinstance(json_data, dict) and "post_type" in json_data:
            event = cls._parse_event(json_data)
        else:
            event = super().json_to_event(json_data)  # API answers go to nonebot's result store
        if event is None or isinstance(event, MetaEvent):
            return event  # API answers (None) and heartbeats go on as nonebot expects
        platform = cls.running
        if isinstance(event, MessageEvent) and platform is not None:
            platform._take(event)
        else:
            logger.debug("QQ: ignoring OneBot event {}", event.get_event_name())
        return None  # nonebot's own event handling has nothing to do for pacebot

    @classmethod
    def _parse_event(cls, data: dict[str, Any]) -> Event | None:
        """Read an event with nonebot's models, the way nonebot does, but quietly.

        For a malformed event nonebot logs a traceback per model it tries, then the whole
        raw event (the chatter's words included) with another one at ERROR. A broken
        event from the OneBot implementation is worth one warning line, not that.
        """
        for model in cls.get_event_model(data):
            try:
                return type_validate_python(model, data)
            except Exception:  # as nonebot does: try the next, more general model
                continue
        try:
            return type_validate_python(Event, data)
        except Exception as error:
            logger.warning(
                "QQ: skipping a malformed OneBot {} event: {}",
                str(data.get("post_type"))[:40],
                _one_line(str(error), 200),
            )
            return None

    def bot_connect(self, bot: Bot) -> None:  # type: ignore[override]  # v11 Bot, not the base
        super().bot_connect(bot)
        if self.running is not None:
            self.running._on_connect(bot)

    def bot_disconnect(self, bot: Bot) -> None:  # type: ignore[override]  # v11 Bot, not the base
        super().bot_disconnect(bot)
        if self.running is not None:
            self.running._on_disconnect(bot)


def _onebot_config(access_token: str | None) -> OneBotConfig:
    """Return the adapter's config: just the token that guards the WebSocket."""
    return OneBotConfig.model_validate({"onebot_access_token": access_token})


def _nonebot_settings() -> dict[str, Any]:
    """Return a value for every nonebot setting, so no environment variable decides one.

    nonebot reads variables named like its settings (``HOST``, ``PORT``, ``DRIVER``,
    ``SUPERUSERS``...); arguments to ``nonebot.init()`` take precedence over them.
    Host and port are unused: ``QQPlatform`` serves the app itself.
    """
    settings = {
        name: field.get_default(call_default_factory=True)
        for name, field in NonebotConfig.model_fields.items()
    }
    settings.update(
        driver="~fastapi",
        log_level="INFO",
        api_timeout=60.0,  # a backstop: each call is bounded by QQPlatform's own timeout
        superusers=set(),
        nickname=set(),  # pacebot finds its name in the text itself
    )
    return settings


def _start_nonebot() -> _OneBotAdapter:
    """Initialise nonebot explicitly and register the adapter; return the adapter."""
    # nonebot's import replaced every loguru sink with its own stdout sink; drop that
    # one so its start-up chatter stays out of stdout until pacebot's sinks are added.
    with contextlib.suppress(ValueError):
        logger.remove(nonebot.log.logger_id)
    nonebot.init(_env_file=_NO_DOTENV_FILES, **_nonebot_settings())
    driver = nonebot.get_driver()
    if not isinstance(driver, ASGIMixin):
        msg = f"nonebot was initialised elsewhere with the {driver.type} driver; QQ needs ~fastapi"
        raise ConfigError(msg)
    driver.register_adapter(_OneBotAdapter)
    adapter = nonebot.get_adapter(_OneBotAdapter.get_name())  # by name: may be another class
    if not isinstance(adapter, _OneBotAdapter):
        msg = "nonebot was initialised elsewhere with another OneBot v11 adapter"
        raise ConfigError(msg)
    _serve_websocket_only(driver.server_app)
    return adapter


def _serve_websocket_only(app: object) -> None:
    """Remove the adapter's HTTP routes: only the reverse WebSocket is supported.

    nonebot checks no access token on HTTP posts (only an HMAC secret), so anyone who
    reaches the port could post fake messages there, or register a bot id that then
    blocks the real connection as a duplicate.
    """
    if not isinstance(app, FastAPI):
        msg = f"nonebot serves {type(app).__name__}, not FastAPI; QQ needs the ~fastapi driver"
        raise ConfigError(msg)
    app.router.routes[:] = [route for route in app.router.routes if not isinstance(route, APIRoute)]


_ADAPTER: Final = _start_nonebot()


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that runs it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    """Open the listening socket; raise ``ConfigError`` naming the address if it fails."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family)
    except OSError as error:
        msg = (
            f"cannot listen for OneBot on {host}:{port} ({error.strerror or error}); "
            "check qq.host and qq.port"
        )
        raise ConfigError(msg) from None


def _quiet_header_loggers() -> None:
    for name in _HEADER_LOGGERS:
        library_logger = logging.getLogger(name)
        if library_logger.getEffectiveLevel() < logging.INFO:
            library_logger.setLevel(logging.INFO)


def _says(error: ActionFailed, phrases: Sequence[str]) -> bool:
    words = " ".join(str(error.info.get(key) or "") for key in ("wording", "message", "msg"))
    folded = words.casefold()
    return any(phrase in folded for phrase in phrases)


def _describe(error: ActionFailed) -> str:
    info = error.info
    words = info.get("wording") or info.get("message") or info.get("msg") or "no reason given"
    return f"retcode {info.get('retcode')}: {_one_line(str(words), 200)}"


def _as_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


# --- the platform -----------------------------------------------------------------------------


class QQPlatform:
    """Receive QQ messages from a OneBot implementation and post replies through it.

    ``start(sink)`` binds ``host:port`` and returns at once; the OneBot implementation
    connects whenever it is ready (``connected`` is set while it is). ``stop()`` is
    idempotent and also runs when leaving ``async with``. One platform runs at a time,
    and it must be stopped before its event loop ends (nonebot's state is process-wide).
    """

    name: Final = PLATFORM_NAME
    text_limit: Final = 4500
    limits: Final = PacingLimits(chat_interval_s=1.0, group_per_minute=20, overall_per_s=1.0)
    typing_interval_s: Final = 5.0  # assumed: QQ shows "typing…" for a few seconds

    def __init__(
        self,
        *,
        host: str,
        port: int,
        access_token: str | None,
        bot_name: str,
        aliases: Sequence[str] = (),
        api_timeout_s: float = 10.0,
        typing_indicator: bool = True,
        drain_timeout_s: float = 10.0,
    ) -> None:
        token = access_token.strip() if access_token else ""
        if not token and not is_loopback(host):
            msg = (
                f"qq.host = {host!r} accepts connections from other machines, so the OneBot "
                "access token is required: set the variable named by qq.access_token_env "
                "(or listen on 127.0.0.1)"
            )
            raise ConfigError(msg)
        if token:
            redactor.add(token)
        self._host = host
        self._port = port
        self._token = token or None
        self._bot_name = bot_name
        self._aliases = tuple(a for a in aliases if a.strip())
        self._api_timeout_s = api_timeout_s
        self._typing_timeout_s = min(api_timeout_s, 2.0)
        self._typing_supported = typing_indicator
        self._typing_timeouts = 0
        self._drain_timeout_s = drain_timeout_s

        self.connected = asyncio.Event()
        self._self_id: str | None = None
        self._sink: MessageSink | None = None
        self._inbox: asyncio.Queue[MessageEvent] = asyncio.Queue()
        self._server: _Server | None = None
        self._server_task: asyncio.Task[None] | None = None
        self._delivery_task: asyncio.Task[None] | None = None
        self._started = False
        self._stopped = False
        self._sends_in_flight = 0
        self._sends_idle = asyncio.Event()
        self._sends_idle.set()

    # --- lifecycle -------------------------------------------------------------------------

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
    def port(self) -> int:
        """The port listened on (the one the OS chose, after ``start()`` with port 0)."""
        return self._port

    @property
    def ws_url(self) -> str:
        """Where the OneBot implementation connects (its reverse WebSocket URL)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"ws://{host}:{self._port}{WS_PATH}"

    @property
    def self_id(self) -> str | None:
        """The QQ account of the connected OneBot implementation, if one is connected."""
        return self._self_id

    @property
    def typing_refresh_s(self) -> float | None:
        """Repeat NapCat's typing status this often; ``None`` once the implementation lacks it."""
        return self.typing_interval_s if self._typing_supported else None

    async def wait_connected(self, timeout_s: float) -> None:
        """Wait until a OneBot implementation is connected; ``TimeoutError`` after ``timeout_s``."""
        async with asyncio.timeout(timeout_s):
            await self.connected.wait()

    async def start(self, sink: MessageSink) -> None:
        """Listen for the OneBot connection and deliver its messages to ``sink``.

        Raise ``ConfigError`` if the address cannot be bound.
        """
        if self._started or self._stopped:
            msg = "QQPlatform.start() may be called only once"
            raise RuntimeError(msg)
        if _OneBotAdapter.running is not None:
            msg = "another QQPlatform is running in this process (nonebot allows one)"
            raise RuntimeError(msg)
        sock = _bind(self._host, self._port)
        self._started = True
        self._port = sock.getsockname()[1]
        self._sink = sink
        _quiet_header_loggers()
        _ADAPTER.onebot_config = _onebot_config(self._token)
        _OneBotAdapter.running = self
        config = uvicorn.Config(
            nonebot.get_asgi(),
            host=self._host,
            port=self._port,
            log_config=None,  # keep pacebot's logging: uvicorn's records go to the root
            access_log=False,
            lifespan="on",
            ws="websockets-sansio",
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = _Server(config)
        self._delivery_task = asyncio.create_task(self._deliver_all(), name="qq:deliver")
        self._delivery_task.add_done_callback(self._log_crash)
        self._server_task = asyncio.create_task(self._serve(self._server, sock), name="qq:server")
        self._server_task.add_done_callback(self._log_crash)
        logger.info(
            "QQ: waiting for OneBot at {}{}",
            self.ws_url,
            " (access token required)" if self._token else "",
        )

    async def stop(self) -> None:
        """Stop listening, deliver the messages already received, release nonebot."""
        if self._stopped:
            return
        self._stopped = True
        if not self._started:
            return
        try:
            await self._finish_sends()
            await self._stop_server()
            await self._drain()
        finally:
            self._release()
        logger.info("QQ stopped")

    async def _finish_sends(self) -> None:
        """Let sends already on the wire get their answer before the connection closes.

        Closing it under a send leaves the call unanswered although NapCat may have
        posted the message; waiting keeps the outbox true. New sends are refused from
        the moment ``stop()`` began, and each waits at most ``api_timeout_s``.
        """
        if not self._sends_in_flight:
            return
        try:
            async with asyncio.timeout(self._api_timeout_s + 1.0):
                await self._sends_idle.wait()
        except TimeoutError:
            logger.warning("QQ: {} send(s) unanswered at stop", self._sends_in_flight)

    async def _serve(self, server: _Server, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit:  # uvicorn's answer to a failed start-up; the process goes on
            logger.error("QQ: the OneBot server failed to start; QQ stays off")
        finally:
            sock.close()

    async def _stop_server(self) -> None:
        server, task = self._server, self._server_task
        if server is None or task is None:
            return
        server.should_exit = True
        done, _ = await asyncio.wait({task}, timeout=5.0)
        if not done:
            logger.warning("QQ: the OneBot server did not stop in time; cancelling it")
            server.force_exit = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _drain(self) -> None:
        """Hand the messages already received to the sink, then end the delivery task."""
        task = self._delivery_task
        if task is None:
            return
        if not task.done():
            try:
                async with asyncio.timeout(self._drain_timeout_s):
                    await self._inbox.join()
            except TimeoutError:
                logger.error(
                    "QQ: {} received messages were not stored in time", self._inbox.qsize()
                )
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _release(self) -> None:
        """Leave nonebot as a later platform expects to find it."""
        for bot in list(_ADAPTER.bots.values()):  # normally gone with their connections
            _ADAPTER.connections.pop(bot.self_id, None)
            with contextlib.suppress(RuntimeError):
                _ADAPTER.bot_disconnect(bot)  # type: ignore[arg-type]  # the adapter makes v11 Bots
        _OneBotAdapter.running = None
        _ADAPTER.onebot_config = _onebot_config(None)
        self._self_id = None
        self.connected.clear()

    def _log_crash(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.opt(exception=error).error("QQ: task {} crashed", task.get_name())

    # --- connections -------------------------------------------------------------------

    def _on_connect(self, bot: Bot) -> None:
        if self._self_id is None:
            self._self_id = bot.self_id
            self.connected.set()
            logger.info("QQ: OneBot connected as {}", bot.self_id)
            if self._sink is not None:
                self._sink.platform_ready(self.name)
        else:
            logger.warning(
                "QQ: a second OneBot account {} connected; replies still go out as {}",
                bot.self_id,
                self._self_id,
            )

    def _on_disconnect(self, bot: Bot) -> None:
        if bot.self_id != self._self_id:
            logger.info("QQ: OneBot account {} disconnected", bot.self_id)
            return
        others = [other for other in _ADAPTER.bots if other != bot.self_id]
        self._self_id = others[0] if others else None
        if self._self_id is None:
            self.connected.clear()
            logger.info(
                "QQ: OneBot {} disconnected; replies wait in the outbox until it is back",
                bot.self_id,
            )
        else:
            logger.info("QQ: OneBot {} disconnected; now posting as {}", bot.self_id, self._self_id)

    def _bot(self) -> Bot | None:
        if self._self_id is None:
            return None
        bot = _ADAPTER.bots.get(self._self_id)
        return bot if isinstance(bot, Bot) else None

    # --- inbound -----------------------------------------------------------------------

    def _take(self, event: MessageEvent) -> None:
        """Queue a message event; called by the adapter as each frame arrives.

        Frames keep arriving while ``stop()`` closes the connections; they are taken too,
        since OneBot never sends a message twice.
        """
        task = self._delivery_task
        if task is not None and not task.done():
            self._inbox.put_nowait(event)

    async def _deliver_all(self) -> None:
        while True:
            event = await self._inbox.get()
            try:
                await self._deliver(event)
            except Exception:
                chat = chat_key_of(event)
                logger.bind(chat=str(chat) if chat else "qq:?").exception(
                    "QQ: handling message {} failed", event.message_id
                )
            finally:
                self._inbox.task_done()

    async def _deliver(self, event: MessageEvent) -> None:
        message = normalise(event, bot_name=self._bot_name, aliases=self._aliases)
        if message is not None and self._sink is not None:
            await self._sink.receive(message)

    # --- outbound ----------------------------------------------------------------------

    async def send_text(self, chat: ChatKey, text: str, *, reply_to: str | None = None) -> str:
        """Post ``text`` to ``chat`` (quoting ``reply_to``); return the new message id."""
        log = logger.bind(chat=str(chat))
        action, target = self._target(chat)
        bot = self._bot()
        if bot is None or self._stopped:
            msg = f"OneBot not connected; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        message = Message()
        quote = _as_int(reply_to)
        if quote is not None:
            message.append(MessageSegment.reply(quote))
        elif reply_to is not None:
            log.info("cannot quote message {!r} (not a QQ message id); sending without", reply_to)
        message.append(MessageSegment.text(text))
        self._sends_in_flight += 1
        self._sends_idle.clear()
        try:
            async with asyncio.timeout(self._api_timeout_s):
                result = await bot.call_api(action, **target, message=message)
        except (TimeoutError, NetworkError):
            msg = f"OneBot did not answer {action} for {chat} within {self._api_timeout_s:g} s"
            raise SendFailed(msg, maybe_delivered=True) from None
        except ActionFailed as error:
            raise self._refusal(chat, action, error) from None
        except ApiNotAvailable:
            msg = f"OneBot disconnected; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False) from None
        except Exception as error:  # the connection broke before the request went out
            msg = f"sending to {chat} failed: {type(error).__name__}: {error}"
            raise SendFailed(msg, maybe_delivered=False) from None
        finally:
            self._sends_in_flight -= 1
            if not self._sends_in_flight:
                self._sends_idle.set()
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if message_id is None:
            log.warning("OneBot posted to {} but returned no message id", chat)
            return ""
        return str(message_id)

    def _target(self, chat: ChatKey) -> tuple[str, dict[str, int]]:
        """Return the action and its target parameter for ``chat``."""
        try:
            chat_id = int(chat.id)
        except ValueError:
            chat_id = None
        if chat.platform != PLATFORM_NAME or chat_id is None:
            msg = f"{chat} is not a QQ chat; nothing was sent"
            raise SendFailed(msg, maybe_delivered=False)
        if chat.is_group:
            return "send_group_msg", {"group_id": chat_id}
        return "send_private_msg", {"user_id": chat_id}

    def _refusal(self, chat: ChatKey, action: str, error: ActionFailed) -> PacebotError:
        """Map a failed action to the ``bot.errors`` tree."""
        reason = _describe(error)
        if _says(error, _CHAT_GONE):
            return ChatUnavailable(f"the bot cannot post to {chat}: {reason}")
        if _says(error, _MAYBE_POSTED):
            return SendFailed(
                f"OneBot timed out posting to {chat} ({reason})", maybe_delivered=True
            )
        return SendFailed(f"OneBot refused {action} to {chat}: {reason}", maybe_delivered=False)

    async def show_typing(self, chat: ChatKey) -> None:
        """Show "typing…" in a private chat through NapCat's ``set_input_status``.

        OneBot v11 has no typing indicator; other implementations answer "unsupported",
        after which no more attempts are made. Groups show nothing. Failures are swallowed.
        """
        if not self._typing_supported or chat.kind is not ChatKind.PRIVATE or self._stopped:
            return
        bot = self._bot()
        user_id = _as_int(chat.id)
        if bot is None or user_id is None:
            return
        log = logger.bind(chat=str(chat))
        try:
            async with asyncio.timeout(self._typing_timeout_s):
                await bot.call_api("set_input_status", user_id=user_id, event_type=1)
        except ActionFailed as error:
            if error.info.get("retcode") == _UNSUPPORTED_RETCODE or _says(
                error, _UNSUPPORTED_WORDS
            ):
                self._typing_supported = False
                logger.info(
                    "QQ: OneBot has no set_input_status ({}); no typing indicator", _describe(error)
                )
            else:
                log.debug("typing indicator failed: {}", _describe(error))
        except (TimeoutError, NetworkError):
            self._typing_timeouts += 1
            if self._typing_timeouts >= 3:  # an implementation that ignores unknown actions
                self._typing_supported = False
                logger.info("QQ: set_input_status never answers; no typing indicator")
        except Exception as error:
            log.debug("typing indicator failed: {}: {}", type(error).__name__, error)
        else:
            self._typing_timeouts = 0


if TYPE_CHECKING:

    def _conforms(platform: QQPlatform) -> Platform:
        return platform
