"""Fit a timed plan into the reply window of the message it answers.

A platform that wants each reply to name the message it answers (the official QQ bot's
passive replies: at most 5 per message, within 5 minutes of it in a group and 60 in a
private chat, :class:`~bot.ports.ReplyWindow`) gets plans that keep its rules:

- the plan answers its **anchor**: the newest message of the batch that addressed the
  bot, else the batch's newest (:func:`anchor_of`);
- beyond the window's count, the extra texts are joined into the last message that may
  go, and other extra items are dropped;
- delays are shortened so that the last item is due :data:`SLACK_S` before the window
  closes, since sends are paced and take their time;
- a window already closed drops the whole plan: a late answer is never an error text.

What answers no message (a reminder, an opener) is planned as one message: the platform
counts each one against a small monthly quota. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from bot.models import StoredMessage
from bot.replies.items import DroppedItem, PlannedReply, Text

SLACK_S: Final = 20.0
"""The last item of a plan is due this long before its window closes, in seconds."""
_JOINER: Final = "\n"


@dataclass(frozen=True, slots=True)
class ReplyWindow:
    """How a platform lets a bot answer one message: with at most ``messages`` messages,
    each sent within ``within_s`` seconds after that message was."""

    messages: int
    within_s: float


@dataclass(frozen=True, slots=True)
class Anchor:
    """The message a plan answers: its id and when it was sent."""

    message_id: str
    sent_at: datetime


@dataclass(frozen=True, slots=True)
class Fitted:
    """A plan fitted to a window: what goes, what was dropped, what was changed."""

    replies: tuple[PlannedReply, ...]
    dropped: tuple[DroppedItem, ...] = ()
    changes: tuple[str, ...] = ()  # for the trace: texts joined, delays shortened


def anchor_of(messages: Sequence[StoredMessage]) -> Anchor | None:
    """Return what a batch's plan answers: its newest message that addressed the bot,
    else its newest chatter's message; ``None`` for a batch with none."""
    said = [message for message in messages if not message.from_bot]
    addressed = [message for message in said if message.addresses_bot]
    chosen = (addressed or said)[-1:] if said else []
    return Anchor(chosen[0].message_id, chosen[0].sent_at) if chosen else None


def open_anchor(
    message: StoredMessage | None, window: ReplyWindow, *, now: datetime
) -> Anchor | None:
    """Return ``message`` as an anchor while a plan made ``now`` still fits its window
    (a reminder answers its asker's newest message so, instead of answering nothing)."""
    if message is None:
        return None
    closes = message.sent_at + timedelta(seconds=window.within_s - SLACK_S)
    return Anchor(message.message_id, message.sent_at) if now < closes else None


def fit_window(
    planned: Sequence[PlannedReply],
    window: ReplyWindow,
    anchor: Anchor | None,
    *,
    now: datetime,
    limit: int,
) -> Fitted:
    """Fit ``planned`` (timed from ``now``) into ``anchor``'s window, texts cut at
    ``limit`` characters; with no anchor, into one message that answers nothing."""
    text_limit = limit
    if not planned:
        return Fitted(())
    if anchor is not None and now >= anchor.sent_at + timedelta(seconds=window.within_s):
        closes = anchor.sent_at + timedelta(seconds=window.within_s)
        reason = f"the reply window of message {anchor.message_id} closed at {closes:%H:%M:%S}"
        return Fitted((), tuple(DroppedItem(p.item.kind, reason) for p in planned))
    limit = window.messages if anchor is not None else 1
    kept, dropped, changes = _at_most(planned, limit, text_limit=text_limit)
    if anchor is not None:
        closes = anchor.sent_at + timedelta(seconds=window.within_s - SLACK_S)
        kept, shortened = _due_by(kept, start=now, deadline=max(closes, now))
        changes += shortened
        kept = [replace(reply, answers=anchor.message_id) for reply in kept]
    return Fitted(tuple(kept), tuple(dropped), tuple(changes))


def _at_most(
    planned: Sequence[PlannedReply], limit: int, *, text_limit: int
) -> tuple[list[PlannedReply], list[DroppedItem], list[str]]:
    """Keep ``limit`` messages: the extra texts joined into the last one that may go (a
    text), the other extra items dropped."""
    if len(planned) <= limit:
        return list(planned), [], []
    head, rest = list(planned[: limit - 1]), planned[limit - 1 :]
    texts = [reply for reply in rest if isinstance(reply.item, Text)]
    others = [reply for reply in rest if not isinstance(reply.item, Text)]
    if not texts:  # nothing to join: the first extra item goes, the others are dropped
        texts, others = [], list(rest)
        head.append(others.pop(0))
    dropped = [
        DroppedItem(reply.item.kind, f"more than {limit} message(s) answer one message")
        for reply in others
    ]
    if not texts:
        return head, dropped, []
    first = texts[0]
    assert isinstance(first.item, Text)
    words = _JOINER.join(reply.item.content for reply in texts if isinstance(reply.item, Text))
    changes = [f"{len(texts)} texts joined into message {limit}"] if len(texts) > 1 else []
    if len(words) > text_limit:
        changes.append(f"the joined text cut to {text_limit} characters")
        words = words[: text_limit - 1] + "…"
    head.append(replace(first, item=Text(words, first.item.reply_to)))
    return head, dropped, changes


def _due_by(
    planned: Sequence[PlannedReply], *, start: datetime, deadline: datetime
) -> tuple[list[PlannedReply], list[str]]:
    """Shorten the delays so that the last item is due by ``deadline``, in proportion."""
    last = max(reply.due_at for reply in planned)
    if last <= deadline or last <= start:
        return list(planned), []
    factor = (deadline - start) / (last - start)
    fitted = [replace(reply, due_at=start + (reply.due_at - start) * factor) for reply in planned]
    span_s = (deadline - start).total_seconds()
    return fitted, [f"delays shortened to end within the reply window ({span_s:.0f} s)"]
