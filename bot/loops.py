"""Two bots answering each other for ever: a chat where that happens is paused.

No person answers every line of the bot within two seconds, five times in a row; another
bot does. :class:`LoopWatch` hears each item the bot sends in a group and the first
message after it that addresses the bot (an answer to it: an @, a reply, its name): when
that message comes from the same sender within ``ANSWER_WITHIN`` for ``ROUNDS`` rounds in
a row, the chat is paused for ``PAUSE`` (the gate turns its batches away; their messages
stay stored). The room's other talk is no answer and counts for nothing. Private chats
are never paused: another bot does not talk to pacebot there, and a person who types
fast must not lose the bot for an hour. Pure bookkeeping with an injected clock: what it
holds lives only as long as the process, so a restart lifts a pause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from loguru import logger

from bot.models import ChatKey, IncomingMessage

ROUNDS = 5
ANSWER_WITHIN = timedelta(seconds=2)
PAUSE = timedelta(hours=1)


@dataclass(slots=True)
class _Rounds:
    """A chat's rounds so far: when the bot last spoke, and who answered it fast how often."""

    spoke_at: datetime | None = None  # the bot's latest item that nobody has answered yet
    sender: str = ""
    count: int = 0


class LoopWatch:
    """Count the rounds in which one sender answers the bot at once; pause a looping chat."""

    def __init__(self, *, now: Callable[[], datetime], zone: ZoneInfo) -> None:
        self._now = now
        self._zone = zone
        self._rounds: dict[ChatKey, _Rounds] = {}
        self._paused: dict[ChatKey, datetime] = {}

    def bot_sent(self, chat: ChatKey) -> None:
        """Hear that the bot sent an item to ``chat``: the next answer there may be fast."""
        if chat.is_group:
            self._rounds.setdefault(chat, _Rounds()).spoke_at = self._now()

    def message_in(self, message: IncomingMessage) -> bool:
        """Hear a stored message; return whether it completed a loop and paused its chat."""
        chat, sender_id = message.chat, message.sender_id
        rounds = self._rounds.get(chat)
        if rounds is None or rounds.spoke_at is None or not message.addresses_bot:
            return False
        now = self._now()
        fast = now - rounds.spoke_at <= ANSWER_WITHIN
        rounds.spoke_at = None
        if not fast:
            del self._rounds[chat]  # a pause for thought: whatever ran is broken
            return False
        if sender_id == rounds.sender:
            rounds.count += 1
        else:
            rounds.sender, rounds.count = sender_id, 1
        if rounds.count < ROUNDS:
            return False
        del self._rounds[chat]
        until = self._paused[chat] = now + PAUSE
        logger.bind(chat=str(chat)).warning(
            "bot loop: {} answered the bot within {:g} s {} rounds in a row; the chat is"
            " paused until {:%H:%M}",
            sender_id,
            ANSWER_WITHIN.total_seconds(),
            ROUNDS,
            until.astimezone(self._zone),
        )
        return True

    def paused_until(self, chat: ChatKey) -> datetime | None:
        """Return until when ``chat`` is paused for a loop; ``None`` if it is not."""
        until = self._paused.get(chat)
        if until is not None and self._now() >= until:
            del self._paused[chat]
            return None
        return until
