"""The official QQ bot's adapter on nonebot, and the gateway connection pacebot runs itself.

:func:`qqbot_adapter` registers :class:`QQBotAdapter` (``nonebot-adapter-qq``) on the
process's nonebot (:mod:`adapters.nonebot_host`) the first time a
:class:`~adapters.qqbot.platform.QQBotPlatform` is built. Its own start-up is left out:
it would serve webhook routes and open connections that give up for good when the token
or the gateway fails at start, and it keeps its session in memory only.

:class:`Gateway` runs the connection instead, with the adapter's protocol steps (Hello,
Identify or Resume, heartbeats, the event loop): the gateway URL is asked again after a
failure, with a growing pause; a wrong AppID or AppSecret gives up, said once. A session
restored from the store (:meth:`SessionBot.restore`) makes the first connect a Resume,
so the platform redelivers what it sent while pacebot was down. Every dispatched event
goes to the :class:`Listener` with its sequence, in order, unread by nonebot's models
(they drop what does not fit them). A connection's end is one log line, not nonebot's
traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Protocol

import httpx
import nonebot
from loguru import logger
from nonebot.adapters.qq import Adapter, Bot
from nonebot.adapters.qq.config import BotInfo, Config, Intents
from nonebot.adapters.qq.event import ReadyEvent
from nonebot.adapters.qq.models import (
    Dispatch,
    HeartbeatAck,
    InvalidSession,
    Payload,
    PayloadType,
    Reconnect,
    User,
)
from nonebot.drivers import (
    URL,
    Driver,
    HTTPClientMixin,
    HTTPClientSession,
    Request,
    Response,
    Timeout,
    WebSocket,
)
from nonebot.exception import WebSocketClosed
from pydantic import TypeAdapter

from adapters import nonebot_host
from adapters.qqbot.probe import access_token
from bot.config.qq_official import QQOfficialConfig
from bot.errors import ConfigError, PlatformError
from bot.models import GatewaySession

SHARD: Final = (0, 1)
INTENTS: Final = Intents(
    guilds=False,
    guild_members=False,
    guild_message_reactions=False,
    message_audit=False,
    at_messages=False,
    c2c_group_at_messages=True,  # bit 25: group @s, every group message granted, C2C
)
"""Only the group-and-C2C events: an app asking for intents it lacks is closed at once."""
RECONNECT_MAX_S: Final = 60.0


class Listener(Protocol):
    """What the gateway tells the running platform."""

    def take(
        self, seq: int | None, event_type: str, data: Mapping[str, Any], event_id: str | None
    ) -> None:
        """Queue one dispatched event (its raw ``d`` and its id), in arrival order."""

    def session_opened(self, session: GatewaySession) -> None:
        """Hear that the platform opened a new session (READY)."""

    def session_lost(self, session: GatewaySession | None) -> None:
        """Hear that the platform ended a session it will not resume (Invalid Session)."""

    def connected(self, bot: SessionBot, *, resumed: bool) -> None:
        """Hear that the gateway is ready: identified afresh, or resumed."""

    def disconnected(self) -> None:
        """Hear that the gateway connection ended (a new one follows)."""


class QQBotAdapter(Adapter):
    """``nonebot-adapter-qq`` with its start-up left out and its events handed over."""

    running: ClassVar[Listener | None] = None

    def __init__(self, driver: Driver, **kwargs: Any) -> None:
        super().__init__(driver, **kwargs)
        # The stock adapter read its config from nonebot's; only what a running
        # QQBotPlatform sets counts.
        self.qq_config = Config.model_validate({})
        self._session: HTTPClientSession | None = None

    async def request(self, setup: Request) -> Response:
        """Make a REST call on one kept HTTP client.

        nonebot's httpx driver opens a client per request, and each new client loads the
        system's certificates again (some 30 ms of CPU on the event loop, per send).
        """
        session = self._session
        if session is None:
            if not isinstance(self.driver, HTTPClientMixin):
                msg = f"nonebot's driver {self.driver.type} is no HTTP client"
                raise TypeError(msg)
            session = self.driver.get_session()
            await session.setup()
            self._session = session
        return await session.request(setup)

    @staticmethod
    def data_to_payload(bot: Bot, data: str | bytes) -> Payload:
        """Read a gateway payload as the stock adapter does, with a reader built once.

        The stock adapter builds a new pydantic reader of its payload union for every
        frame: 0.17 ms, against 3 µs with one kept (docs/benchmarks.md, "The official QQ
        bot's gateway").
        """
        payload = _payloads().validate_json(data)
        if isinstance(payload, Dispatch):
            bot.on_dispatch(payload)
        return payload

    async def close_session(self) -> None:
        """Close the kept HTTP client, if one was opened."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def startup(self) -> None:
        """Serve no webhook and open no connection: :class:`Gateway` connects."""

    def attach(self, listener: Listener, config: QQOfficialConfig) -> None:
        """Send events to ``listener`` and call the platform where ``config`` says."""
        self.qq_config = Config.model_validate(
            {
                "qq_api_base": config.rest_base,
                "qq_auth_base": config.token_url,
                "qq_custom_gateway_url": config.gateway_url or None,
            }
        )
        QQBotAdapter.running = listener

    def detach(self) -> None:
        """Forget the listener and any bot left connected."""
        for bot in list(self.bots.values()):
            with contextlib.suppress(RuntimeError):
                self.bot_disconnect(bot)
        QQBotAdapter.running = None
        self.qq_config = Config.model_validate({})

    def dispatch_event(self, bot: Bot, payload: Dispatch) -> None:
        """Hand one dispatched event over, raw, with its sequence."""
        listener = self.running
        data = payload.data if isinstance(payload.data, dict) else {}
        if listener is not None:
            listener.take(payload.sequence, payload.type, data, payload.id)


class SessionBot(Bot):
    """The adapter's bot, telling the listener when a session opens or is lost."""

    adapter: QQBotAdapter

    def restore(self, session: GatewaySession) -> None:
        """Take up a stored session: the next connect resumes it from its sequence."""
        self._session_id = session.session_id
        self._sequence = session.seq
        self._self_info = User(id=session.bot_id, username=session.bot_name, bot=True)

    @property
    def session(self) -> GatewaySession | None:
        """The session the bot is in, with the sequence of the last event it received."""
        info = self._self_info
        if self._session_id is None or info is None:
            return None
        bot_name = info.username or ""
        return GatewaySession(self._session_id, self._sequence or 0, info.id, bot_name)

    def on_ready(self, event: ReadyEvent) -> None:
        super().on_ready(event)
        listener, session = self.adapter.running, self.session
        if listener is not None and session is not None:
            listener.session_opened(session)

    def reset(self) -> None:
        lost = self.session
        super().reset()
        listener = self.adapter.running
        if listener is not None:
            listener.session_lost(lost)


@functools.cache
def qqbot_adapter() -> QQBotAdapter:
    """Register the official QQ bot's adapter on nonebot (set up once per process)."""
    with nonebot_host.registering() as driver:
        driver.register_adapter(QQBotAdapter)
    adapter = nonebot.get_adapter(QQBotAdapter.get_name())  # by name: may be another class
    if not isinstance(adapter, QQBotAdapter):
        msg = "nonebot was initialised elsewhere with another QQ adapter"
        raise ConfigError(msg)
    return adapter


def new_bot(adapter: QQBotAdapter, config: QQOfficialConfig, secret: str) -> SessionBot:
    """Return the bot of ``config``'s app, asking for the group-and-C2C events only."""
    info = BotInfo.model_validate(
        {"id": config.app_id, "secret": secret, "intent": INTENTS, "shard": SHARD}
    )
    return SessionBot(adapter, config.app_id, info)


class Gateway:
    """Keep one gateway connection up for ``bot``, reconnecting after each end."""

    def __init__(self, bot: SessionBot, *, reconnect_s: float) -> None:
        self._bot = bot
        self._adapter = bot.adapter
        self._reconnect_s = reconnect_s
        self.gave_up: ConfigError | None = None  # a wrong AppID or AppSecret

    async def run(self) -> None:
        """Connect, and again after every end, until cancelled or the app is refused."""
        pause_s = self._reconnect_s
        while True:
            try:
                url = await self._gateway_url()
            except ConfigError as error:
                self.gave_up = error
                logger.error("QQ bot: {}; the official QQ bot stays off", error)
                return
            except PlatformError as error:
                logger.warning("QQ bot: {}; trying again in {:.0f} s", error, pause_s)
            else:
                if await self._connection(url):
                    pause_s = self._reconnect_s  # it was up: the next drop starts afresh
            await asyncio.sleep(pause_s)
            pause_s = min(pause_s * 2, RECONNECT_MAX_S)

    async def _gateway_url(self) -> URL:
        """Return where to connect: the configured gateway, else what the platform names.

        Raise ``ConfigError`` when the app is refused, ``PlatformError`` otherwise.
        """
        custom = self._adapter.qq_config.qq_custom_gateway_url
        try:
            answer = await self._bot.shard_url_get()
        except Exception as error:
            raise await self._why(error) from None
        return custom if custom is not None else URL(answer.url)

    async def _why(self, error: Exception) -> PlatformError | ConfigError:
        """Say why the gateway look-up failed: ask for a token plainly to find out."""
        config = self._adapter.qq_config
        official = QQOfficialConfig(
            app_id=self._bot.bot_info.id,
            api_base=str(config.qq_api_base),
            auth_base=str(config.qq_auth_base),
        )
        try:
            async with httpx.AsyncClient(timeout=10.0) as http:
                await access_token(http, official, self._bot.bot_info.secret)
        except (ConfigError, PlatformError) as found:
            return found
        return PlatformError(f"the gateway look-up failed ({type(error).__name__})")

    async def _connection(self, url: URL) -> bool:
        """Run one connection until it ends; return whether it got as far as READY."""
        bot, adapter = self._bot, self._adapter
        resuming = bot.ready
        request = Request("GET", url, timeout=Timeout(connect=30.0, read=None, close=10.0))
        heartbeat: asyncio.Task[None] | None = None
        ready = False
        try:
            async with adapter.websocket(request) as ws:
                interval = await adapter._hello(bot, ws)
                if interval is None or not await adapter._authenticate(bot, ws, SHARD):
                    return False
                ready = True
                if adapter.running is not None:
                    adapter.running.connected(bot, resumed=resuming)
                heartbeat = asyncio.create_task(
                    adapter._heartbeat(bot, ws, interval), name="qqbot:heartbeat"
                )
                await self._events(ws)
        except WebSocketClosed as closed:
            logger.info("QQ bot: the gateway closed the connection (code {})", closed.code)
        except Exception as error:
            logger.warning("QQ bot: the gateway connection failed: {}", _one_line(error))
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
            if bot.self_id in adapter.bots:
                adapter.bot_disconnect(bot)
            if ready and adapter.running is not None:
                adapter.running.disconnected()
        return ready

    async def _events(self, ws: WebSocket) -> None:
        """Hand each dispatched event over until the platform asks to reconnect or ends
        the session. (The adapter's own loop formats every payload for a TRACE line,
        logged or not: at a thousand events a second that is most of the work.)"""
        bot, adapter = self._bot, self._adapter
        while True:
            payload = await adapter.receive_payload(bot, ws)
            if isinstance(payload, Dispatch):
                adapter.dispatch_event(bot, payload)
            elif isinstance(payload, Reconnect):
                logger.info("QQ bot: the platform asks to reconnect")
                return
            elif isinstance(payload, InvalidSession):
                bot.reset()
                return
            elif not isinstance(payload, HeartbeatAck):
                logger.debug("QQ bot: ignoring a {} payload", type(payload).__name__)


@functools.cache
def _payloads() -> TypeAdapter[Payload]:
    """The reader of a gateway payload, built on first use."""
    return TypeAdapter(PayloadType)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
