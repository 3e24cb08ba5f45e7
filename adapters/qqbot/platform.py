"""Talk to QQ as an official bot of the QQ Open Platform, through ``nonebot-adapter-qq``.

pacebot connects to the platform's WebSocket gateway itself (:mod:`adapters.qqbot.gateway`)
and posts through its REST API, which needs no open gateway: replies go out while the
gateway reconnects. Inbound, every dispatched event is queued with its sequence, in
arrival order, and one delivery task hands what came in together to the core in one call
(one commit), then keeps the session and the sequence of the last event it stored
(:class:`~adapters.qqbot.ledger.Ledger`). After a reconnect, and after a restart, the
gateway resumes from there, the platform redelivers what it sent meanwhile, and what was
stored already is not stored or answered again (messages are stored by id).

With nonebot plugins hosted (:meth:`QQBotPlatform.host_plugins`), each event goes
through their matchers first, read as the QQ adapter's event
(:mod:`adapters.qqbot.plugins`), and what no plugin took is handed over.

Replies name the message they answer (:meth:`reply_window`: at most 5 per message,
within 5 minutes of it in a group and 60 in C2C); see :mod:`adapters.qqbot.outbound`.
One platform runs at a time; it may be started and stopped again in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

from loguru import logger

from adapters import handover
from adapters.inflight import InFlight
from adapters.qqbot import gateway
from adapters.qqbot.gateway import Gateway, SessionBot
from adapters.qqbot.ledger import Ledger
from adapters.qqbot.normalise import MESSAGE_EVENTS, PLATFORM_NAME, chat_key_of, normalise
from adapters.qqbot.outbound import KINDS, Outbound
from bot.addressing import BotNames
from bot.config.qq_official import QQOfficialConfig
from bot.errors import SendFailed
from bot.log import redactor
from bot.models import ChatKey, GatewaySession, IncomingMessage
from bot.ports import MessageSink, PacingLimits
from bot.replies.items import ItemKind, Outgoing
from bot.replies.window import ReplyWindow
from bot.tasks import start_task

if TYPE_CHECKING:
    from adapters.plugins.host import PluginHost
    from bot.ports import Platform, RepliesWithin

GROUP_WINDOW: Final = ReplyWindow(messages=5, within_s=300.0)
C2C_WINDOW: Final = ReplyWindow(messages=5, within_s=3600.0)
LIMITS: Final = PacingLimits(chat_interval_s=1.0, group_per_minute=20, overall_per_s=5.0)


@dataclass(frozen=True, slots=True)
class _Event:
    """A dispatched event as it came: its sequence, its type, its raw ``d`` and its id."""

    seq: int | None
    type: str
    data: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True, slots=True)
class _SessionChange:
    """A session opened (READY) or lost (Invalid Session), in the order of the events."""

    session: GatewaySession | None
    opened: bool


class QQBotPlatform:
    """Receive the official QQ bot's messages through the gateway; post through REST.

    ``start(sink)`` returns at once; the gateway connects in the background. ``stop()``
    is idempotent and also runs when leaving ``async with``.
    """

    name: Final = PLATFORM_NAME
    text_limit: Final = 2000
    typing_refresh_s: Final = None  # the platform shows no typing indicator

    def __init__(
        self,
        config: QQOfficialConfig,
        *,
        secret: str,
        ledger: Ledger,
        bot_name: str,
        aliases: Sequence[str] = (),
        stickers_dir: Path | None = None,
        limits: PacingLimits = LIMITS,
        reconnect_s: float = 1.0,
        api_timeout_s: float = 15.0,
        drain_timeout_s: float = 10.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        redactor.add(secret)
        self.limits = limits
        self._config = config
        self._ledger = ledger
        self._names = BotNames.of(bot_name, aliases)
        self._now = now
        self._reconnect_s = reconnect_s
        self._api_timeout_s = api_timeout_s
        self._drain_timeout_s = drain_timeout_s
        self._adapter = gateway.qqbot_adapter()
        self._bot = gateway.new_bot(self._adapter, config, secret)
        self._gateway = Gateway(self._bot, reconnect_s=reconnect_s)
        self._session: GatewaySession | None = None  # the one the events belong to
        self._sink: MessageSink | None = None
        self._plugins: PluginHost | None = None
        self._inbox: asyncio.Queue[_Event | _SessionChange] = asyncio.Queue()
        self._ready = asyncio.Event()
        self._moved = asyncio.Event()  # the session or its stored sequence moved
        self._keeper_task: asyncio.Task[None] | None = None
        self._gateway_task: asyncio.Task[None] | None = None
        self._delivery_task: asyncio.Task[None] | None = None
        self._started = self._stopped = False
        self._sends = InFlight("QQ bot")
        self._outbound = Outbound(
            bot=lambda: None if self._stopped else self._bot,
            ledger=ledger,
            config=lambda: self._config,
            sends=self._sends,
            api_timeout_s=api_timeout_s,
            stickers_dir=stickers_dir,
            now=now,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def is_connected(self) -> bool:
        """Tell whether the gateway is up (the dashboard shows it)."""
        return bool(self._adapter.bots)

    async def wait_ready(self) -> None:
        """Wait until the gateway is up; raise ``ConfigError`` if the app was refused."""
        gateway_task = self._gateway_task
        ready = asyncio.create_task(self._ready.wait(), name="qqbot:ready")
        waiting: set[asyncio.Task[Any]] = {ready}
        if gateway_task is not None:
            waiting.add(gateway_task)
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if self._gateway.gave_up is not None:
            raise self._gateway.gave_up

    async def start(self, sink: MessageSink) -> None:
        """Resume the stored session (or identify afresh) and deliver events to ``sink``."""
        if self._started or self._stopped:
            msg = "QQBotPlatform.start() may be called only once"
            raise RuntimeError(msg)
        if self._adapter.running is not None:
            msg = "another QQBotPlatform is running in this process"
            raise RuntimeError(msg)
        self._started = True
        self._sink = sink
        self._adapter.attach(self, self._config)
        stored = await self._ledger.gateway_session(self.name)
        if stored is not None and stored.bot_id:
            self._bot.restore(stored)
            self._session = stored
            logger.info("QQ bot: resuming session {} after event {}", stored.session_id, stored.seq)
        self._delivery_task = start_task(
            handover.deliver_together(self._inbox, self._deliver),
            name="qqbot:deliver",
            failure="QQ bot: task crashed",
        )
        self._keeper_task = start_task(
            self._keep_sequence(), name="qqbot:sequence", failure="QQ bot: task crashed"
        )
        self._gateway_task = start_task(
            self._gateway.run(), name="qqbot:gateway", failure="QQ bot: task crashed"
        )
        logger.info("QQ bot: connecting to the QQ Open Platform as app {}", self._config.app_id)

    async def stop(self) -> None:
        """Close the gateway, store what was received, release nonebot."""
        if self._stopped:
            return
        self._stopped = True
        if not self._started:
            return
        try:
            await self._sends.settle(timeout_s=self._api_timeout_s + 1.0)
            task = self._gateway_task
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await handover.drain(
                self._inbox, self._delivery_task, timeout_s=self._drain_timeout_s, wire="QQ bot"
            )
            await self._last_session_write()
        finally:
            await self._adapter.close_session()
            self._adapter.detach()
            self._ready.clear()
        logger.info("QQ bot stopped")

    async def _last_session_write(self) -> None:
        """End the keeper and write where the session stands once more, last."""
        task = self._keeper_task
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await self._write_session()

    def host_plugins(self, host: PluginHost) -> None:
        """Run each event through ``host``'s plugins before pacebot takes it; call it
        before ``start()``."""
        from adapters.qqbot.plugins import OfficialRoad  # only with plugins to host

        road = OfficialRoad(self.limits, self._ledger, lambda: self._config, self._now)
        host.add_road(gateway.QQBotAdapter.get_name(), road)
        self._plugins = host

    # --- the gateway (gateway.Listener) ------------------------------------------------------

    def take(
        self, seq: int | None, event_type: str, data: Mapping[str, Any], event_id: str | None
    ) -> None:
        """Queue one dispatched event, in arrival order."""
        self._inbox.put_nowait(_Event(seq, event_type, data, event_id))

    def session_opened(self, session: GatewaySession) -> None:
        """Queue the new session, so that it is kept before its events' sequences."""
        self._inbox.put_nowait(_SessionChange(session, opened=True))
        which = "all" if self._config.group_all_messages else "@ only"
        logger.info(
            "QQ bot running as {}: gateway ready (group messages: {})", session.bot_name, which
        )

    def session_lost(self, session: GatewaySession | None) -> None:
        """Queue the end of a session the platform will not resume."""
        self._inbox.put_nowait(_SessionChange(session, opened=False))

    def connected(self, bot: SessionBot, *, resumed: bool) -> None:
        """Let the replies waiting for the platform go."""
        self._ready.set()
        if self._sink is not None:
            self._sink.platform_ready(self.name)

    def disconnected(self) -> None:
        """Note that the gateway is down; REST sends go on."""
        if not self._stopped:
            logger.info("QQ bot: the gateway is down; reconnecting")

    # --- inbound -------------------------------------------------------------------------------

    async def _deliver(self, items: list[_Event | _SessionChange]) -> None:
        """Store a run of events between session changes, then note where it stands."""
        events: list[_Event] = []
        for item in items:
            if isinstance(item, _Event):
                events.append(item)
                continue
            await self._store(events)
            events = []
            self._session_changed(item)
        await self._store(events)

    async def _store(self, events: list[_Event]) -> None:
        if not events:
            return
        taken = await self._hand_over(events)
        for event in events:
            if event.type == "RESUMED":
                self._resumed()
        seqs = [event.seq for event in events if event.seq is not None]
        session = self._session
        if taken and seqs and session is not None:
            self._session = GatewaySession(
                session.session_id, max(seqs), session.bot_id, session.bot_name
            )
            self._moved.set()  # the keeper writes the newest sequence, off this path

    def _resumed(self) -> None:
        session = self._session
        which = "all" if self._config.group_all_messages else "@ only"
        name = session.bot_name if session is not None else self._config.app_id
        logger.info("QQ bot running as {}: gateway resumed (group messages: {})", name, which)

    async def _keep_sequence(self) -> None:
        """Keep where the session stands whenever it moves: the only writer of it, so the
        newest state always lands last.

        Written beside the hand-overs, not between them: a sequence kept late only makes
        the next Resume redeliver events already stored, which are not stored again.
        """
        while True:
            await self._moved.wait()
            self._moved.clear()
            await self._write_session()

    async def _write_session(self) -> None:
        session = self._session
        if session is None:
            await self._ledger.forget_gateway_session(self.name)
        else:
            await self._ledger.keep_gateway_session(self.name, session, now=self._now())

    def _session_changed(self, change: _SessionChange) -> None:
        self._session = change.session if change.opened else None
        self._moved.set()
        lost = change.session
        if not change.opened and lost is not None:
            logger.warning(
                "QQ bot: the platform will not resume session {} (last event stored: {}); "
                "what it sent after that cannot be recovered",
                lost.session_id,
                lost.seq,
            )

    async def _hand_over(self, events: list[_Event]) -> bool:
        """Give the messages among ``events`` to the sink, through the plugins if hosted;
        return whether every one was stored."""
        sink, plugins = self._sink, self._plugins
        if sink is None:
            return True
        if plugins is None:
            messages = [self._normalised(event) for event in events]
            taken = [message for message in messages if message is not None]
            return await handover.hand_over(sink, taken, wire="QQ bot")
        from adapters.plugins.host import Arrival  # loaded with the host
        from adapters.qqbot.plugins import as_event

        bot = None if self._stopped else self._bot
        arrivals = [
            Arrival(bot, as_event(event.type, event.id, event.data), self._normalised(event))
            for event in events
        ]
        return await plugins.deliver(arrivals, sink, wire="QQ bot")

    def _normalised(self, event: _Event) -> IncomingMessage | None:
        if event.type not in MESSAGE_EVENTS:
            return None
        all_groups = self._config.group_all_messages
        try:
            return normalise(
                event.type, event.data, names=self._names, all_group_messages=all_groups
            )
        except Exception:
            chat = chat_key_of(event.type, event.data)
            logger.bind(chat=str(chat) if chat else "qqbot:?").exception(
                "QQ bot: reading a {} event failed", event.type
            )
            return None

    # --- outbound ------------------------------------------------------------------------------

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Texts, stickers and voice notes: the platform has no reactions."""
        return KINDS

    def reply_window(self, chat: ChatKey) -> ReplyWindow:
        """Five replies to a message, within 5 minutes of it in a group, 60 in C2C."""
        return GROUP_WINDOW if chat.is_group else C2C_WINDOW

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        """Deliver ``item`` to ``chat`` (see :meth:`Outbound.send`)."""
        if self._stopped:
            msg = f"the official QQ bot is stopping; nothing was sent to {chat}"
            raise SendFailed(msg, maybe_delivered=False)
        return await self._outbound.send(chat, item, answers=answers)

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show nothing: the platform has no typing indicator."""


if TYPE_CHECKING:

    def _conforms(platform: QQBotPlatform) -> tuple[Platform, RepliesWithin, gateway.Listener]:
        return platform, platform, platform
