"""One chat's conversation with the bot: where it stands and what moves it on.

A chat is **idle**, **waiting** (messages wait for the quiet timer), **thinking** (a batch
is with the LLM) or **sending** (its replies go out). The pipeline keeps a
:class:`Conversation` only while a chat is not idle, and moves it with named transitions:

    message in ──► waiting ── timer fired ──► thinking ── answer ready ──► sending
                      ▲                                                     │
                      └──────────── (more waiting) ◄─── replies done ◄──────┘

The rules for writing while the bot answers ("talking over" it) are pure
methods here, so they are tested without an event loop:

- In a private chat any new message talks over the answer; in a group only one that
  addresses the bot, or one from a person being answered (it continues the exchange), does.
- Talked over while replies go out: the unsent ones are cancelled (``cancel`` mode).
- Talked over while the answer is still being thought out: only its first reply will
  go out, the rest is left to the next batch.
- One batch at a time: a timer that fires while the chat is thinking or sending is
  remembered, and the next batch starts once the replies are done. An initiative batch
  (a reminder, a follow-up, an opener) waits its turn the same way, after any messages.

And the rule of a busy room, for what re-arms the quiet timer (:meth:`message_in`): in a
group, once a waiting message addresses the bot, the wait follows the people being
answered. Only their messages and new ones addressing the bot re-arm it; everyone else's
words are stored and join the batch as context without delaying it, and count toward
no cap: what the room said before the question is context too, so neither ``max_batch``
nor ``max_wait_s`` cuts the asker's wait short (both count from the first question).
Before anyone addresses the bot, and in private chats, every message re-arms it. The
people a group batch answers are those who addressed the bot (:func:`answered_senders`):
their next words talk over the answer, the chatter around them does not.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.models import ChatKey, IncomingMessage, StoredMessage


class Phase(enum.Enum):
    """Where a chat's conversation stands; the dashboard shows it."""

    IDLE = "idle"
    WAITING = "waiting"
    THINKING = "thinking"
    SENDING = "sending"


class WaitEnd(enum.StrEnum):
    """Why a chat's quiet wait ended; a group batch's trace says it."""

    QUIET = "quiet"  # nobody wrote for a fresh draw of the debounce
    QUIET_AFTER_ASKER = "quiet after the asker"  # the people who asked stopped typing
    ANSWER_BOUND = "the answer bound"  # groups.answer_within_s after the first @
    MAX_WAIT = "max wait"  # pacing.max_wait_s after the wait's first message
    FULL_BATCH = "full batch"  # pacing.max_batch messages wait


@dataclass(frozen=True, slots=True)
class Wait:
    """How a batch's wait went: the messages that re-armed it, and why it ended."""

    rearmed_by: tuple[str, ...] = ()
    ended_by: WaitEnd = WaitEnd.QUIET


NO_WAIT = Wait()
"""The wait of a batch nobody waited for (an initiative batch, a test's)."""


class ChatEvents(Protocol):
    """What moves a chat's conversation on, told by the parts that run beside the pipeline
    (the pipeline listens; the composition root builds the parts and hands them over)."""

    def quiet(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        """The chat's wait ended: its waiting messages may be answered (the debouncer)."""
        ...

    def item_sent(self, chat: ChatKey) -> None:
        """One item went out to the chat (the sender)."""
        ...

    def replies_done(self, chat: ChatKey) -> None:
        """Every reply queued for the chat is out or given up (the sender)."""
        ...

    def occasion_due(self, chat: ChatKey) -> None:
        """A reminder, a follow-up or an opener fell due in the chat (initiative)."""
        ...


class Unheard:
    """Events nobody listens to: what a part tells before it is handed to a pipeline."""

    def quiet(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        return None

    def item_sent(self, chat: ChatKey) -> None:
        return None

    def replies_done(self, chat: ChatKey) -> None:
        return None

    def occasion_due(self, chat: ChatKey) -> None:
        return None


def answered_senders(messages: Sequence[StoredMessage]) -> frozenset[str]:
    """Return who a batch answers: in a group, those who addressed the bot if anyone did
    (the others' words are context), else everyone who wrote in it."""
    asking = frozenset(m.sender_id for m in messages if m.addresses_bot)
    return asking or frozenset(m.sender_id for m in messages)


@dataclass(frozen=True, slots=True)
class Arrival:
    """What a stored message does to its chat: whether it re-arms the quiet timer, whether
    it is the first to ask (the asker's wait then gets its own ``max_wait_s``), and whether
    the replies still unsent must be cancelled now."""

    rearms: bool
    cancels: bool
    first_to_ask: bool = False


@dataclass(slots=True)
class Conversation:
    """The live state of one chat; ``cancel_mode`` is ``pacing.on_new_message == "cancel"``."""

    cancel_mode: bool
    title: str | None = None
    waiting: bool = False  # messages wait for the quiet timer
    thinking: bool = False  # a batch is with the LLM
    sending: bool = False  # replies are queued and going out
    answering: frozenset[str] = frozenset()  # the senders of the batch being answered
    owed: bool = False  # someone is owed the answer being thought out (always, in private)
    talked_over: bool = False  # someone being answered wrote while it was thought out
    answer_again: bool = False  # the timer fired while busy: answer once free
    # Who addressed the bot in the wait running now, each with the loop time of their
    # latest line that continued the question (-inf once they went on to other talk).
    askers: tuple[tuple[str, float], ...] = ()
    batch_askers: tuple[tuple[str, float], ...] = ()  # … of the batch to come
    answering_lines: tuple[tuple[str, float], ...] = ()  # … of the batch being answered
    waiting_count: int = 0  # messages of the wait running now
    rearmed_by: tuple[str, ...] = ()  # waiting messages that re-armed (no list per chat)
    context_count: int = 0  # waiting messages that only joined as context
    batch_rearmed_by: tuple[str, ...] = ()  # … of the batch to come
    batch_context: int = 0  # … of the batch to come
    batch_wait_ended: WaitEnd = WaitEnd.QUIET  # … why its wait ended
    occasions: int = 0  # initiative batches waiting for the chat to be free
    answering_occasion: bool = False  # the batch being thought out is an initiative batch

    @property
    def phase(self) -> Phase:
        """Return the phase shown for this chat: thinking and sending before waiting."""
        if self.thinking:
            return Phase.THINKING
        if self.sending:
            return Phase.SENDING
        if self.waiting or self.answer_again or self.occasions:
            return Phase.WAITING
        return Phase.IDLE

    @property
    def busy(self) -> bool:
        """Tell whether an answer is being thought out or sent."""
        return self.thinking or self.sending

    # -- the talk-over rules ------------------------------------------------------------

    def continues(
        self, message: IncomingMessage, *, at: float = 0.0, continue_s: float = math.inf
    ) -> bool:
        """Hear a group message that does not name the bot; tell whether it addresses it.

        It does when its sender is being answered and writes again in ``cancel`` mode,
        still typing to the bot: within ``continue_s`` of their previous line (loop time
        ``at``), as for the wait. It continues the exchange, cancels what is still unsaid
        to them, and must be answered. A line after a longer pause is talk with the room:
        context, and so are their later lines until they address the bot again. (A message
        from someone answered earlier is a *follow-up*: ``bot/company.py``.)
        """
        being_answered = self.sending or (self.thinking and self.owed)
        if not (
            self.cancel_mode
            and message.chat.is_group
            and not message.addresses_bot
            and being_answered
            and message.sender_id in self.answering
        ):
            return False
        lines = dict(self.answering_lines)
        last = lines.get(message.sender_id)
        if last is None:  # answered without asking (everyone, in "always" or "smart" mode)
            return True
        still_asking = at - last <= continue_s
        lines[message.sender_id] = at if still_asking else -math.inf
        self.answering_lines = tuple(lines.items())
        return still_asking

    def message_in(
        self, message: IncomingMessage, *, at: float = 0.0, continue_s: float = math.inf
    ) -> Arrival:
        """Take a stored message; say whether it re-arms the timer and cancels replies.

        It re-arms the quiet timer unless, in a group, someone addressed the bot since the
        last batch and this is neither from one of them nor addressed to it, nor an asker's
        line that continues the question: one arriving (at loop time ``at``) within
        ``continue_s`` of that asker's previous line (``groups.continue_s``); once an asker
        lets that pass, their lines are context until they address the bot again. It cancels
        the unsent replies only if it talks over the answer: in ``cancel`` mode, any
        message in a private chat, and in a group one that addresses the bot (one that
        continues the exchange does, see :meth:`continues`). While the answer is thought
        out, it is cut to its first reply once ready (:meth:`answer_ready`).
        """
        self.waiting = True
        if message.chat_title:
            self.title = message.chat_title
        first_to_ask = message.chat.is_group and message.addresses_bot and not self.askers
        if first_to_ask:  # what the room said before is the asker's context
            self.context_count = self.waiting_count
        rearms = self._rearms(message, at=at, continue_s=continue_s)
        if rearms:
            self.rearmed_by += (message.message_id,)
        else:
            self.context_count += 1
        self.waiting_count += 1
        return Arrival(rearms, self._talks_over(message), first_to_ask)

    def _rearms(self, message: IncomingMessage, *, at: float, continue_s: float) -> bool:
        if not message.chat.is_group:
            return True
        lines = dict(self.askers)
        if message.addresses_bot:
            lines[message.sender_id] = at
        elif not lines:
            return True  # nobody asked yet: the room's quiet is awaited
        elif message.sender_id not in lines:
            return False  # a bystander: context
        else:
            still_asking = at - lines[message.sender_id] <= continue_s
            lines[message.sender_id] = at if still_asking else -math.inf
            self.askers = tuple(lines.items())
            return still_asking
        self.askers = tuple(lines.items())
        return True

    def _talks_over(self, message: IncomingMessage) -> bool:
        if not self.cancel_mode or (message.chat.is_group and not message.addresses_bot):
            return False  # "finish" mode, or a bystander in a group
        if self.thinking and self.owed:
            self.talked_over = True
        return self.sending

    # -- transitions --------------------------------------------------------------------

    def more_waiting(self) -> None:
        """Note messages that wait for the timer (after a restart, or past a full batch)."""
        self.waiting = True

    def timer_fired(self, ended_by: WaitEnd = WaitEnd.QUIET) -> bool:
        """The chat's wait ended (``ended_by``): return whether to start a batch now.

        While an answer is in hand the batch waits for it, so it sees what was just said.
        The waiting messages are the next batch's; whoever writes from now on starts a new
        wait, with nobody having asked yet.
        """
        asked = bool(self.askers)
        quiet = ended_by is WaitEnd.QUIET
        self.batch_wait_ended = WaitEnd.QUIET_AFTER_ASKER if quiet and asked else ended_by
        self.waiting = False
        self.batch_askers = (*self.batch_askers, *self.askers)
        self.askers = ()
        self.waiting_count = 0
        self.batch_rearmed_by += self.rearmed_by
        self.rearmed_by = ()
        self.batch_context += self.context_count
        self.context_count = 0
        if self.busy:
            self.answer_again = True
            return False
        self.thinking = True
        self.answering_occasion = False
        return True

    def occasion_due(self) -> bool:
        """An initiative batch is due (a reminder, a follow-up, an opener): return whether
        to start it now. A chat that is busy runs it once free, after any messages that
        wait, so that it sees what was just said."""
        self.occasions += 1
        return self._next_answer_due()

    def answer_started(self, senders: frozenset[str], *, owed: bool) -> Wait:
        """A batch from ``senders`` is with the LLM; ``owed`` if someone must be answered.

        Return how its wait went: the ids of its messages that re-armed the timer (the
        others joined it as context), as far as this run saw them arrive, and why it ended.
        """
        self.answering = senders
        self.answering_lines, self.batch_askers = self.batch_askers, ()
        self.owed = owed
        self.talked_over = False
        wait = Wait(self.batch_rearmed_by, self.batch_wait_ended)
        self.batch_rearmed_by, self.batch_context = (), 0
        self.batch_wait_ended = WaitEnd.QUIET
        return wait

    def answer_ready(self, queued: int) -> bool:
        """The batch was answered with ``queued`` replies; return whether to cut them to one.

        Talked over while thinking, only the first reply goes out: the rest was planned
        before they wrote, and the next batch sees it as unsaid.
        """
        cut = self.talked_over and queued > 1
        if queued:
            self.sending = True
        return cut

    def answer_ended(self) -> bool:
        """The batch is over (answered, failed or cancelled): return whether the next starts.

        It starts when the timer fired meanwhile and no replies are still going out.
        """
        self.thinking = False
        self.talked_over = False
        if not self.sending:
            self._forget_answer()
        return self._next_answer_due()

    def replies_queued(self) -> None:
        """Note replies queued before a restart: they go out again."""
        self.sending = True

    def replies_done(self) -> bool:
        """Every queued reply is out or given up: return whether the next batch starts now."""
        self.sending = False
        self._forget_answer()
        return self._next_answer_due()

    def _forget_answer(self) -> None:
        self.answering = frozenset()
        self.answering_lines = ()
        self.owed = False

    def _next_answer_due(self) -> bool:
        if self.busy:
            return False
        if self.answer_again:
            self.answer_again = False
            self.answering_occasion = False
        elif self.occasions:
            self.occasions -= 1
            self.answering_occasion = True
        else:
            return False
        self.thinking = True
        return True


class Conversations:
    """Every live chat's conversation, and where each stands (what ``/status`` reads).

    A chat's conversation is made when something moves it and let go once it is idle
    again, so the map holds only chats that are waiting, thinking or sending.
    """

    def __init__(self, *, cancel_mode: Callable[[ChatKey], bool]) -> None:
        """``cancel_mode(chat)`` tells whether new words talk over ``chat``'s answer
        (``pacing.on_new_message == "cancel"``), read when its conversation starts."""
        self._cancel_mode = cancel_mode
        self._live: dict[ChatKey, Conversation] = {}

    def __len__(self) -> int:
        """Return how many chats are live: waiting, thinking or sending."""
        return len(self._live)

    def of(self, chat: ChatKey) -> Conversation:
        """Return ``chat``'s conversation, made now if the chat was idle."""
        conversation = self._live.get(chat)
        if conversation is None:
            cancel_mode = self._cancel_mode(chat)
            conversation = self._live[chat] = Conversation(cancel_mode=cancel_mode)
        return conversation

    def get(self, chat: ChatKey) -> Conversation | None:
        """Return ``chat``'s conversation if it is live."""
        return self._live.get(chat)

    def let_go_if_idle(self, chat: ChatKey) -> None:
        """Forget ``chat``'s conversation if it has come back to idle."""
        conversation = self._live.get(chat)
        if conversation is not None and conversation.phase is Phase.IDLE:
            del self._live[chat]

    def phase(self, chat: ChatKey) -> Phase:
        """Return where ``chat``'s conversation stands."""
        conversation = self._live.get(chat)
        return Phase.IDLE if conversation is None else conversation.phase

    def live_chats(self) -> dict[ChatKey, Phase]:
        """Return every chat that is not idle, with its phase."""
        return {chat: conversation.phase for chat, conversation in self._live.items()}

    def title(self, chat: ChatKey) -> str | None:
        """Return the title a live chat's latest message gave, if any."""
        conversation = self._live.get(chat)
        return None if conversation is None else conversation.title
