"""Set up nonebot2 with the OneBot v11 adapter, and serve its reverse WebSocket.

nonebot is a process-wide singleton, set up once by :mod:`adapters.nonebot_host`.
:func:`onebot_adapter` registers the OneBot v11 adapter the first time a
:class:`~adapters.qq.platform.QQPlatform` is built, never at import, and removes its HTTP
routes, since nonebot checks no access token on them. Later calls return the same adapter.

The app is served by an in-process ``uvicorn.Server`` on a socket bound here, so a taken
port fails at once and SIGINT/SIGTERM stay pacebot's (the server installs no handlers).

Logging: importing nonebot (which importing any module of this package does) calls
``loguru.logger.remove()`` and adds nonebot's own stdout sink, so the composition root
imports the QQ package *before* ``bot.log.setup_logging()`` runs. ``nonebot.init()``
replaces loguru's patcher and extra, which :mod:`adapters.nonebot_host` puts back. The
access token is never given to nonebot's config (which nonebot logs at DEBUG), and the
loggers that would print request headers are kept at INFO by :func:`quiet_header_loggers`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any, ClassVar, Final, Protocol

import nonebot
import uvicorn
from fastapi import FastAPI
from fastapi.routing import APIRoute
from loguru import logger
from nonebot.adapters.onebot.v11 import (
    Adapter,
    Bot,
    Event,
    Message,
    MessageEvent,
    MessageSegment,
    MetaEvent,
)
from nonebot.adapters.onebot.v11.config import Config as OneBotConfig
from nonebot.compat import type_validate_python
from nonebot.drivers import ASGIMixin, Driver

from adapters import asgi, nonebot_host
from adapters.qq.normalise import one_line
from bot.errors import ConfigError

WS_PATH: Final = "/onebot/v11/ws"

# uvicorn hands its logger to the websockets protocol, which prints every request
# header (the Authorization one too) and every frame at DEBUG.
_HEADER_LOGGERS: Final = ("uvicorn", "uvicorn.error", "websockets")


class Listener(Protocol):
    """What the adapter hands messages and connections to: the running platform."""

    def take(self, event: MessageEvent) -> None:
        """Queue a message event, in arrival order."""

    def bot_connected(self, bot: Bot) -> None:
        """Note that a OneBot account connected."""

    def bot_disconnected(self, bot: Bot) -> None:
        """Note that a OneBot account disconnected."""

    @property
    def hosts_plugins(self) -> bool:
        """Whether nonebot plugins run here: then the other events reach nonebot too."""


def _with_segments_read(data: dict[str, Any]) -> dict[str, Any]:
    """Return ``data`` with its message already read into segments, where each segment is
    a plain ``{"type": str, "data": {str: ...}}`` (anything else is left to nonebot).

    nonebot reads each segment with a pydantic ``TypeAdapter`` it builds anew every time,
    most of the cost of reading a message event (68 of 82 µs for two segments): on the
    way of every message from the wire to its timer.
    """
    raw = data.get("message")
    if not isinstance(raw, list):
        return data
    read = Message()
    for item in raw:
        segment = _plain_segment(item)
        if segment is None:
            return data
        read.append(segment)
    return {**data, "message": read}


def _plain_segment(item: Any) -> MessageSegment | None:
    """Return ``item`` as nonebot reads a segment; ``None`` if it is not a plain one."""
    if not isinstance(item, dict) or not isinstance(kind := item.get("type"), str):
        return None
    fields = item.get("data", {})
    if not isinstance(fields, dict) or not all(isinstance(key, str) for key in fields):
        return None
    return MessageSegment(kind, dict(fields))


class OneBotAdapter(Adapter):
    """The OneBot v11 adapter, handing messages and connections to the running platform."""

    running: ClassVar[Listener | None] = None

    def __init__(self, driver: Driver, **kwargs: Any) -> None:
        super().__init__(driver, **kwargs)
        # The stock adapter read its config from the environment (ONEBOT_ACCESS_TOKEN,
        # ONEBOT_WS_URLS, ...); only what a running QQPlatform sets counts.
        self.onebot_config = onebot_config(None)

    def attach(self, listener: Listener, *, access_token: str | None) -> None:
        """Send events to ``listener`` and require ``access_token`` from now on."""
        self.onebot_config = onebot_config(access_token)
        OneBotAdapter.running = listener

    def detach(self) -> None:
        """Forget the listener and any connection left, as a later platform expects."""
        for bot in list(self.bots.values()):  # normally gone with their connections
            self.connections.pop(bot.self_id, None)
            with contextlib.suppress(RuntimeError):
                self.bot_disconnect(bot)  # type: ignore[arg-type]  # the adapter makes v11 Bots
        OneBotAdapter.running = None
        self.onebot_config = onebot_config(None)

    @classmethod
    def json_to_event(cls, json_data: Any) -> Event | None:
        """Parse one frame; take message events here, in arrival order."""
        if isinstance(json_data, dict) and "post_type" in json_data:
            event = cls._parse_event(json_data)
        else:
            event = super().json_to_event(json_data)  # API answers go to nonebot's result store
        if event is None or isinstance(event, MetaEvent):
            return event  # API answers (None) and heartbeats go on as nonebot expects
        listener = cls.running
        if isinstance(event, MessageEvent) and listener is not None:
            listener.take(event)  # the platform runs it through the plugins, if any
            return None
        if listener is not None and listener.hosts_plugins:
            return event  # notices and requests go to the plugins as in a plain nonebot bot
        logger.debug("QQ: ignoring OneBot event {}", event.get_event_name())
        return None  # nonebot's own event handling has nothing to do for pacebot

    @classmethod
    def _parse_event(cls, data: dict[str, Any]) -> Event | None:
        """Read an event with nonebot's models, the way nonebot does, but quietly.

        For a malformed event nonebot logs a traceback per model it tries, then the whole
        raw event (the chatter's words included) with another one at ERROR. A broken
        event from the OneBot implementation is worth one warning line, not that.
        """
        data = _with_segments_read(data)
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
                one_line(str(error), 200),
            )
            return None

    def bot_connect(self, bot: Bot) -> None:  # type: ignore[override]  # v11 Bot, not the base
        super().bot_connect(bot)
        if self.running is not None:
            self.running.bot_connected(bot)

    def bot_disconnect(self, bot: Bot) -> None:  # type: ignore[override]  # v11 Bot, not the base
        super().bot_disconnect(bot)
        if self.running is not None:
            self.running.bot_disconnected(bot)


def read_event(data: dict[str, Any]) -> Event | None:
    """Read an event that came another way than the wire (a history item), as the wire's."""
    return OneBotAdapter._parse_event(data)


def onebot_config(access_token: str | None) -> OneBotConfig:
    """Return the adapter's config: just the token that guards the WebSocket."""
    return OneBotConfig.model_validate({"onebot_access_token": access_token})


@functools.cache
def onebot_adapter() -> OneBotAdapter:
    """Register the OneBot adapter on nonebot (set up once per process) and return it.

    Raise ``ConfigError`` if nonebot was initialised elsewhere in a way QQ cannot use.
    """
    with nonebot_host.registering() as driver:
        if not isinstance(driver, ASGIMixin):
            msg = (
                f"nonebot was initialised elsewhere with the {driver.type} driver; "
                "QQ needs ~fastapi"
            )
            raise ConfigError(msg)
        driver.register_adapter(OneBotAdapter)
    adapter = nonebot.get_adapter(OneBotAdapter.get_name())  # by name: may be another class
    if not isinstance(adapter, OneBotAdapter):
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


def server(host: str, port: int) -> asgi.Server:
    """Return a server for nonebot's app on ``host:port`` that logs through pacebot."""
    config = uvicorn.Config(
        nonebot.get_asgi(),
        host=host,
        port=port,
        log_config=None,  # keep pacebot's logging: uvicorn's records go to the root
        access_log=False,
        lifespan="on",
        ws="websockets-sansio",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    return asgi.Server(config)


def quiet_header_loggers() -> None:
    """Keep the loggers that print request headers (the token among them) at INFO or above."""
    for name in _HEADER_LOGGERS:
        library_logger = logging.getLogger(name)
        if library_logger.getEffectiveLevel() < logging.INFO:
            library_logger.setLevel(logging.INFO)
