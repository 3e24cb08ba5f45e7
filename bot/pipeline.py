"""The story of one conversation: store, debounce, answer, queue, send.

``Pipeline.receive`` stores a message before anything else, cancels replies that the
chatter has just talked over, and (re)arms the chat's debounce timer. When a chat goes
quiet, one batch task per chat takes its waiting messages, makes one LLM call and queues
the replies for the :class:`~bot.sender.Sender`. Commands never come here: the
:class:`~bot.inbox.Inbox` takes them first.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

import stamina
from loguru import logger

from bot.answer import Answer, Answerer
from bot.config import Config
from bot.conversation import Conversation, Phase, answered_senders
from bot.debounce import Debouncer, looks_unfinished
from bot.errors import StorageError
from bot.gate import Decision, decide
from bot.loops import LoopWatch
from bot.models import BatchOutcome, ChatKey, IncomingMessage
from bot.ports import Platform, Store, TraceLog
from bot.retries import DEFAULT_RETRIES, Retries
from bot.sender import Sender
from bot.stickers import Stickers
from bot.tasks import start_task
from bot.trace import Trace

REARM_SLICE = 500  # chats re-armed per event-loop turn at start-up


class Pipeline:
    """Carry messages from the adapters to the outbox; implements ``MessageSink``.

    Each chat that is not idle has one :class:`~bot.conversation.Conversation`; a chat
    that goes idle is forgotten, so nothing per chat outlives its conversation.
    """

    def __init__(
        self,
        config: Config,
        store: Store,
        platforms: Mapping[str, Platform],
        answerer: Answerer,
        *,
        traces: TraceLog,
        now: Callable[[], datetime],
        rng: random.Random | None = None,
        loops: LoopWatch,
        retries: Retries = DEFAULT_RETRIES,
        stickers: Stickers | None = None,
    ) -> None:
        self._config = config
        self._loops = loops
        self._store = store
        self._stickers = stickers
        self._platforms = platforms
        self._answerer = answerer
        self._traces = traces
        self._now = now
        self._retries = retries
        self.sender = Sender(
            store,
            platforms,
            config.pacing,
            bot_name=config.bot.name,
            now=now,
            on_idle=self._on_replies_done,
            on_sent=loops.bot_sent,
            hooks=stickers,
            retries=retries,
        )
        self.debouncer = Debouncer(config.pacing, self._on_quiet, rng=rng)
        self._conversations: dict[ChatKey, Conversation] = {}
        self._batches: set[asyncio.Task[None]] = set()
        self._collecting: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._store_failing_since: float | None = None  # loop time of the first failed write

    # -- conversations ----------------------------------------------------------------

    def phase(self, chat: ChatKey) -> Phase:
        """Return where ``chat``'s conversation stands."""
        conversation = self._conversations.get(chat)
        return Phase.IDLE if conversation is None else conversation.phase

    def live_chats(self) -> dict[ChatKey, Phase]:
        """Return every chat that is not idle, with its phase."""
        return {chat: c.phase for chat, c in self._conversations.items()}

    def title(self, chat: ChatKey) -> str | None:
        """Return the title a live chat's latest message gave, if any."""
        conversation = self._conversations.get(chat)
        return None if conversation is None else conversation.title

    def _conversation(self, chat: ChatKey) -> Conversation:
        conversation = self._conversations.get(chat)
        if conversation is None:
            cancel_mode = self._config.pacing.on_new_message == "cancel"
            conversation = self._conversations[chat] = Conversation(cancel_mode=cancel_mode)
        return conversation

    def _forget_if_idle(self, chat: ChatKey) -> None:
        conversation = self._conversations.get(chat)
        if conversation is not None and conversation.phase is Phase.IDLE:
            del self._conversations[chat]

    def _await_quiet(self, chat: ChatKey, *, count: int = 1, unfinished: bool = False) -> None:
        """(Re)start ``chat``'s quiet wait for ``count`` more messages."""
        self._conversation(chat).more_waiting()
        self.debouncer.touch(chat, count=count, unfinished=unfinished)

    # -- in -------------------------------------------------------------------------

    async def receive(self, message: IncomingMessage) -> None:
        """Store ``message``, then cancel talked-over replies and restart the wait."""
        await self.receive_many((message,))

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        """Store messages that arrived together in one write, then move their chats on.

        A platform hands over what one read of its wire brought (a getUpdates page, the
        OneBot events that came in meanwhile): one commit for all of them, and only then
        is any timer armed.
        """
        if self._stopping:
            logger.debug("stopping; {} message(s) not taken", len(messages))
            return
        talked_over: dict[ChatKey, None] = {}  # in order, once each
        stored = await self._keep(list(messages))
        self._collect_stickers(stored)
        for kept in stored:
            chat = kept.chat
            self._loops.message_in(chat, kept.sender_id)
            arrival = self._conversation(chat).message_in(kept)
            if arrival.cancels:
                talked_over[chat] = None
            self.debouncer.touch(
                chat,
                unfinished=looks_unfinished(kept.text),
                rearm=arrival.rearms,
                restart_cap=arrival.first_to_ask,
            )
        for chat in talked_over:
            await self._cancel_unsent(chat)

    def _collect_stickers(self, stored: Sequence[IncomingMessage]) -> None:
        """Keep the stickers of stored messages, beside the answers (a QQ one downloads)."""
        with_stickers = [message for message in stored if message.sticker is not None]
        if self._stickers is None or not with_stickers:
            return
        start_task(
            self._stickers.collect(with_stickers),
            name="stickers:collect",
            failure="collecting stickers failed",
            owner=self._collecting,
        )

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        """Keep the edited text; an edit never starts a second answer."""
        if await self._store.edit_message(chat, message_id, text):
            logger.bind(chat=str(chat)).debug("message {} edited", message_id)

    async def _addresses_bot(self, message: IncomingMessage) -> bool:
        """Tell whether a group message that does not name the bot is meant for it anyway.

        It is when it follows up on an answer to its sender (see ``Conversation``), or
        quotes the bot's words: Telegram says who wrote a quoted message and its adapter
        marks the quote itself; OneBot gives only the quoted id, looked up among the bot's
        sent replies.
        """
        conversation = self._conversations.get(message.chat)
        if conversation is not None and conversation.follows_up(message):
            return True
        quoted = message.reply_to_id
        if not message.chat.is_group or message.addresses_bot or quoted is None:
            return False
        return await self._store.is_bot_message(message.chat, quoted)

    async def _keep(self, messages: list[IncomingMessage]) -> list[IncomingMessage]:
        """Store ``messages`` as they address the bot; return those stored now, in order.

        Not stored: a message stored before, an unaddressed group message when those are
        not kept, or any the database refused for too long. A failing database (disk full,
        locked, I/O errors) is waited out for up to ``store_patience_s`` per outage: the
        adapter hands over nothing more meanwhile, so later messages wait on the wire (a
        Telegram poll confirms nothing it has not stored), and once the patience is spent
        each hand-over gets one try until a write succeeds.
        """
        if not messages:
            return []
        received_at = self._now()
        failure: StorageError | None = None
        try:
            try:
                stored = await self._store_once(messages, received_at=received_at)
            except StorageError as error:
                stored = await self._store_patiently(messages, error, received_at=received_at)
        except StorageError as error:
            failure = error  # logged below, without a traceback: the cause says it all
        if failure is not None:
            for chat, ids in _ids_by_chat(messages).items():
                logger.bind(chat=str(chat)).error(
                    "message {} lost, it could not be stored: {}", ", ".join(ids), failure
                )
            return []
        return stored

    async def _store_patiently(
        self, messages: list[IncomingMessage], failure: StorageError, *, received_at: datetime
    ) -> list[IncomingMessage]:
        """Retry a write the database refused, with back-off, while the outage is young.

        Raise the last ``StorageError`` once the outage's patience is spent, or at a stop.
        """
        retries = self._retries
        since = self._store_failing_since
        spent_s = 0.0 if since is None else asyncio.get_running_loop().time() - since
        patience_s = retries.store_patience_s - spent_s
        if patience_s <= 0 or not self._store_may_recover(failure):
            raise failure
        async for attempt in stamina.retry_context(
            on=self._store_may_recover,
            attempts=None,
            timeout=patience_s,
            wait_initial=retries.store_wait_initial_s,
            wait_max=retries.store_wait_max_s,
        ):
            with attempt:
                stored = await self._store_once(messages, received_at=received_at)
        return stored

    async def _store_once(
        self, messages: list[IncomingMessage], *, received_at: datetime
    ) -> list[IncomingMessage]:
        """Try once to store ``messages``; note when the database began failing."""
        try:
            kept = []
            for message in messages:
                addressed = await self._as_addressed(message)
                if addressed is not None:
                    kept.append(addressed)
            new = await self._store.add_messages(kept, received_at=received_at)
        except StorageError as error:
            if self._store_failing_since is None:
                self._store_failing_since = asyncio.get_running_loop().time()
            for chat, ids in _ids_by_chat(messages).items():
                logger.bind(chat=str(chat)).error(
                    "cannot store message {} ({}); retrying", ", ".join(ids), error
                )
            raise
        self._store_failing_since = None
        stored = [message for message, is_new in zip(kept, new, strict=True) if is_new]
        if len(stored) < len(messages):
            logger.debug("{} message(s) already stored, or not kept", len(messages) - len(stored))
        return stored

    async def _as_addressed(self, message: IncomingMessage) -> IncomingMessage | None:
        """Return ``message`` marked if it addresses the bot, or ``None`` if it is not kept."""
        if await self._addresses_bot(message):
            message = replace(message, addresses_bot=True)
        unaddressed = message.chat.is_group and not message.addresses_bot
        if unaddressed and not self._store_unaddressed(message.chat):
            return None
        return message

    def _store_may_recover(self, error: Exception) -> bool:
        """Tell stamina to retry a failed write, unless pacebot is stopping."""
        return isinstance(error, StorageError) and not self._stopping

    def platform_ready(self, platform: str) -> None:
        """Send what waits for ``platform`` now, not after the retry back-off."""
        self.sender.wake_platform(platform)

    def _store_unaddressed(self, chat: ChatKey) -> bool:
        groups = self._config.groups
        return groups.store_unaddressed or groups.for_chat(chat).reply_mode != "mention"

    async def _cancel_unsent(self, chat: ChatKey) -> None:
        """Cancel the replies still unsent: the person being answered wrote again."""
        cancelled = await self._store.cancel_scheduled(chat, now=self._now())
        if cancelled:
            logger.bind(chat=str(chat)).info(
                "{} unsent replies cancelled: they wrote again", cancelled
            )
            self.sender.wake(chat)

    # -- batches --------------------------------------------------------------------

    def _on_quiet(self, chat: ChatKey) -> None:
        if self._stopping:
            return
        if self._conversation(chat).timer_fired():
            self._start_batch(chat)

    def _start_batch(self, chat: ChatKey) -> None:
        start_task(
            self._answer(chat),
            name=f"batch:{chat}",
            failure="batch failed",
            owner=self._batches,
            chat=str(chat),
            on_done=lambda _: self._batch_ended(chat),
        )

    def _batch_ended(self, chat: ChatKey) -> None:
        conversation = self._conversations.get(chat)
        if conversation is None:
            return
        if conversation.answer_ended() and not self._stopping:
            self._start_batch(chat)
        self._forget_if_idle(chat)

    def _on_replies_done(self, chat: ChatKey) -> None:
        conversation = self._conversations.get(chat)
        if conversation is None:
            return
        if conversation.replies_done():
            self._start_batch(chat)
        self._forget_if_idle(chat)

    async def _answer(self, chat: ChatKey) -> None:
        conversation = self._conversation(chat)
        # Context that joined a busy room's wait does not count toward max_batch.
        limit = self._config.pacing.max_batch + conversation.batch_context
        batch = await self._store.open_batch(chat, limit=limit, now=self._now())
        if batch is None:
            return
        platform = self._platforms.get(chat.platform)
        if platform is None:
            await self._store.close_batch(
                batch.id, BatchOutcome.FAILED, now=self._now(), error="platform not running"
            )
            return
        log = logger.bind(chat=str(chat), batch=batch.id)
        log.info("answering {} message(s)", len(batch.messages))
        # Someone who is owed an answer sees "typing…" while the LLM thinks. From now on
        # they are being answered (in a private chat always): writing again talks over it.
        reply_mode = self._config.groups.for_chat(chat).reply_mode
        owed = decide(batch, reply_mode=reply_mode) is Decision.ANSWER
        rearmed_by = conversation.answer_started(
            answered_senders(batch.messages), owed=owed or not chat.is_group
        )
        try:
            # Every line logged while answering carries the chat key and batch, the LLM
            # client's and its HTTP library's too.
            with logger.contextualize(chat=str(chat), batch=batch.id):
                async with self.sender.typing(chat, platform, enabled=owed):
                    answer = await self._answerer.answer(
                        batch,
                        text_limit=platform.text_limit,
                        chat_title=conversation.title,
                        rearmed_by=rearmed_by,
                    )
        except Exception as exc:  # a bug must not leave the chat's messages stuck in the batch
            log.opt(exception=exc).error("answering failed")
            answer = Answer(BatchOutcome.FAILED, error=f"internal error: {type(exc).__name__}")
        items = await self._store.close_batch(
            batch.id, answer.outcome, now=self._now(), replies=answer.replies, error=answer.error
        )
        log.info("batch {}: {} reply(ies) queued", answer.outcome, len(items))
        if answer.trace is not None:
            await self._keep_trace(answer.trace)
        if conversation.answer_ready(len(items)):
            # They wrote while the answer was thought out: say its first line, and leave
            # the rest to the next batch, which sees their new words and what was unsaid.
            unsaid = [item.id for item in items[1:]]
            cancelled = await self._store.cancel_replies(unsaid, now=self._now())
            log.info("{} planned replies cancelled: they wrote while it was thinking", cancelled)
        if items:
            self.sender.wake(chat)
        # More messages than one batch holds: answer the rest next.
        if len(batch.messages) == limit and self.debouncer.waiting(chat) == 0:
            waiting = (await self._store.waiting_counts(chat)).get(chat, 0)
            if waiting:
                self._await_quiet(chat, count=waiting)

    async def _keep_trace(self, trace: Trace) -> None:
        """Store a batch's trace; a failure costs only the trace, never the answer."""
        try:
            await self._traces.keep_trace(trace, keep=self._config.memory.trace_keep)
        except StorageError as exc:
            logger.bind(chat=str(trace.chat)).warning(
                "trace of batch {} lost: {}", trace.batch_id, exc
            )

    # -- lifecycle ------------------------------------------------------------------

    async def recover(self) -> None:
        """After a restart: release interrupted batches, re-arm waits, resume the outbox."""
        now = self._now()
        abandoned = await self._store.abandon_open_batches(now=now)
        pending = await self._store.recover_outbox(
            now=now, stale_after_s=self._config.pacing.stale_after_s
        )
        waiting = await self._store.waiting_counts()
        if abandoned or pending or waiting:
            logger.info(
                "recovering: {} interrupted batch(es), {} chat(s) with queued replies, "
                "{} chat(s) with waiting messages",
                abandoned,
                len(pending),
                len(waiting),
            )
        for chat in pending:
            self._conversation(chat).replies_queued()
            self.sender.wake(chat)
        for index, (chat, count) in enumerate(waiting.items(), start=1):
            if chat.platform not in self._platforms:
                continue  # that platform is off this run: its messages wait for it
            self._await_quiet(chat, count=count)
            if index % REARM_SLICE == 0:
                await asyncio.sleep(0)  # let the loop breathe between slices

    async def drain(self) -> None:
        """Answer everything waiting now and wait until all replies are sent."""
        while len(self.debouncer) or self._batches or self._collecting or not self.sender.idle:
            self.debouncer.fire_all()
            await asyncio.gather(*self._batches, *self._collecting, return_exceptions=True)
            await self.sender.drain()

    async def stop(self) -> None:
        """Stop taking messages; unanswered batches wait for the next start."""
        self._stopping = True
        self.debouncer.cancel_all()
        tasks = [*self._batches, *self._collecting]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._store.abandon_open_batches(now=self._now())
        await self.sender.stop()


def _ids_by_chat(messages: Sequence[IncomingMessage]) -> dict[ChatKey, list[str]]:
    """Group the message ids of ``messages`` by chat, in order."""
    grouped: dict[ChatKey, list[str]] = {}
    for message in messages:
        grouped.setdefault(message.chat, []).append(message.message_id)
    return grouped
