"""The story of one conversation: store, debounce, answer, queue, send.

``Pipeline.receive`` stores a message before anything else (:mod:`bot.keeping`, which
waits out a failing database), cancels replies that the chatter has just talked over, and
(re)arms the chat's debounce timer. When a chat goes quiet, one batch task per chat takes
its waiting messages, makes one LLM call and queues the replies for the
:class:`~bot.sender.Sender`. An initiative batch (a reminder or a follow-up that fell due,
an opener: :mod:`bot.initiative`) takes the chat's turn the same way, with no message in
it. Commands never come here: the :class:`~bot.inbox.Inbox` takes them first.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from loguru import logger

from bot.answer import Answer, Answerer
from bot.config import Config
from bot.conversation import Conversation, Phase, answered_senders
from bot.debounce import Debouncer, looks_unfinished
from bot.errors import StorageError
from bot.gate import Decision, decide
from bot.initiative.schedule import Initiative
from bot.keeping import Keeper
from bot.loops import LoopWatch
from bot.models import Batch, BatchOutcome, ChatKey, IncomingMessage
from bot.ports import Platform, Store, TraceLog
from bot.retries import DEFAULT_RETRIES, Retries
from bot.sender import ItemHooks, Sender
from bot.stickers import Stickers
from bot.tasks import start_task
from bot.voice.hearing import Hearing

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
        hearing: Hearing | None = None,
        item_hooks: ItemHooks | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._config = config
        self._loops = loops
        self._store = store
        self._stickers = stickers
        self._hearing = hearing
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
            hooks=item_hooks,
            retries=retries,
        )
        self.debouncer = Debouncer(config.pacing, self._on_quiet, rng=rng)
        self.initiative = Initiative(
            config, store, platforms=platforms.keys(), now=now, run=self._occasion_due, draw=draw
        )
        self._keeper = Keeper(
            store, mark=self._as_addressed, retries=retries, now=now, stopping=self._is_stopping
        )
        self._conversations: dict[ChatKey, Conversation] = {}
        self._batches: set[asyncio.Task[None]] = set()
        self._beside: set[asyncio.Task[None]] = set()  # collecting stickers, resuming notes
        self._stopping = False

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
        await self._receive(messages)

    async def receive_history(self, messages: Sequence[IncomingMessage]) -> list[IncomingMessage]:
        """Take messages fetched back from a platform's history; return those stored now.

        One stored before is left alone. One younger than ``pacing.stale_after_s`` is
        taken as if it had just arrived (debounced, answered if it is meant for the bot);
        an older one is kept as context only, since an answer now would come too late.
        """
        if self._stopping:
            return []
        stale_before = self._now() - timedelta(seconds=self._config.pacing.stale_after_s)
        old = [message for message in messages if message.sent_at < stale_before]
        fresh = [message for message in messages if message.sent_at >= stale_before]
        return await self._keeper.keep_as_context(old) + await self._receive(fresh)

    async def _receive(self, messages: Sequence[IncomingMessage]) -> list[IncomingMessage]:
        """Store ``messages``, then move their chats on; return those stored now."""
        if self._stopping:
            logger.debug("stopping; {} message(s) not taken", len(messages))
            return []
        talked_over: dict[ChatKey, None] = {}  # in order, once each
        stored = await self._keeper.keep(list(messages))
        self._collect_stickers(stored)
        if self._hearing is not None:  # heard beside the quiet wait
            self._hearing.hear(stored)
        for kept in stored:
            chat = kept.chat
            self.initiative.heard(chat, kept.sent_at)
            self._loops.message_in(kept)
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
        return stored

    def _collect_stickers(self, stored: Sequence[IncomingMessage]) -> None:
        """Keep the stickers of stored messages, beside the answers (a QQ one downloads)."""
        with_stickers = [message for message in stored if message.sticker is not None]
        if self._stickers is None or not with_stickers:
            return
        start_task(
            self._stickers.collect(with_stickers),
            name="stickers:collect",
            failure="collecting stickers failed",
            owner=self._beside,
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

    async def _as_addressed(self, message: IncomingMessage) -> IncomingMessage | None:
        """Return ``message`` marked if it addresses the bot, or ``None`` if it is not kept."""
        if await self._addresses_bot(message):
            message = replace(message, addresses_bot=True)
        unaddressed = message.chat.is_group and not message.addresses_bot
        if unaddressed and not self._store_unaddressed(message.chat):
            return None
        return message

    def _is_stopping(self) -> bool:
        return self._stopping

    def platform_ready(self, platform: str) -> None:
        """Send what waits for ``platform`` now, not after the retry back-off; hear the
        voice notes a restart cut short, now that they can be fetched."""
        self.sender.wake_platform(platform)
        if self._hearing is not None and not self._stopping:
            start_task(
                self._hearing.resume(platform),
                name=f"voice:resume:{platform}",
                failure="hearing the cut-short voice notes failed",
                owner=self._beside,
            )

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
        self.initiative.heard(chat, self._now())  # its words end a silence too
        conversation = self._conversations.get(chat)
        if conversation is None:
            return
        if conversation.replies_done():
            self._start_batch(chat)
        self._forget_if_idle(chat)

    def _occasion_due(self, chat: ChatKey) -> None:
        """Run an initiative batch in ``chat`` once it is free."""
        if not self._stopping and self._conversation(chat).occasion_due():
            self._start_batch(chat)

    async def _answer(self, chat: ChatKey) -> None:
        conversation = self._conversation(chat)
        if conversation.answering_occasion:
            await self._answer_occasion(chat, conversation)
            return
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
        answering = self._answerer.answer(
            batch,
            text_limit=platform.text_limit,
            chat_title=conversation.title,
            rearmed_by=rearmed_by,
        )
        answer = await self._answered(batch, answering, platform, typing=owed)
        await self._close(batch, answer, conversation)
        # More messages than one batch holds: answer the rest next.
        if len(batch.messages) == limit and self.debouncer.waiting(chat) == 0:
            waiting = (await self._store.waiting_counts(chat)).get(chat, 0)
            if waiting:
                self._await_quiet(chat, count=waiting)

    async def _answer_occasion(self, chat: ChatKey, conversation: Conversation) -> None:
        """Run the chat's next initiative batch, if it may still run: one LLM call."""
        occasion = await self.initiative.next_ready(chat)
        if occasion is None:
            return
        platform = self._platforms[chat.platform]  # only occasions of running ones are ready
        batch = await self._store.open_initiative_batch(
            chat, occasion.kind, later_id=occasion.later_id, now=self._now()
        )
        if batch is None:
            return
        log = logger.bind(chat=str(chat), batch=batch.id)
        log.info("{} batch (later item {})", occasion.kind, occasion.later_id)
        conversation.answer_started(frozenset(), owed=not chat.is_group)
        answering = self._answerer.answer_occasion(
            batch, occasion, text_limit=platform.text_limit, chat_title=conversation.title
        )
        await self._close(batch, await self._answered(batch, answering, platform), conversation)

    async def _answered(
        self,
        batch: Batch,
        answering: Awaitable[Answer],
        platform: Platform,
        *,
        typing: bool = False,
    ) -> Answer:
        """Wait for a batch's answer (showing typing if asked); a bug fails the batch
        rather than leave it open, its messages or later item stuck."""
        try:
            # Every line logged while answering carries the chat key and batch, the LLM
            # client's and its HTTP library's too.
            with logger.contextualize(chat=str(batch.chat), batch=batch.id):
                async with self.sender.typing(batch.chat, platform, enabled=typing):
                    return await answering
        except Exception as exc:
            log = logger.bind(chat=str(batch.chat), batch=batch.id)
            log.opt(exception=exc).error("answering failed")
            return Answer(BatchOutcome.FAILED, error=f"internal error: {type(exc).__name__}")

    async def _close(self, batch: Batch, answer: Answer, conversation: Conversation) -> None:
        """Close a batch, queue its replies, keep its promises and its trace (a failure
        costs only the trace, never the answer); then start sending."""
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        items = await self._store.close_batch(
            batch.id,
            answer.outcome,
            now=self._now(),
            replies=answer.replies,
            error=answer.error,
            promises=answer.promises,
        )
        self.initiative.promised(answer.promises)
        log.info("batch {}: {} reply(ies) queued", answer.outcome, len(items))
        try:
            if answer.trace is not None:
                await self._traces.keep_trace(answer.trace, keep=self._config.memory.trace_keep)
        except StorageError as exc:
            log.warning("trace of batch {} lost: {}", batch.id, exc)
        if conversation.answer_ready(len(items)):
            # They wrote while the answer was thought out: say its first line, and leave
            # the rest to the next batch, which sees their new words and what was unsaid.
            unsaid = [item.id for item in items[1:]]
            cancelled = await self._store.cancel_replies(unsaid, now=self._now())
            log.info("{} planned replies cancelled: they wrote while it was thinking", cancelled)
        if items:
            self.sender.wake(batch.chat)

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
        await self.initiative.recover()

    async def drain(self) -> None:
        """Answer everything waiting now and wait until all replies are sent."""
        while len(self.debouncer) or self._batches or self._beside or not self.sender.idle:
            self.debouncer.fire_all()
            await asyncio.gather(*self._batches, *self._beside, return_exceptions=True)
            await self.sender.drain()

    async def stop(self) -> None:
        """Stop taking messages; unanswered batches wait for the next start."""
        self._stopping = True
        self.initiative.stop()
        self.debouncer.cancel_all()
        tasks = [*self._batches, *self._beside]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._hearing is not None:
            await self._hearing.stop()
        await self._store.abandon_open_batches(now=self._now())
        await self.sender.stop()
