"""The story of one conversation: store, debounce, answer, queue, send.

``Pipeline.receive_many`` stores messages before anything else (:mod:`bot.keeping`,
which waits out a failing database), cancels replies that the chatter has just talked
over, and (re)arms the chat's debounce timer. When a chat goes quiet, one batch task per
chat takes its waiting messages, makes one LLM call and queues the replies for the
:class:`~bot.sender.Sender`. An initiative batch (a reminder or a follow-up that fell due,
an opener: :mod:`bot.initiative`) takes the chat's turn the same way, with no message in
it. Commands never come here: the :class:`~bot.inbox.Inbox` takes them first.

The parts that run beside it (the keeper, the debouncer, the sender, initiative) are built
by the composition root and handed in; the three that tell it something tell it through
one small interface, :class:`~bot.conversation.ChatEvents`, which the pipeline implements.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from loguru import logger

from bot.addressing import Addressing
from bot.answer import Answer, Answerer
from bot.batches import Batches
from bot.company import Company
from bot.config.settings import Settings
from bot.conversation import Conversation, Conversations, WaitEnd, answered_senders
from bot.debounce import Debouncer, looks_unfinished
from bot.errors import StorageError
from bot.gate import Decision, decide
from bot.initiative.schedule import Initiative
from bot.keeping import Keeper
from bot.models import Batch, BatchOutcome, ChatKey, IncomingMessage
from bot.ports import Platform, RepliesWithin
from bot.replies.window import ReplyWindow
from bot.sender import Sender
from bot.stickers import Stickers
from bot.tasks import start_task
from bot.trace import TraceLog
from bot.voice.hearing import Hearing

REARM_SLICE = 500  # chats re-armed per event-loop turn at start-up


def reply_window(platform: Platform, chat: ChatKey) -> ReplyWindow | None:
    """Return how a message of ``chat`` may be answered, if its platform's replies name
    the message they answer."""
    return platform.reply_window(chat) if isinstance(platform, RepliesWithin) else None


@dataclass(frozen=True, slots=True)
class Beside:
    """The parts that run beside the pipeline, built by the composition root."""

    conversations: Conversations
    addressing: Addressing
    keeper: Keeper
    debouncer: Debouncer
    sender: Sender
    initiative: Initiative
    company: Company
    stickers: Stickers | None = None
    hearing: Hearing | None = None


class Pipeline:
    """Carry messages from the inbox to the outbox; hears the parts beside it
    (:class:`~bot.conversation.ChatEvents`).

    Each chat that is not idle has one :class:`~bot.conversation.Conversation` (in
    :class:`~bot.conversation.Conversations`); a chat that goes idle is let go, so nothing
    per chat outlives its conversation.
    """

    def __init__(
        self,
        config: Settings,
        store: Batches,
        platforms: Mapping[str, Platform],
        answerer: Answerer,
        beside: Beside,
        *,
        traces: TraceLog,
        now: Callable[[], datetime],
    ) -> None:
        self._config = config
        self._store = store
        self._platforms = platforms
        self._answerer = answerer
        self._traces = traces
        self._now = now
        self._keeper = beside.keeper
        self._debouncer = beside.debouncer
        self._sender = beside.sender
        self._initiative = beside.initiative
        self._company = beside.company
        self._conversations = beside.conversations
        self._addressing = beside.addressing
        self._stickers = beside.stickers
        self._hearing = beside.hearing
        for part in (self._debouncer, self._sender, self._initiative):
            part.report_to(self)
        self._batches: set[asyncio.Task[None]] = set()
        self._side_tasks: set[asyncio.Task[None]] = set()  # collecting stickers, hearing notes
        self._stopping = False

    # -- conversations ----------------------------------------------------------------

    def _await_quiet(self, chat: ChatKey, *, count: int = 1, unfinished: bool = False) -> None:
        """(Re)start ``chat``'s quiet wait for ``count`` more messages."""
        self._conversations.of(chat).more_waiting()
        pacing = self._config.for_chat(chat).pacing
        self._debouncer.touch(chat, count=count, unfinished=unfinished, pacing=pacing)

    # -- in -------------------------------------------------------------------------

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
        arrived_at = asyncio.get_running_loop().time()
        marked = await self._addressing.marked(old, at=arrived_at)
        kept_as_context = await self._keeper.keep_as_context(marked)
        return kept_as_context + await self._receive(fresh)

    async def _receive(self, messages: Sequence[IncomingMessage]) -> list[IncomingMessage]:
        """Store ``messages``, then move their chats on; return those stored now."""
        if self._stopping:
            logger.debug("stopping; {} message(s) not taken", len(messages))
            return []
        talked_over: dict[ChatKey, None] = {}  # in order, once each
        arrived_at = asyncio.get_running_loop().time()
        stored = await self._keeper.keep(await self._addressing.marked(messages, at=arrived_at))
        self._collect_stickers(stored)
        if self._hearing is not None:  # heard beside the quiet wait
            self._hearing.hear(stored)
        now = self._now()
        for kept in stored:
            chat = kept.chat
            self._initiative.heard(chat, kept.sent_at)
            self._company.heard(kept, at=now)
            settings = self._config.for_chat(chat)
            conversation = self._conversations.of(chat)
            arrival = conversation.message_in(
                kept, at=arrived_at, continue_s=settings.groups.continue_s
            )
            if arrival.cancels:
                talked_over[chat] = None
            self._debouncer.touch(
                chat,
                unfinished=looks_unfinished(kept.text),
                rearm=arrival.rearms,
                restart_cap=arrival.first_to_ask,
                answer_within_s=settings.groups.answer_within_s if arrival.first_to_ask else None,
                pacing=settings.pacing,
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
            owner=self._side_tasks,
        )

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        """Keep the edited text; an edit never starts a second answer."""
        if await self._store.edit_message(chat, message_id, text):
            logger.bind(chat=str(chat)).debug("message {} edited", message_id)

    def platform_ready(self, platform: str) -> None:
        """Send what waits for ``platform`` now, not after the retry back-off; hear the
        voice notes a restart cut short, now that they can be fetched."""
        self._sender.wake_platform(platform)
        if self._hearing is not None and not self._stopping:
            start_task(
                self._hearing.resume(platform),
                name=f"voice:resume:{platform}",
                failure="hearing the cut-short voice notes failed",
                owner=self._side_tasks,
            )

    async def _cancel_unsent(self, chat: ChatKey) -> None:
        """Cancel the replies still unsent: the person being answered wrote again."""
        cancelled = await self._store.cancel_scheduled(chat, now=self._now())
        if cancelled:
            logger.bind(chat=str(chat)).info(
                "{} unsent replies cancelled: they wrote again", cancelled
            )
            self._sender.wake(chat)

    # -- what the parts beside it tell (ChatEvents) ------------------------------------

    def quiet(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        """The chat's wait ended: answer its waiting messages, or once it is free."""
        if not self._stopping and self._conversations.of(chat).timer_fired(ended_by):
            self._start_batch(chat)

    def item_sent(self, chat: ChatKey) -> None:
        """An item went out: the bot spoke there (a loop may be under way)."""
        self._company.bot_spoke(chat, at=self._now())

    def replies_done(self, chat: ChatKey) -> None:
        """Every reply is out: the silence starts now, and the next batch may start."""
        self._initiative.heard(chat, self._now())  # its words end a silence too
        conversation = self._conversations.get(chat)
        if conversation is None:
            return
        if conversation.replies_done():
            self._start_batch(chat)
        self._conversations.let_go_if_idle(chat)

    def occasion_due(self, chat: ChatKey) -> None:
        """Run an initiative batch in ``chat`` once it is free."""
        if not self._stopping and self._conversations.of(chat).occasion_due():
            self._start_batch(chat)

    # -- batches --------------------------------------------------------------------

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
        self._conversations.let_go_if_idle(chat)

    async def _answer(self, chat: ChatKey) -> None:
        conversation = self._conversations.of(chat)
        if conversation.answering_occasion:
            await self._answer_occasion(chat, conversation)
            return
        # Context that joined a busy room's wait does not count toward max_batch.
        limit = self._config.for_chat(chat).pacing.max_batch + conversation.batch_context
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
        log.info("took {} message(s) as a batch", len(batch.messages))
        # Someone who is owed an answer sees "typing…" while the LLM thinks. From now on
        # they are being answered (in a private chat always): writing again talks over it.
        reply_mode = self._config.for_chat(chat).groups.reply_mode
        owed = decide(batch, reply_mode=reply_mode) is Decision.ANSWER
        wait = conversation.answer_started(
            answered_senders(batch.messages), owed=owed or not chat.is_group
        )
        answering = self._answerer.answer(
            batch,
            text_limit=platform.text_limit,
            chat_title=conversation.title,
            wait=wait,
            window=reply_window(platform, chat),
        )
        answer = await self._answered(batch, answering, platform, typing=owed)
        await self._close(batch, answer, conversation)
        # More messages than one batch holds: answer the rest next.
        if len(batch.messages) == limit and self._debouncer.waiting(chat) == 0:
            waiting = (await self._store.waiting_counts(chat)).get(chat, 0)
            if waiting:
                self._await_quiet(chat, count=waiting)

    async def _answer_occasion(self, chat: ChatKey, conversation: Conversation) -> None:
        """Run the chat's next initiative batch, if it may still run: one LLM call."""
        occasion = await self._initiative.next_ready(chat)
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
            batch,
            occasion,
            text_limit=platform.text_limit,
            chat_title=conversation.title,
            window=reply_window(platform, chat),
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
                async with self._sender.typing(batch.chat, platform, enabled=typing):
                    return await answering
        except StorageError as exc:  # the database, not a bug: say so without a traceback
            logger.bind(chat=str(batch.chat), batch=batch.id).warning("answering failed: {}", exc)
            return Answer(BatchOutcome.FAILED, error=str(exc))
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
        self._initiative.promised(answer.promises)
        log.info("batch {}: {} reply(ies) queued", answer.outcome, len(items))
        if items:  # its people are the bot's company now: their next words follow up
            senders = answered_senders(batch.messages)
            self._company.answered(batch.chat, senders, at=self._now())
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
            self._sender.wake(batch.chat)

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
            self._conversations.of(chat).replies_queued()
            self._sender.wake(chat)
        for index, (chat, count) in enumerate(waiting.items(), start=1):
            if chat.platform not in self._platforms:
                continue  # that platform is off this run: its messages wait for it
            self._await_quiet(chat, count=count)
            if index % REARM_SLICE == 0:
                await asyncio.sleep(0)  # let the loop breathe between slices
        await self._initiative.recover()

    async def drain(self) -> None:
        """Answer everything waiting now (what initiative is handing over too) and wait
        until all replies are sent."""
        while self._busy():
            await self._initiative.handed_over()
            self._debouncer.fire_all()
            await asyncio.gather(*self._batches, *self._side_tasks, return_exceptions=True)
            await self._sender.drain()

    def chats_held(self) -> dict[str, int]:
        """Return how many chats each part beside the pipeline holds something for. Each
        count is bounded by the chats that are live, or inside a window of their own (a
        pacer's minute, the company's follow-up and pause, an opener's silence): a chat
        idle past them leaves nothing behind."""
        return {
            "waiting": len(self._debouncer),
            "conversations": len(self._conversations),
            "sending": len(self._sender),
            "paced": self._sender.paced_chats(),
            "company": len(self._company),
            "initiative": len(self._initiative),
            "voice notes": 0 if self._hearing is None else len(self._hearing),
        }

    def _busy(self) -> bool:
        return bool(
            len(self._debouncer)
            or self._batches
            or self._side_tasks
            or not self._sender.idle
            or self._initiative.handing_over
        )

    async def stop(self) -> None:
        """Stop taking messages; unanswered batches wait for the next start."""
        self._stopping = True
        self._keeper.stop()
        self._initiative.stop()
        self._debouncer.cancel_all()
        tasks = [*self._batches, *self._side_tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._hearing is not None:
            await self._hearing.stop()
        await self._store.abandon_open_batches(now=self._now())
        await self._sender.stop()
