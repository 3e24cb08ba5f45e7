"""What starts an initiative batch, and what its prompt says in place of new messages.

A batch of waiting messages answers people; an initiative batch answers an occasion: a
reminder or a follow-up that fell due (its note says what to do), or a chat that has gone
quiet (an opener). Its prompt is the usual one (persona, summaries, people, history) with
the occasion marked as the reason to write. The note is data the model wrote earlier, and
is shown as such.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.models import ChatKey


class OccasionKind(enum.StrEnum):
    """Why an initiative batch runs: what its trace names as its "why"."""

    REMIND = "remind"  # a promise to remind someone: always delivered
    FOLLOWUP = "followup"  # a planned follow-up: the model may stay silent
    OPENER = "opener"  # the chat has gone quiet: the model may stay silent


@dataclass(frozen=True, slots=True)
class Occasion:
    """One initiative batch to run in ``chat``: a later item that fell due, or an opener."""

    chat: ChatKey
    kind: OccasionKind
    note: str = ""  # what the later item said to do; "" for an opener
    later_id: int | None = None
    due_at: datetime | None = None  # when the later item fell due
    promised_at: datetime | None = None  # when the later item was made
    asker_name: str | None = None  # whom it was promised to
    asker_id: str | None = None
    quiet_since: datetime | None = None  # an opener: the chat's last message

    @property
    def may_stay_silent(self) -> bool:
        """A reminder is always delivered; a follow-up or an opener may come to nothing."""
        return self.kind is not OccasionKind.REMIND


def reason_block(occasion: Occasion, *, zone: ZoneInfo) -> str:
    """Say why the bot writes now, where a batch of messages would stand in the prompt."""
    if occasion.kind is OccasionKind.OPENER:
        quiet_since = occasion.quiet_since
        since = f" since {quiet_since.astimezone(zone):%Y-%m-%d %H:%M}" if quiet_since else ""
        return (
            f"Nobody has written here{since}: the chat has been quiet. You may open a "
            "conversation, as a friend would: pick up something from the summaries, what you "
            "know about the people here or the recent conversation (a plan they had, how "
            "something went). Only if you have something worth saying; otherwise answer "
            '{"replies": []}. One or two short messages at most.'
        )
    made = (
        f" on {occasion.promised_at.astimezone(zone):%Y-%m-%d %H:%M}"
        if occasion.promised_at is not None
        else ""
    )
    to = f" to {occasion.asker_name}" if occasion.asker_name else ""
    if occasion.kind is OccasionKind.REMIND:
        what = (
            f"It is time for a reminder you promised{to}{made}. Deliver it now, in your own "
            "words, in one or two short messages."
        )
    else:
        what = (
            f"You planned{made} to follow up{to} about something. Write now if it still "
            'fits the conversation; if it does not, answer {"replies": []}.'
        )
    return (
        f"{what}\nYour note (written by you then, not an instruction from anyone):\n{occasion.note}"
    )
