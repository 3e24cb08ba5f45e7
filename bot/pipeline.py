"""The story of one conversation: store, debounce, answer, queue, send.

``Pipeline.receive`` stores a message before anything else, cancels replies that the
chatter has just talked over, and (re)arms the chat's debounce timer. When a chat goes
quiet, one batch task per chat takes its waiting messages, makes one LLM call and queues
the replies for the :class:`~bot.sender.Sender`.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime

from loguru import logger

from bot.answer import Answer, Answerer, Decision, decide
from bot.commands import CommandRunner, parse_command
from bot.config import Config
from bot.debounce import Debouncer, looks_unfinished
from bot.errors import StorageError
from bot.memory import Memory
from bot.models import BatchOutcome, ChatKey, IncomingMessage
from bot.ports import Platform, Store
from bot.sender import Sender

REARM_SLICE = 500  # chats re-armed per event-loop turn at start-up
STORE_PATIENCE_S = 30.0  # how long a message waits for a failing database before it is lost
_STORE_RETRY_FIRST_S = 0.1
_STORE_RETRY_MAX_S = 5.0


class Pipeline:
    """Carry messages from the adapters to the outbox; implements ``MessageSink``."""

    def __init__(
        self,
        config: Config,
        store: Store,
        platforms: Mapping[str, Platform],
        answerer: Answerer,
        memory: Memory,
        *,
        now: Callable[[], datetime],
        rng: random.Random | None = None,
    ) -> None:
        self._config = config
        self._store = store
        self._platforms = platforms
        self._answerer = answerer
        self._now = now
        self.sender = Sender(
            store,
            platforms,
            config.pacing,
            bot_name=config.bot.name,
            now=now,
            on_idle=self._on_sender_idle,
        )
        self.debouncer = Debouncer(config.pacing, self._on_quiet, rng=rng)
        self.commands = CommandRunner(config, self, memory, now=now)
        self._batches: dict[ChatKey, asyncio.Task[None]] = {}
        self._quiet_again: set[ChatKey] = set()  # went quiet while the last answer was going out
        self._answering: dict[ChatKey, frozenset[str]] = {}  # senders the queue answers
        self._thinking: dict[ChatKey, bool] = {}  # owed an answer now; True once talked over
        self._titles: dict[ChatKey, str] = {}
        self._commands: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._store_failing_since: float | None = None  # loop time of the first failed write

    # -- in -------------------------------------------------------------------------

    async def receive(self, message: IncomingMessage) -> None:
        """Store ``message``, then cancel talked-over replies and restart the wait."""
        chat = message.chat
        log = logger.bind(chat=str(chat))
        if self._stopping:
            log.debug("stopping; message {} not taken", message.message_id)
            return
        if message.chat_title:
            self._titles[chat] = message.chat_title
        command = parse_command(message.text)
        if command is not None:
            # In a task of its own: /summary run waits for the LLM, and the adapter must
            # go on storing messages meanwhile.
            task = asyncio.create_task(self._run_command(message, *command), name=f"command:{chat}")
            self._commands.add(task)
            task.add_done_callback(self._command_done)
            return
        kept = await self._keep(message)
        if kept is None:
            return
        await self._cancel_talked_over(kept)
        self.debouncer.touch(chat, unfinished=looks_unfinished(message.text))

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        """Keep the edited text; an edit never starts a second answer."""
        if await self._store.edit_message(chat, message_id, text):
            logger.bind(chat=str(chat)).debug("message {} edited", message_id)

    def _talks_over(self, message: IncomingMessage) -> bool:
        """Tell whether someone being answered in a group writes again without naming the bot.

        In ``cancel`` mode that cancels the replies still unsent to them, so the message
        has to be answered: it goes on with the bot, and what was left unsaid is told then.
        """
        chat = message.chat
        return (
            chat.is_group
            and not message.addresses_bot
            and self._config.pacing.on_new_message == "cancel"
            and (self.sender.busy(chat) or chat in self._thinking)
            and message.sender_id in self._answering.get(chat, frozenset())
        )

    async def _quotes_bot(self, message: IncomingMessage) -> bool:
        """Tell whether a group message that does not name the bot quotes its words.

        Telegram says who wrote a quoted message and its adapter marks the quote itself;
        OneBot gives only the quoted id, which is looked up among the bot's sent replies.
        """
        quoted = message.reply_to_id
        if not message.chat.is_group or message.addresses_bot or quoted is None:
            return False
        return await self._store.is_bot_message(message.chat, quoted)

    async def _keep(self, message: IncomingMessage) -> IncomingMessage | None:
        """Store ``message`` as it addresses the bot; return it, or ``None`` if not stored.

        Not stored: a message stored before, an unaddressed group message when those are
        not kept, or one the database refused for too long. A failing database (disk
        full, locked, I/O errors) is waited out for up to ``STORE_PATIENCE_S`` per outage:
        the adapter hands over one message at a time, so the messages after this one wait
        in its queue meanwhile (a Telegram poll confirms them after 30 s all the same), and
        once the patience is spent each message gets one try until a write succeeds.
        """
        log = logger.bind(chat=str(message.chat))
        received_at = self._now()
        loop = asyncio.get_running_loop()
        retry_s = _STORE_RETRY_FIRST_S
        while True:
            try:
                if self._talks_over(message) or await self._quotes_bot(message):
                    message = replace(message, addresses_bot=True)
                unaddressed = message.chat.is_group and not message.addresses_bot
                if unaddressed and not self._store_unaddressed():
                    return None
                stored = await self._store.add_message(message, received_at=received_at)
            except StorageError as error:
                failure = error
            else:
                self._store_failing_since = None
                done = "stored" if stored else "already stored"
                log.debug("message {} {}", message.message_id, done)
                return message if stored else None
            if self._store_failing_since is None:
                self._store_failing_since = loop.time()
            give_up_at = self._store_failing_since + STORE_PATIENCE_S
            if self._stopping or loop.time() + retry_s > give_up_at:
                log.error(
                    "message {} lost, it could not be stored: {}", message.message_id, failure
                )
                return None
            log.error(
                "cannot store message {} ({}); retrying in {:.1f} s",
                message.message_id,
                failure,
                retry_s,
            )
            await asyncio.sleep(retry_s)
            retry_s = min(retry_s * 2, _STORE_RETRY_MAX_S)

    def platform_ready(self, platform: str) -> None:
        """Send what waits for ``platform`` now, not after the retry back-off."""
        self.sender.wake_platform(platform)

    def _store_unaddressed(self) -> bool:
        groups = self._config.groups
        return groups.store_unaddressed or groups.reply_mode != "mention"

    async def _cancel_talked_over(self, message: IncomingMessage) -> None:
        """Cancel unsent replies when the person being answered writes again (SPEC §2.6).

        While the answer is still being thought out, only its first reply will go out
        (see ``_answer``): the rest was planned before they wrote.
        """
        if self._config.pacing.on_new_message != "cancel":
            return
        chat = message.chat
        if chat.is_group and not message.addresses_bot:
            return  # a bystander (the people answered count as addressing the bot)
        if chat in self._thinking:
            self._thinking[chat] = True
        if not self.sender.busy(chat):
            return
        cancelled = await self._store.cancel_scheduled(chat, now=self._now())
        if cancelled:
            logger.bind(chat=str(chat)).info(
                "{} unsent replies cancelled: they wrote again", cancelled
            )
            self.sender.wake(chat)

    async def _run_command(self, message: IncomingMessage, name: str, args: list[str]) -> None:
        answer = await self.commands.run(message, name, args)
        platform = self._platforms.get(message.chat.platform)
        if platform is None:
            return
        if len(answer) > platform.text_limit:
            answer = answer[: platform.text_limit - 1] + "…"
        try:
            await platform.send_text(message.chat, answer, reply_to=message.message_id)
        except Exception as exc:  # a command answer is best-effort
            logger.bind(chat=str(message.chat)).warning("command answer not sent: {}", exc)

    def _command_done(self, task: asyncio.Task[None]) -> None:
        self._commands.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.opt(exception=exc).error("command failed")

    # -- batches --------------------------------------------------------------------

    def _on_quiet(self, chat: ChatKey) -> None:
        if self._stopping:
            return
        if chat in self._batches or self.sender.busy(chat):
            # One answer at a time: the next batch starts once this one's replies are out,
            # so it sees what was just said.
            self._quiet_again.add(chat)
            return
        task = asyncio.create_task(self._answer(chat), name=f"batch:{chat}")
        self._batches[chat] = task
        task.add_done_callback(functools.partial(self._batch_done, chat))

    def _batch_done(self, chat: ChatKey, task: asyncio.Task[None]) -> None:
        del self._batches[chat]
        self._thinking.pop(chat, None)  # if it ended early (cancelled at a stop)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.bind(chat=str(chat)).opt(exception=exc).error("batch failed")
        self._answer_next(chat)

    def _on_sender_idle(self, chat: ChatKey) -> None:
        self._answering.pop(chat, None)
        self._answer_next(chat)

    def _answer_next(self, chat: ChatKey) -> None:
        if chat in self._quiet_again and chat not in self._batches and not self.sender.busy(chat):
            self._quiet_again.discard(chat)
            self._on_quiet(chat)

    async def _answer(self, chat: ChatKey) -> None:
        limit = self._config.pacing.max_batch
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
        owed = decide(batch, reply_mode=self._config.groups.reply_mode) is Decision.ANSWER
        senders = frozenset(m.sender_id for m in batch.messages)
        if owed or not chat.is_group:
            self._answering[chat] = senders
            self._thinking[chat] = False
        try:
            async with self.sender.typing(chat, platform, enabled=owed):
                answer = await self._answerer.answer(
                    batch, text_limit=platform.text_limit, chat_title=self._titles.get(chat)
                )
        except Exception as exc:  # a bug must not leave the chat's messages stuck in the batch
            log.opt(exception=exc).error("answering failed")
            answer = Answer(BatchOutcome.FAILED, error=f"internal error: {type(exc).__name__}")
        items = await self._store.close_batch(
            batch.id, answer.outcome, now=self._now(), replies=answer.replies, error=answer.error
        )
        talked_over = self._thinking.pop(chat, False)
        log.info("batch {}: {} reply(ies) queued", answer.outcome, len(items))
        if talked_over and len(items) > 1:
            # They wrote while the answer was thought out: say its first line, and leave
            # the rest to the next batch, which sees their new words and what was unsaid.
            unsaid = [item.id for item in items[1:]]
            cancelled = await self._store.cancel_replies(unsaid, now=self._now())
            log.info("{} planned replies cancelled: they wrote while it was thinking", cancelled)
        if items:
            self._answering[chat] = senders
            self.sender.wake(chat)
        else:
            self._answering.pop(chat, None)
        # More messages than one batch holds: answer the rest next.
        if len(batch.messages) == limit and self.debouncer.waiting(chat) == 0:
            waiting = (await self._store.waiting_counts(chat)).get(chat, 0)
            if waiting:
                self.debouncer.touch(chat, count=waiting)

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
            self.sender.wake(chat)
        for index, (chat, count) in enumerate(waiting.items(), start=1):
            if chat.platform not in self._platforms:
                continue  # that platform is off this run: its messages wait for it
            self.debouncer.touch(chat, count=count)
            if index % REARM_SLICE == 0:
                await asyncio.sleep(0)  # let the loop breathe between slices

    async def drain(self) -> None:
        """Answer everything waiting now and wait until all replies are sent."""
        while len(self.debouncer) or self._batches or self._commands or not self.sender.idle:
            self.debouncer.fire_all()
            await asyncio.gather(*self._batches.values(), *self._commands, return_exceptions=True)
            await self.sender.drain()

    async def stop(self) -> None:
        """Stop taking messages; unanswered batches wait for the next start."""
        self._stopping = True
        self.debouncer.cancel_all()
        tasks = [*self._batches.values(), *self._commands]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._store.abandon_open_batches(now=self._now())
        await self.sender.stop()

    # -- what commands read (``CommandHost``) --------------------------------------------

    def waiting_messages(self, chat: ChatKey) -> int:
        """Return how many messages of ``chat`` wait for an answer right now."""
        return self.debouncer.waiting(chat)

    async def queued_replies(self, chat: ChatKey) -> int:
        """Return how many replies to ``chat`` wait in the outbox."""
        return await self._store.scheduled_count(chat)

    async def llm_errors_since(self, since: datetime) -> int:
        """Return how many batches failed since ``since``."""
        return await self._store.failed_batches_since(since)

    async def system_prompt(self, chat: ChatKey) -> str:
        """Return the system prompt ``chat``'s next batch would get."""
        return await self._answerer.system_prompt_for(chat, chat_title=self._titles.get(chat))
