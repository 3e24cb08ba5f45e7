"""Run each QQ message through nonebot's matchers before pacebot takes it (SPEC §31).

Both QQ roads are hosted: OneBot QQ (:mod:`adapters.qq.sends`) and the official QQ bot
(:mod:`adapters.qqbot.plugins`). A QQ platform hands :meth:`PluginHost.deliver` what one
read of its wire brought: each event with its nonebot bot and, where pacebot takes it,
the message it became. pacebot's own commands never reach a plugin. Every other event
goes to nonebot's ``handle_event`` through the bot (so the adapter's ``to_me`` checks
run), in a task of its own, as a plain nonebot bot runs it: priorities, ``block``, rules,
permissions, sessions. What pacebot needs to know is whether a plugin took the message,
which a run pre- and postprocessor tell it:

- a matcher with ``block=True`` starts to run (its rule and permission passed, and no
  run preprocessor cancelled it at once), or one stops the propagation while it runs:
  the message is that plugin's. It is kept as context and the LLM is not asked;
- the run ends without that: pacebot takes the message as ever, and the non-blocking
  matchers have run beside it.

The hand-over waits for the answer about a message only when a blocking matcher might
take it (:func:`~adapters.plugins.matchers.may_be_taken`: a message that holds none of the
blocking commands and keywords is pacebot's whatever the plugins do, and is stored and
its timer armed at once while they run), and at most :data:`VERDICT_WAIT_S`: a plugin
that has not decided by then leaves the message to pacebot. The two processors are in
nonebot's hands only while such a run waits for its verdict (:class:`_Processors`):
nonebot runs each one it holds around every matcher run, at about 0.1 ms apiece, more
than the run of a matcher that does little. Each run is a task of its own, so a
plugin's exception never reaches the pipeline; nonebot logs it, with its traceback (its
other lines per event, which quote the chatter's words, stay out:
:mod:`adapters.plugins.nonebot_lines`).

What a plugin posts through the bot (``bot.send``, ``call_api``) is told apart from
pacebot's own sends (:func:`adapters.inflight.own_send`): the road fits it to the
platform's rules (the official QQ bot numbers a passive reply in the store, as pacebot's
own), it waits for a slot of the road's pacing (the platform's limits, counting pacebot's
sends there too), and once posted it is kept as the bot's message in the chat's history,
so the LLM sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Final, Protocol, Self

import anyio
import nonebot
import nonebot.message as nonebot_message
from loguru import logger
from nonebot.adapters import Bot as BaseBot
from nonebot.adapters import Event as BaseEvent
from nonebot.dependencies import Dependent
from nonebot.matcher import Matcher
from nonebot.message import handle_event, run_postprocessor, run_preprocessor

from adapters.handover import hand_over
from adapters.inflight import own_send
from adapters.plugins.loading import Plugins
from adapters.plugins.matchers import may_be_taken
from adapters.plugins.nonebot_lines import warnings_and_errors_only
from bot.commands.menu import parse_command
from bot.errors import StorageError
from bot.models import ChatKey, IncomingMessage
from bot.pacing import Pacer
from bot.ports import MessageSink, PacingLimits
from bot.tasks import start_task

VERDICT_WAIT_S: Final = 1.0
"""The longest a hand-over waits for the plugins to take a message or leave it."""
_STOP_WAIT_S: Final = 2.0  # runs still going at a stop get this long, then are cancelled
# Uncontested events in nonebot's hands at once. Its machinery (anyio task groups, cancel
# scopes) costs more per event the more events run together: 0.40 ms an event 8 at a time,
# 0.66 ms 500 at a time, with one plugin matcher and the two run processors
# (docs/benchmarks.md). A contested run never waits for one of these slots: plugins'
# slow handlers (a search, a picture drawn) holding them all must not leave a command to
# the LLM.
_RUNS_AT_ONCE: Final = 8


@dataclass(frozen=True, slots=True)
class Said:
    """What a plugin posted in the bot's name: where, its platform id, and its words."""

    chat: ChatKey
    message_id: str
    text: str
    reply_to_id: str | None = None


class Road(Protocol):
    """How one QQ road's API calls read: which chat a send posts to, what it said, and
    what a plugin's send needs before it goes."""

    @property
    def platform(self) -> str:
        """The platform part of the road's chat keys, e.g. ``qq``."""
        ...

    @property
    def limits(self) -> PacingLimits:
        """The posting rate the platform tolerates."""
        ...

    def chat_of(self, api: str, data: Mapping[str, Any]) -> ChatKey | None:
        """Return the chat a call posts a message to; ``None`` if it posts none."""
        ...

    async def prepare(self, chat: ChatKey, data: dict[str, Any]) -> None:
        """Fit a plugin's send to ``chat`` to the platform's rules (it may change ``data``,
        the call's parameters); never raises an ``Exception``."""
        ...

    def said(self, bot: BaseBot, api: str, data: Mapping[str, Any], result: Any) -> Said | None:
        """Return what a send that went through posted; ``None`` if nothing to keep."""
        ...


class PluginStore(Protocol):
    """Where the host keeps what plugins took and what they said."""

    async def add_context(
        self, messages: Sequence[IncomingMessage], *, received_at: datetime
    ) -> list[bool]:
        """Store messages as context only, all or none; say for each whether it is new."""
        ...

    async def add_bot_message(
        self,
        chat: ChatKey,
        message_id: str,
        text: str,
        *,
        sender_name: str,
        sent_at: datetime,
        reply_to_id: str | None = None,
    ) -> bool:
        """Keep a message posted in the bot's name outside the outbox; ``False`` if kept before."""
        ...


@dataclass(frozen=True, slots=True)
class Arrival:
    """One event off a QQ wire: the bot it came to (``None`` if gone), the event as
    nonebot reads it (``None`` if it cannot) and, if pacebot takes it, the message it became."""

    bot: BaseBot | None
    event: BaseEvent | None
    message: IncomingMessage | None


class Screening:
    """One event's run through the matchers, and the plugin that took its message, if one
    did; ``contested`` if a blocking matcher might take it (the hand-over waits for it then)."""

    def __init__(
        self, bot: BaseBot, event: BaseEvent, chat: ChatKey | None, *, contested: bool
    ) -> None:
        self.bot = bot
        self.event = event
        self.chat = chat
        self.contested = contested
        self.verdict: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def taken_by(self, plugin: str) -> None:
        if not self.verdict.done():
            self.verdict.set_result(plugin)

    def left(self) -> None:
        if not self.verdict.done():
            self.verdict.set_result(None)

    @property
    def plugin(self) -> str | None:
        """The plugin that took the message; ``None`` while undecided or left to pacebot."""
        return self.verdict.result() if self.verdict.done() else None


_SCREENING: ContextVar[Screening | None] = ContextVar("pacebot_plugin_screening", default=None)


class PluginHost:
    """Host the loaded plugins on the QQ roads while the block runs (one host at a time).

    What it holds is bounded by what is live: the runs of the events being handled (a
    stop gives them :data:`_STOP_WAIT_S`) and one :class:`~bot.pacing.Pacer` per road,
    which lets go of quiet chats itself.
    """

    running: ClassVar[PluginHost | None] = None

    def __init__(
        self,
        plugins: Plugins,
        store: PluginStore,
        *,
        bot_name: str,
        now: Callable[[], datetime],
    ) -> None:
        self.plugins = plugins
        self._store = store
        self._bot_name = bot_name
        self._now = now
        self._roads: dict[str, Road] = {}
        self._pacers: dict[str, Pacer] = {}
        self._runs: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(_RUNS_AT_ONCE)
        self._hosting = contextlib.ExitStack()

    def add_road(self, adapter: str, road: Road) -> None:
        """Read the API calls of bots of the nonebot adapter named ``adapter`` by ``road``."""
        self._roads[adapter] = road

    async def __aenter__(self) -> Self:
        if PluginHost.running is not None:
            msg = "another PluginHost is running in this process (nonebot allows one)"
            raise RuntimeError(msg)
        _register_hooks()
        self._hosting.enter_context(warnings_and_errors_only())
        PluginHost.running = self
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._runs:
                _, late = await asyncio.wait(set(self._runs), timeout=_STOP_WAIT_S)
                for task in late:
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)
        finally:
            PluginHost.running = None
            self._hosting.close()

    # --- in ----------------------------------------------------------------------------

    async def deliver(self, arrivals: Sequence[Arrival], sink: MessageSink, *, wire: str) -> bool:
        """Run ``arrivals`` through the plugins; keep what one took as context and hand
        the rest to ``sink``, in arrival order. Return whether every message was stored;
        never raises an ``Exception``.

        The plugins run first on what one of them might take; on the rest only once it is
        stored, so that their runs do not hold up storing it."""
        command_start = nonebot.get_driver().config.command_start
        screenings = [self._screening(arrival, command_start) for arrival in arrivals]
        first = [s for s in screenings if s is not None and s.contested]
        for contested in first:
            self._run(contested)
        if first:
            await asyncio.wait({s.verdict for s in first}, timeout=VERDICT_WAIT_S)
        taken = [
            (arrival.message, screening.plugin if screening is not None else None)
            for arrival, screening in zip(arrivals, screenings, strict=True)
            if arrival.message is not None
        ]
        stored = True
        for plugin, run in itertools.groupby(taken, key=lambda pair: pair[1]):
            messages = [message for message, _ in run if message is not None]
            if plugin is None:
                stored = await hand_over(sink, messages, wire=wire) and stored
            else:
                stored = await self._keep_as_context(messages, plugin) and stored
        for screening in screenings:
            if screening is not None and not screening.contested:
                self._run(screening)
        return stored

    def _screening(self, arrival: Arrival, command_start: Collection[str]) -> Screening | None:
        """Return ``arrival``'s screening, contested if a blocking matcher might take its
        message; ``None`` if the plugins never see it."""
        message, event = arrival.message, arrival.event
        if arrival.bot is None or event is None:
            return None
        if message is not None and parse_command(message.text):
            return None  # pacebot's own commands are never a plugin's
        return Screening(
            arrival.bot,
            event,
            message.chat if message is not None else None,
            contested=message is not None and may_be_taken(event, command_start=command_start),
        )

    def _run(self, screening: Screening) -> None:
        """Start the event's run through the matchers, which decides ``screening`` (left
        to pacebot once it ends, however it ends); a contested run has the verdict
        processors in force until it is decided."""
        if screening.contested:
            _PROCESSORS.hold()
            screening.verdict.add_done_callback(lambda _: _PROCESSORS.release())
        mark = _SCREENING.set(screening)  # the run's task starts in a copy of this context
        try:
            start_task(
                _run(screening, None if screening.contested else self._slots),
                name="plugins:event",
                failure="plugins: handling an event failed",
                owner=self._runs,
                on_done=lambda _: screening.left(),
            )
        finally:
            _SCREENING.reset(mark)

    async def _keep_as_context(self, messages: list[IncomingMessage], plugin: str) -> bool:
        try:
            await self._store.add_context(messages, received_at=self._now())
        except Exception as error:  # as a hand-over: never stops the wire's delivery
            for message in messages:
                logger.bind(chat=str(message.chat)).error(
                    "message {} (handled by {}) not stored: {}", message.message_id, plugin, error
                )
            return False
        for message in messages:
            logger.bind(chat=str(message.chat)).debug(
                "message {} handled by plugin {}: kept as context", message.message_id, plugin
            )
        return True

    # --- out ---------------------------------------------------------------------------

    async def before_send(self, bot: BaseBot, api: str, data: dict[str, Any]) -> None:
        """Fit a plugin's send to the road's rules and hold it until the road's pacing has
        a slot; count pacebot's own."""
        road = self._roads.get(bot.adapter.get_name())
        chat = road.chat_of(api, data) if road is not None else None
        if road is None or chat is None:
            return
        pacer = self._pacers.get(road.platform)
        loop = asyncio.get_running_loop()
        if pacer is None:
            pacer = self._pacers[road.platform] = Pacer(road.limits, clock=loop.time)
        slot = pacer.reserve(chat)
        if own_send():  # pacebot's sender has made it fit and waited for its slot already
            return
        await road.prepare(chat, data)
        await asyncio.sleep(max(0.0, slot - loop.time()))

    async def after_send(
        self,
        bot: BaseBot,
        error: Exception | None,
        api: str,
        data: Mapping[str, Any],
        result: Any,
    ) -> None:
        """Keep what a plugin posted as the bot's message in its chat's history."""
        road = self._roads.get(bot.adapter.get_name())
        if road is None or error is not None or own_send():
            return
        said = road.said(bot, api, data, result)
        if said is None:
            return
        log = logger.bind(chat=str(said.chat))
        try:
            await self._store.add_bot_message(
                said.chat,
                said.message_id,
                said.text,
                sender_name=self._bot_name,
                sent_at=self._now(),
                reply_to_id=said.reply_to_id,
            )
        except StorageError as storing:
            log.warning("a plugin's message {} not kept: {}", said.message_id, storing)
        else:
            log.debug("a plugin's message {} kept as the bot's", said.message_id)


async def _run(screening: Screening, slots: asyncio.Semaphore | None) -> None:
    """Handle the screened event as nonebot does, once one of ``slots`` is free (if
    given). Lines logged meanwhile (a plugin's failure) name the chat.

    An adapter's own ``Bot.handle_event`` (OneBot's, QQ's) sets ``to_me`` and strips the
    bot's @ and name before nonebot's; the base ``Bot`` has none (``bot.handle_event``
    would be an API call by that name).
    """
    bot, event, chat = screening.bot, screening.event, screening.chat
    adapters_own: Callable[[BaseBot, BaseEvent], Awaitable[None]] | None = getattr(
        type(bot), "handle_event", None
    )
    async with slots or contextlib.nullcontext():
        with logger.contextualize(chat=str(chat)) if chat else contextlib.nullcontext():
            if adapters_own is not None:
                await adapters_own(bot, event)
            else:
                await handle_event(bot, event)


# --- nonebot's hooks: registered once per process, acting for the running host -----------


class _Processors:
    """The run pre- and postprocessor that tell a contested run's verdict, in nonebot's
    hands only while one of those runs waits for it.

    nonebot has no call that takes a processor back; the sets it keeps them in are reached
    into (a test in ``tests/test_plugins.py`` fails if they move).
    """

    def __init__(self) -> None:
        self._waiting = 0
        self._pairs: tuple[tuple[set[Dependent[Any]], Dependent[Any]], ...] = ()

    def register(self) -> None:
        """Have nonebot parse the two processors, then take them back until needed."""
        run_preprocessor(_matcher_starts)
        run_postprocessor(_matcher_ended)
        self._pairs = tuple(
            (held, next(dependent for dependent in held if dependent.call is call))
            for held, call in (
                (nonebot_message._run_preprocessors, _matcher_starts),
                (nonebot_message._run_postprocessors, _matcher_ended),
            )
        )
        self._apply()

    def hold(self) -> None:
        self._waiting += 1
        self._apply()

    def release(self) -> None:
        self._waiting -= 1
        self._apply()

    def _apply(self) -> None:
        for held, dependent in self._pairs:
            if self._waiting:
                held.add(dependent)
            else:
                held.discard(dependent)


_PROCESSORS: Final = _Processors()


@functools.cache
def _register_hooks() -> None:
    _PROCESSORS.register()
    BaseBot.on_calling_api(_calling_api)
    BaseBot.on_called_api(_called_api)


async def _matcher_starts(matcher: Matcher) -> None:
    """A blocking matcher is about to run: the message is its plugin's."""
    screening = _SCREENING.get()
    if screening is None or not (screening.contested and matcher.block):
        return  # an uncontested run's message is pacebot's already
    if screening.verdict.done():
        return
    # A run preprocessor that cancels this run at once (a plugin switched off in this
    # chat) cancels this one too within two checkpoints, whichever of them ran first.
    for _ in range(2):
        await anyio.lowlevel.checkpoint()
    screening.taken_by(_plugin_of(matcher))


async def _matcher_ended(matcher: Matcher) -> None:
    """A matcher that stopped the propagation while it ran took the message."""
    screening = _SCREENING.get()
    if screening is not None and screening.contested and matcher.block:
        screening.taken_by(_plugin_of(matcher))


async def _calling_api(bot: BaseBot, api: str, data: dict[str, Any]) -> None:
    host = PluginHost.running
    if host is not None:
        await host.before_send(bot, api, data)


async def _called_api(
    bot: BaseBot, exception: Exception | None, api: str, data: dict[str, Any], result: Any
) -> None:
    host = PluginHost.running
    if host is not None:
        await host.after_send(bot, exception, api, data, result)


def _plugin_of(matcher: Matcher) -> str:
    return matcher.plugin_id or matcher.module_name or "?"
