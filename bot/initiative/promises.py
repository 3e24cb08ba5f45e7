"""Read a ``later`` item of a reply plan into a promise with a due time, or refuse it.

A ``later`` item says when (``at``, a local ``YYYY-MM-DD HH:MM`` in ``bot.timezone``, or
``in_seconds`` from now), what to do then (``note``) and whether it must be delivered
(``remind``) or may come to nothing (``followup``). One in the past, beyond
``initiative.max_days_ahead``, without a time or with both, or with a note too long to be
a note is refused with the reason, which the batch's trace shows; the rest of the plan
stands. Everything here is pure: "now" and the zone are passed in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.config.model import InitiativeConfig
from bot.models import ChatKey, StoredMessage
from bot.replies.items import DroppedItem, ItemKind, Later

NOTE_CHARS_MAX = 500
"""A longer note is refused, not cut: a note is a few words, so one this long is a pasted
message or text smuggled in, and half of it may say something else."""
_AT_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?")


class Refused(ValueError):
    """A later item that cannot be kept, and why (shown in the trace)."""


@dataclass(frozen=True, slots=True)
class Promise:
    """A later item accepted from a plan: what to do, when, and for whom."""

    kind: str  # "remind" or "followup"
    note: str
    due_at: datetime
    asker_id: str | None = None
    asker_name: str | None = None


@dataclass(frozen=True, slots=True)
class LaterItem:
    """A later item as it is kept: pending until it falls due, then run once."""

    id: int
    chat: ChatKey
    kind: str  # "remind" or "followup"
    note: str
    due_at: datetime
    state: str  # "pending", "running", "done", "cancelled" or "dropped"
    created_at: datetime
    asker_id: str | None = None
    asker_name: str | None = None
    reason: str | None = None  # why it was dropped
    cancelled_by: str | None = None


def _local_time(at: str, zone: ZoneInfo) -> datetime:
    """Read ``at`` as a local time; raise ``Refused`` if it is none."""
    match = _AT_RE.fullmatch(at.strip())
    if match is None:
        msg = f"'at' {at[:40]!r} is not a local time YYYY-MM-DD HH:MM"
        raise Refused(msg)
    year, month, day, hour, minute, second = (int(part) for part in match.groups(default="0"))
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError:
        msg = f"'at' {at[:40]!r} is no date and time that exists"
        raise Refused(msg) from None


def due_time(later: Later, *, now: datetime, zone: ZoneInfo, max_days_ahead: int) -> datetime:
    """Return when ``later`` falls due (aware, UTC); raise ``Refused`` saying why it cannot."""
    note = later.note.strip()
    if not note:
        msg = "an empty note"
        raise Refused(msg)
    if len(note) > NOTE_CHARS_MAX:
        msg = f"a note of {len(note)} characters (at most {NOTE_CHARS_MAX})"
        raise Refused(msg)
    if (later.at is None) == (later.in_seconds is None):
        msg = "needs either 'at' or 'in_seconds', not " + ("both" if later.at else "neither")
        raise Refused(msg)
    horizon = timedelta(days=max_days_ahead)
    if later.in_seconds is not None:
        seconds = later.in_seconds
        if not math.isfinite(seconds) or seconds <= 0:
            msg = f"'in_seconds' {seconds:g} is not in the future"
            raise Refused(msg)
        if seconds > horizon.total_seconds():
            msg = f"'in_seconds' {seconds:g} is beyond max_days_ahead ({max_days_ahead} days)"
            raise Refused(msg)
        return now.astimezone(UTC) + timedelta(seconds=seconds)
    assert later.at is not None
    local = _local_time(later.at, zone)
    local_now = now.astimezone(zone)
    # Compared in local time first: a date in year 9999 cannot be moved to UTC.
    if local.replace(tzinfo=None) - local_now.replace(tzinfo=None) > horizon:
        msg = f"'at' {later.at!r} is beyond max_days_ahead ({max_days_ahead} days)"
        raise Refused(msg)
    due = local.astimezone(UTC)
    if due <= now:
        msg = f"'at' {later.at!r} is in the past (now {local_now:%Y-%m-%d %H:%M})"
        raise Refused(msg)
    return due


def promise(
    later: Later,
    *,
    now: datetime,
    zone: ZoneInfo,
    max_days_ahead: int,
    asker: tuple[str, str] | None = None,
) -> Promise:
    """Return ``later`` as a promise to ``asker`` (id, name); raise ``Refused`` if it cannot be."""
    due = due_time(later, now=now, zone=zone, max_days_ahead=max_days_ahead)
    asker_id, asker_name = asker if asker is not None else (None, None)
    return Promise(later.purpose, later.note.strip(), due, asker_id, asker_name)


def asker_of(messages: Sequence[StoredMessage]) -> tuple[str, str] | None:
    """Return who a batch's promise is made to (id, name): the last to address the bot,
    else the last to write."""
    chatters = [m for m in messages if not m.from_bot]
    asking = [m for m in chatters if m.addresses_bot] or chatters
    return (asking[-1].sender_id, asking[-1].sender_name) if asking else None


def keep_promises(
    laters: Sequence[Later],
    *,
    pending: int,
    now: datetime,
    zone: ZoneInfo,
    config: InitiativeConfig,
    asker: tuple[str, str] | None,
) -> tuple[list[Promise], list[DroppedItem]]:
    """Return the later items of a plan that can be kept, in order, and those refused with
    why: each must have a valid time and note, and the chat holds ``pending`` already, of
    ``max_pending_per_chat`` at most."""
    kept: list[Promise] = []
    refused: list[DroppedItem] = []
    for later in laters:
        try:
            made = promise(
                later, now=now, zone=zone, max_days_ahead=config.max_days_ahead, asker=asker
            )
        except Refused as exc:
            refused.append(DroppedItem(ItemKind.LATER, str(exc)))
            continue
        if pending + len(kept) >= config.max_pending_per_chat:
            refused.append(
                DroppedItem(
                    ItemKind.LATER,
                    f"the chat holds {config.max_pending_per_chat} pending later items already "
                    "(initiative.max_pending_per_chat)",
                )
            )
            continue
        kept.append(made)
    return kept, refused
