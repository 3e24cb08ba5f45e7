"""Talk to QQ through a OneBot v11 implementation (NapCat, Lagrange) and nonebot2.

The OneBot implementation connects to nonebot2's reverse WebSocket at
``ws://HOST:PORT/onebot/v11/ws``; :class:`QQPlatform` serves nonebot's ASGI app itself
(see :mod:`adapters.qq.wire`), so ``start()`` fails at once when the port is taken.

Inbound, message events are taken from the adapter in the order they arrive and handed
to one delivery task, which gives the core all that came in together in one call (one
commit); they do not run through nonebot's matchers one task each, where a message could
overtake an earlier one. With nonebot plugins hosted (:meth:`QQPlatform.host_plugins`),
the delivery task runs them through the matchers first and hands over what no plugin took
(:class:`~adapters.plugins.host.PluginHost`); other events then reach nonebot as usual.
:func:`~adapters.qq.normalise.normalise` turns each into an
:class:`~bot.models.IncomingMessage`. Outbound, ``send`` of a text calls
``send_group_msg``/``send_private_msg`` with a segment array, and
:mod:`adapters.qq.errors` translates nonebot's errors into the :mod:`bot.errors` tree.
After each connect the core asks for the newest messages of recent chats
(:mod:`adapters.qq.history`), to store the events it missed.

nonebot is set up the first time a platform is built. At most one ``QQPlatform`` runs at
a time; it may be started and stopped again in the same process (tests do).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

from loguru import logger
from nonebot.adapters.onebot.v11 import (
    ActionFailed,
    Bot,
    MessageEvent,
    NetworkError,
)

from adapters import asgi, handover
from adapters.inflight import InFlight
from adapters.plugins.host import Arrival, PluginHost
from adapters.qq import errors, history, wire
from adapters.qq.normalise import PLATFORM_NAME, chat_key_of, normalise
from adapters.qq.outbound import Outbound, as_int
from adapters.qq.sends import OneBotRoad
from bot.addressing import BotNames
from bot.config.values import is_loopback
from bot.errors import ConfigError, PlatformError, SendFailed
from bot.log import redactor
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import MessageSink, PacingLimits
from bot.replies.items import ItemKind, Outgoing
from bot.tasks import start_task

if TYPE_CHECKING:
    from bot.ports import History, Platform


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
        stickers_dir: Path | None = None,
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
        self._adapter = wire.onebot_adapter()
        self._host = host
        self._port = port
        self._token = token or None
        self._names = BotNames.of(bot_name, aliases)
        self._api_timeout_s = api_timeout_s
        self._typing_timeout_s = min(api_timeout_s, 2.0)
        self._typing_supported = typing_indicator
        self._typing_timeouts = 0
        self._drain_timeout_s = drain_timeout_s

        self.connected = asyncio.Event()
        self._self_id: str | None = None
        self._sink: MessageSink | None = None
        self._inbox: asyncio.Queue[MessageEvent] = asyncio.Queue()
        self._server: asgi.Server | None = None
        self._server_task: asyncio.Task[None] | None = None
        self._delivery_task: asyncio.Task[None] | None = None
        self._plugins: PluginHost | None = None
        self._started = False
        self._stopped = False
        self._sends = InFlight("QQ")
        self._outbound = Outbound(
            bot=self._bot, sends=self._sends, api_timeout_s=api_timeout_s, stickers_dir=stickers_dir
        )

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
        return f"ws://{host}:{self._port}{wire.WS_PATH}"

    @property
    def self_id(self) -> str | None:
        """The QQ account of the connected OneBot implementation, if one is connected."""
        return self._self_id

    @property
    def is_connected(self) -> bool:
        """Tell whether a OneBot implementation is connected (the dashboard shows it)."""
        return self.connected.is_set()

    @property
    def typing_refresh_s(self) -> float | None:
        """Repeat NapCat's typing status this often; ``None`` once the implementation lacks it."""
        return self.typing_interval_s if self._typing_supported else None

    @property
    def hosts_plugins(self) -> bool:
        """Tell whether nonebot plugins run beside pacebot here (the adapter asks)."""
        return self._plugins is not None

    def host_plugins(self, host: PluginHost) -> None:
        """Run each message through ``host``'s plugins before pacebot takes it; call it
        before ``start()``."""
        host.add_road(
            wire.OneBotAdapter.get_name(), OneBotRoad(self.name, self.limits, self._names.name)
        )
        self._plugins = host

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
        if self._adapter.running is not None:
            msg = "another QQPlatform is running in this process (nonebot allows one)"
            raise RuntimeError(msg)
        sock = asgi.bind(self._host, self._port, what="for OneBot", keys="qq.host and qq.port")
        self._started = True
        self._port = sock.getsockname()[1]
        self._sink = sink
        wire.quiet_header_loggers()
        self._adapter.attach(self, access_token=self._token)
        self._server = wire.server(self._host, self._port)
        self._delivery_task = start_task(
            handover.deliver_together(self._inbox, self._deliver),
            name="qq:deliver",
            failure="QQ: task crashed",
        )
        self._server_task = start_task(
            asgi.serve(
                self._server, sock, failure="QQ: the OneBot server failed to start; QQ stays off"
            ),
            name="qq:server",
            failure="QQ: task crashed",
        )
        logger.info(
            "QQ: listening on {}:{}, waiting for OneBot to connect to {}{}",
            self._host,
            self._port,
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
            # Closing the connection under a send leaves the call unanswered although
            # NapCat may have posted the message; new sends are refused from now on,
            # and each waits at most ``api_timeout_s``.
            await self._sends.settle(timeout_s=self._api_timeout_s + 1.0)
            await self._stop_server()
            await handover.drain(
                self._inbox, self._delivery_task, timeout_s=self._drain_timeout_s, wire="QQ"
            )
        finally:
            self._release()
        logger.info("QQ stopped")

    async def _stop_server(self) -> None:
        server, task = self._server, self._server_task
        if server is None or task is None:
            return
        await asgi.stop(server, task, name="QQ: the OneBot server")

    def _release(self) -> None:
        """Leave nonebot as a later platform expects to find it."""
        self._adapter.detach()
        self._self_id = None
        self.connected.clear()

    # --- connections (called by the adapter) -------------------------------------------

    def bot_connected(self, bot: Bot) -> None:
        """Post as this account, unless one is connected already."""
        if self._self_id is None:
            self._self_id = bot.self_id
            self.connected.set()
            logger.info("QQ: OneBot connected as {}; QQ is running", bot.self_id)
            if self._sink is not None:
                self._sink.platform_ready(self.name)
        else:
            logger.warning(
                "QQ: a second OneBot account {} connected; replies still go out as {}",
                bot.self_id,
                self._self_id,
            )

    def bot_disconnected(self, bot: Bot) -> None:
        """Post as another connected account, or wait for one to come back."""
        if bot.self_id != self._self_id:
            logger.info("QQ: OneBot account {} disconnected", bot.self_id)
            return
        others = [other for other in self._adapter.bots if other != bot.self_id]
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
        bot = self._adapter.bots.get(self._self_id)
        return bot if isinstance(bot, Bot) else None

    # --- inbound -----------------------------------------------------------------------

    def take(self, event: MessageEvent) -> None:
        """Queue a message event; called by the adapter as each frame arrives.

        Frames keep arriving while ``stop()`` closes the connections; they are taken too,
        since OneBot never sends a message twice.
        """
        task = self._delivery_task
        if task is not None and not task.done():
            self._inbox.put_nowait(event)

    async def _deliver(self, events: list[MessageEvent]) -> None:
        """Hand over the events that came in together (see :func:`handover.deliver_together`)."""
        if self._sink is not None:
            await self._hand_over(self._sink, events)

    async def _hand_over(self, sink: MessageSink, events: list[MessageEvent]) -> None:
        """Give the messages among ``events`` to ``sink``, through the plugins if hosted."""
        messages = [self._normalised(event) for event in events]
        if self._plugins is None:
            taken = [message for message in messages if message is not None]
            await handover.hand_over(sink, taken, wire="QQ")
            return
        bots = self._adapter.bots
        arrivals = [
            Arrival(bots.get(str(event.self_id)), event, message)
            for event, message in zip(events, messages, strict=True)
        ]
        await self._plugins.deliver(arrivals, sink, wire="QQ")

    def _normalised(self, event: MessageEvent) -> IncomingMessage | None:
        try:
            return normalise(event, names=self._names)
        except Exception:
            chat = chat_key_of(event)
            logger.bind(chat=str(chat) if chat else "qq:?").exception(
                "QQ: reading message {} failed", event.message_id
            )
            return None

    async def latest_messages(self, chat: ChatKey, *, count: int) -> list[IncomingMessage]:
        """Return ``chat``'s newest ``count`` messages from OneBot's history, oldest first."""
        bot = self._bot()
        if bot is None or self._stopped:
            msg = f"OneBot not connected; no history of {chat} fetched"
            raise PlatformError(msg)
        return await history.latest_messages(
            bot, chat, count=count, names=self._names, timeout_s=self._api_timeout_s
        )

    # --- outbound ----------------------------------------------------------------------

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Texts, stickers and voice everywhere; reactions in groups, while the
        implementation takes them."""
        return self._outbound.kinds(chat)

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        """Deliver ``item`` to ``chat`` (see :meth:`Outbound.send`)."""
        if self._stopped:
            msg = f"QQ is stopping; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        return await self._outbound.send(chat, item)

    async def call(self, action: str, **params: Any) -> Any:
        """Call a OneBot action on the connected implementation; return its ``data``.

        Raise ``SendFailed`` when none is connected; nonebot's ``ActionFailed`` when the
        implementation refuses, ``TimeoutError`` after ``api_timeout_s``.
        """
        bot = self._bot()
        if bot is None or self._stopped:
            msg = f"OneBot not connected; {action} was not called"
            raise SendFailed(msg, maybe_delivered=False)
        with self._sends.track():
            async with asyncio.timeout(self._api_timeout_s):
                return await bot.call_api(action, **params)

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show "typing…" in a private chat through NapCat's ``set_input_status``.

        OneBot v11 has no typing indicator; other implementations answer "unsupported",
        after which no more attempts are made. Groups show nothing. Failures are swallowed.
        """
        if not self._typing_supported or chat.kind is not ChatKind.PRIVATE or self._stopped:
            return
        bot = self._bot()
        user_id = as_int(chat.id)
        if bot is None or user_id is None:
            return
        log = logger.bind(chat=str(chat))
        try:
            async with asyncio.timeout(self._typing_timeout_s):
                await bot.call_api("set_input_status", user_id=user_id, event_type=1)
        except ActionFailed as error:
            if errors.is_unsupported(error):
                self._typing_supported = False
                logger.info(
                    "QQ: OneBot has no set_input_status ({}); no typing indicator",
                    errors.describe(error),
                )
            else:
                log.debug("typing indicator failed: {}", errors.describe(error))
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

    def _conforms(platform: QQPlatform) -> tuple[Platform, History, wire.Listener]:
        return platform, platform, platform
