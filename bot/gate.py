"""Whether a batch may cost an LLM call, and why: the gate.

Every batch passes here before its call. Most pass as they always did: a private chat, a
group batch that addresses the bot. What the gate adds:

- a chat paused for a bot loop (:mod:`bot.company`) and the hard cap of ``[budget]`` turn
  every batch away (its messages stay stored);
- in a group (``groups.for_chat``: an override covers every topic of its group), a batch
  nobody addressed goes nowhere in ``mention`` mode, to the LLM in ``always`` mode, and in
  ``smart`` mode only for a **reason**: one of ``interests`` among its words (cut as recall
  cuts them), a question to the room, or a follow-up: a sender the bot answered in this
  chat in the last ten minutes (:class:`~bot.company.Company`). A batch with a reason is
  still kept out by ``quiet_hours``, by the group's hourly budget of unaddressed calls, by
  the bot's share of the chat's last 40 messages, or by a soft cap; then a draw against
  ``talk_value`` decides.

Deciding makes no LLM call, and a batch without a reason not even a database read. The
verdict's reasons are the trace's words: ``addressed``, ``interest: 猫``, ``question``,
``follow-up``, ``no reason``, ``the hour's unaddressed calls are spent``,
``share 0.31 > 0.25``, ``quiet hours``, ``talk_value draw 0.72 > 0.30``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from bot.budget import Spending
from bot.company import Company
from bot.config.groups import GroupSettings
from bot.config.settings import Settings
from bot.hours import in_window
from bot.models import Batch, ChatKey
from bot.replies.questions import asks_the_room, looks_like_question

SHARE_OF_LAST = 40  # messages
HOUR = timedelta(hours=1)
NOT_ADDRESSED = "not addressed"
STAYED_OUT = "stayed out"
OVER_BUDGET = "over budget"
PAUSED = "paused"


class Decision(enum.Enum):
    """Whether a batch goes to the LLM, and whether silence is an acceptable answer."""

    SKIP = enum.auto()
    ANSWER = enum.auto()  # must say something
    MAY_STAY_SILENT = enum.auto()


def decide(batch: Batch, *, reply_mode: str) -> Decision:
    """Apply the group rules: private chats are answered, groups per their ``reply_mode``."""
    texts = [m.text for m in batch.messages]
    if not batch.chat.is_group:
        return Decision.MAY_STAY_SILENT if not looks_like_question(texts) else Decision.ANSWER
    if any(m.addresses_bot for m in batch.messages):
        return Decision.ANSWER
    if reply_mode == "mention":
        return Decision.SKIP
    return Decision.MAY_STAY_SILENT


class RoomLog(Protocol):
    """What the gate reads of a room: its unaddressed calls, the bot's share."""

    async def add_unaddressed_call(self, room: ChatKey, *, at: datetime) -> None:
        """Note a call made for an unaddressed batch of the group ``room``."""
        ...

    async def room_reading(self, chat: ChatKey, *, since: datetime, last: int) -> tuple[int, float]:
        """Return, in one read, the calls for unaddressed batches of ``chat``'s group since
        ``since`` and the share of ``chat``'s ``last`` newest messages the bot wrote."""
        ...


class WordCutter(Protocol):
    """Cut texts into the words recall searches for (Chinese segmented, lower-cased)."""

    async def words(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """Return the words of each text, in order."""
        ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a batch goes to the LLM, the reasons for and against, and, when it does
    not, the word the trace says why with."""

    go: bool
    reasons: tuple[str, ...] = ()
    why: str = ""


def draw_line(drawn: float, talk_value: float) -> str:
    """Say how the draw against ``talk_value`` went (it goes when it falls below)."""
    sign = "<" if drawn < talk_value else (">" if drawn > talk_value else "≥")
    return f"talk_value draw {drawn:.2f} {sign} {talk_value:.2f}"


class CallGate:
    """Admit batches to their LLM call, or say why not."""

    def __init__(
        self,
        config: Settings,
        rooms: RoomLog,
        words: WordCutter,
        *,
        spending: Spending,
        company: Company,
        now: Callable[[], datetime],
        draw: Callable[[], float],
    ) -> None:
        self._config = config
        self._rooms = rooms
        self._words = words
        self._spending = spending
        self._company = company
        self._now = now
        self._draw = draw
        self._interest_words: dict[str, frozenset[str]] = {}

    async def admit(self, batch: Batch) -> Verdict:
        """Say whether ``batch`` may cost an LLM call, with the reasons for the trace."""
        chat = batch.chat
        paused = self._company.paused_until(chat, now=self._now())
        if paused is not None:
            local = paused.astimezone(self._config.bot.zone)
            return Verdict(False, (f"paused: bot loop until {local:%H:%M}",), PAUSED)
        refusal = await self._spending.refusal(chat, optional=False)
        if refusal is not None:
            return Verdict(False, (refusal,), OVER_BUDGET)
        if not chat.is_group:
            return Verdict(True)
        settings = self._config.for_chat(chat).groups
        decision = decide(batch, reply_mode=settings.reply_mode)
        if decision is Decision.ANSWER:
            return Verdict(True, ("addressed",))
        if decision is Decision.SKIP:
            return Verdict(False, (NOT_ADDRESSED,), NOT_ADDRESSED)
        if settings.reply_mode == "always":
            return await self._always(chat)
        return await self._smart(batch, settings)

    async def _always(self, chat: ChatKey) -> Verdict:
        """``always``: every batch goes, unless a soft cap stops the optional calls."""
        soft = await self._spending.refusal(chat, optional=True)
        if soft is not None:
            return Verdict(False, ("always", soft), OVER_BUDGET)
        return Verdict(True, ("always",))

    async def _smart(self, batch: Batch, settings: GroupSettings) -> Verdict:
        """``smart``: a batch goes for a reason, within the budgets, by the draw."""
        reasons = await self._reasons(batch, settings)
        if not reasons:
            return Verdict(False, ("no reason",), STAYED_OUT)
        refusals = await self._refusals(batch.chat, settings)
        if refusals:
            return Verdict(False, reasons + refusals, STAYED_OUT)
        drawn = self._draw()
        drew = draw_line(drawn, settings.talk_value)
        if drawn >= settings.talk_value:
            return Verdict(False, (*reasons, drew), STAYED_OUT)
        await self._rooms.add_unaddressed_call(batch.chat.room, at=self._now())
        return Verdict(True, (*reasons, drew))

    async def _reasons(self, batch: Batch, settings: GroupSettings) -> tuple[str, ...]:
        """Return the gate's reasons for the bot to speak in an unaddressed group batch."""
        found = [f"interest: {interest}" for interest in await self._interests(batch, settings)]
        if any(asks_the_room(message.text) for message in batch.messages):
            found.append("question")
        if self._follows_up(batch):
            found.append("follow-up")
        return tuple(found)

    async def _interests(self, batch: Batch, settings: GroupSettings) -> list[str]:
        """Return the interests among the batch's words: every word of one in one message.

        A one-character interest (猫) is found wherever it is written, since a cut with no
        dictionary cannot tell 养猫 from 熊猫: missing the first costs more than a draw.
        """
        wanted = await self._cut_interests(settings.interests)
        if not wanted:
            return []
        texts = [message.text.casefold() for message in batch.messages]
        said = await self._words.words(texts)
        return [
            interest
            for interest, words in wanted.items()
            if words
            and (
                any(interest.casefold() in text for text in texts)
                if len(interest.strip()) == 1
                else any(words <= message for message in said)
            )
        ]

    async def _cut_interests(self, interests: Sequence[str]) -> Mapping[str, frozenset[str]]:
        """Return each interest's words, cut once per process as messages are cut."""
        new = [interest for interest in interests if interest not in self._interest_words]
        if new:
            self._interest_words.update(zip(new, await self._words.words(new), strict=True))
        return {interest: self._interest_words[interest] for interest in interests}

    def _follows_up(self, batch: Batch) -> bool:
        now = self._now()
        return any(
            self._company.follows_up(batch.chat, m.sender_id, now=now) for m in batch.messages
        )

    async def _refusals(self, chat: ChatKey, settings: GroupSettings) -> tuple[str, ...]:
        """Return what keeps a group batch with a reason out: quiet hours, the hourly
        budget, the bot's share, a soft cap (all that apply, for the trace)."""
        refusals = []
        now = self._now()
        quiet = settings.quiet_window
        if quiet is not None and in_window(now, window=quiet, zone=self._config.bot.zone):
            refusals.append("quiet hours")
        spent, share = await self._rooms.room_reading(chat, since=now - HOUR, last=SHARE_OF_LAST)
        if spent >= settings.unaddressed_calls_per_hour:
            refusals.append("the hour's unaddressed calls are spent")
        if share > settings.max_share:
            refusals.append(f"share {share:.2f} > {settings.max_share:.2f}")
        soft = await self._spending.refusal(chat, optional=True)
        if soft is not None:
            refusals.append(soft)
        return tuple(refusals)

    async def calls_this_hour(self, chat: ChatKey) -> int:
        """Count the calls for unaddressed batches of ``chat``'s group in the last hour."""
        since = self._now() - HOUR
        calls, _ = await self._rooms.room_reading(chat, since=since, last=SHARE_OF_LAST)
        return calls
