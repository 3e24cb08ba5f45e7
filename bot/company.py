"""The bot's company in each chat: whom it answered and when, and whether it is in a loop.

One record per chat of what outlives a single answer, read by every room that asks:

- **whom it answered, and when**: a group message from someone the bot answered in the
  last ten minutes is a *follow-up*, a reason for the gate (``bot/gate.py``) to let an
  unaddressed batch speak;
- **a bot loop**: no person answers every line of the bot within two seconds, five times
  in a row; another bot does. Each item the bot sends in a group and the first message
  after it that addresses the bot (an @, a reply, its name) make a round; when that
  message comes from the same sender within ``ANSWER_WITHIN`` for ``ROUNDS`` rounds in a
  row, the chat is paused for ``PAUSE`` (the gate turns its batches away; their messages
  stay stored). The room's other talk is no answer and counts for nothing. Private chats
  are never paused: another bot does not talk to pacebot there, and a person who types
  fast must not lose the bot for an hour. ``/status`` shows a pause.

Who is being answered *right now* is the conversation's (``bot/conversation.py``): it
lasts as long as one answer. Pure bookkeeping, with "now" passed in: a chat's record
lasts only while one of its facts is live (a partner within ten minutes, a round under
way, a pause), so the map holds the chats active lately, never every chat ever seen, and a
restart lifts a pause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from loguru import logger

from bot.models import ChatKey, IncomingMessage

FOLLOW_UP_WITHIN = timedelta(minutes=10)
ROUNDS = 5
ANSWER_WITHIN = timedelta(seconds=2)
PAUSE = timedelta(hours=1)
ROUNDS_APART = timedelta(minutes=10)  # rounds further apart than this are no loop


@dataclass(slots=True)
class _Record:
    """One chat's company: its partners, the loop's rounds so far, a pause."""

    partners: dict[str, datetime] = field(default_factory=dict)  # sender → answered at
    spoke_at: datetime | None = None  # the bot's latest item nobody has answered yet
    rounds_sender: str = ""
    rounds: int = 0
    round_at: datetime | None = None  # when the latest round was made
    paused_until: datetime | None = None

    def live(self, now: datetime) -> bool:
        """Tell whether anything here still matters at ``now``."""
        since = now - FOLLOW_UP_WITHIN
        return (
            any(at > since for at in self.partners.values())
            or (self.spoke_at is not None and now - self.spoke_at <= ANSWER_WITHIN)
            or (self.round_at is not None and now - self.round_at <= ROUNDS_APART)
            or (self.paused_until is not None and now < self.paused_until)
        )


class Company:
    """Remember whom the bot answered in each chat, and pause a chat caught in a bot loop."""

    def __init__(self, *, zone: ZoneInfo) -> None:
        self._zone = zone  # a pause is logged in local time
        # Least recently touched first: a touched chat moves to the end, so the chats
        # whose facts have all expired are found at the front.
        self._records: dict[ChatKey, _Record] = {}

    def __len__(self) -> int:
        """Return how many chats have a record (each of them live, or about to expire)."""
        return len(self._records)

    # -- what happened ----------------------------------------------------------------

    def answered(self, chat: ChatKey, senders: frozenset[str], *, at: datetime) -> None:
        """The bot answered ``senders`` in group ``chat``: their words in the next ten
        minutes are a follow-up."""
        if not chat.is_group or not senders:
            return
        record = self._touch(chat, at)
        since = at - FOLLOW_UP_WITHIN
        record.partners = {s: t for s, t in record.partners.items() if t > since}
        record.partners.update(dict.fromkeys(senders, at))

    def bot_spoke(self, chat: ChatKey, *, at: datetime) -> None:
        """The bot sent an item to ``chat``: the next answer there may be fast."""
        if chat.is_group:
            self._touch(chat, at).spoke_at = at

    def heard(self, message: IncomingMessage, *, at: datetime) -> bool:
        """Hear a stored message; return whether it completed a loop and paused its chat."""
        record = self._records.get(message.chat)
        if record is None or record.spoke_at is None or not message.addresses_bot:
            return False
        fast = at - record.spoke_at <= ANSWER_WITHIN
        record.spoke_at = None
        if not fast:  # a pause for thought: whatever ran is broken
            record.rounds_sender, record.rounds, record.round_at = "", 0, None
            return False
        in_a_row = record.round_at is not None and at - record.round_at <= ROUNDS_APART
        if in_a_row and message.sender_id == record.rounds_sender:
            record.rounds += 1
        else:
            record.rounds_sender, record.rounds = message.sender_id, 1
        record.round_at = at
        if record.rounds < ROUNDS:
            return False
        record.rounds_sender, record.rounds, record.round_at = "", 0, None
        until = record.paused_until = at + PAUSE
        logger.bind(chat=str(message.chat)).warning(
            "bot loop: {} answered the bot within {:g} s {} rounds in a row; the chat is"
            " paused until {:%H:%M}",
            message.sender_id,
            ANSWER_WITHIN.total_seconds(),
            ROUNDS,
            until.astimezone(self._zone),
        )
        return True

    # -- what the rooms ask -----------------------------------------------------------

    def follows_up(self, chat: ChatKey, sender_id: str, *, now: datetime) -> bool:
        """Tell whether ``sender_id`` was answered in ``chat`` in the last ten minutes."""
        record = self._records.get(chat)
        answered_at = None if record is None else record.partners.get(sender_id)
        return answered_at is not None and answered_at > now - FOLLOW_UP_WITHIN

    def paused_until(self, chat: ChatKey, *, now: datetime) -> datetime | None:
        """Return until when ``chat`` is paused for a bot loop; ``None`` if it is not."""
        record = self._records.get(chat)
        until = None if record is None else record.paused_until
        if until is None or now >= until:
            return None
        return until

    # -- bounded by what is live --------------------------------------------------------

    def _touch(self, chat: ChatKey, now: datetime) -> _Record:
        """Return ``chat``'s record, moved to the back; let go of the expired at the front."""
        record = self._records.pop(chat, None) or _Record()
        self._let_go(now)
        self._records[chat] = record
        return record

    def _let_go(self, now: datetime) -> None:
        """Drop the least recently touched records whose facts have all expired."""
        for chat in list(self._records):
            if self._records[chat].live(now):
                return
            del self._records[chat]
