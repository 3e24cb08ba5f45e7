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
  addresses the bot, or one from a person being answered (a follow-up), does.
- Talked over while replies go out: the unsent ones are cancelled (``cancel`` mode).
- Talked over while the answer is still being thought out: only its first reply will
  go out, the rest is left to the next batch.
- One batch at a time: a timer that fires while the chat is thinking or sending is
  remembered, and the next batch starts once the replies are done.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.models import IncomingMessage


class Phase(enum.Enum):
    """Where a chat's conversation stands; the dashboard shows it."""

    IDLE = "idle"
    WAITING = "waiting"
    THINKING = "thinking"
    SENDING = "sending"


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

    @property
    def phase(self) -> Phase:
        """Return the phase shown for this chat: thinking and sending before waiting."""
        if self.thinking:
            return Phase.THINKING
        if self.sending:
            return Phase.SENDING
        if self.waiting or self.answer_again:
            return Phase.WAITING
        return Phase.IDLE

    @property
    def busy(self) -> bool:
        """Tell whether an answer is being thought out or sent."""
        return self.thinking or self.sending

    # -- the talk-over rules ------------------------------------------------------------

    def follows_up(self, message: IncomingMessage) -> bool:
        """Tell whether a group message that does not name the bot still addresses it.

        It does when its sender is being answered and writes again in ``cancel`` mode:
        that cancels what is still unsaid to them, so the message must be answered.
        """
        being_answered = self.sending or (self.thinking and self.owed)
        return (
            self.cancel_mode
            and message.chat.is_group
            and not message.addresses_bot
            and being_answered
            and message.sender_id in self.answering
        )

    def message_in(self, message: IncomingMessage) -> bool:
        """Take a stored message; return whether the unsent replies must be cancelled now.

        Only a message that talks over the answer counts: in ``cancel`` mode, any in a
        private chat, and in a group one that addresses the bot (a follow-up does, see
        :meth:`follows_up`). While the answer is thought out, it is cut to its first reply
        once ready (:meth:`answer_ready`).
        """
        self.waiting = True
        if message.chat_title:
            self.title = message.chat_title
        if not self.cancel_mode or (message.chat.is_group and not message.addresses_bot):
            return False  # "finish" mode, or a bystander in a group
        if self.thinking and self.owed:
            self.talked_over = True
        return self.sending

    # -- transitions --------------------------------------------------------------------

    def more_waiting(self) -> None:
        """Note messages that wait for the timer (after a restart, or past a full batch)."""
        self.waiting = True

    def timer_fired(self) -> bool:
        """The chat went quiet: return whether to start a batch now.

        While an answer is in hand the batch waits for it, so it sees what was just said.
        """
        self.waiting = False
        if self.busy:
            self.answer_again = True
            return False
        self.thinking = True
        return True

    def answer_started(self, senders: frozenset[str], *, owed: bool) -> None:
        """A batch from ``senders`` is with the LLM; ``owed`` if someone must be answered."""
        self.answering = senders
        self.owed = owed
        self.talked_over = False

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
        self.owed = False

    def _next_answer_due(self) -> bool:
        if self.answer_again and not self.busy:
            self.answer_again = False
            self.thinking = True
            return True
        return False
