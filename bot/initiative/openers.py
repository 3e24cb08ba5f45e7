"""When a quiet chat may be spoken to first, and whether it may be now.

Restraint is the point: an opener comes only in a chat where someone talked with the bot
lately (``initiative.active_within_s``), after ``after_silence_s`` without a message, at a
random moment between that and 1.25 × that (so it never comes on the dot), inside the
local ``hours`` (a moment outside them moves to a random moment in the first hour of the
next window), at most ``max_openers_per_day`` per chat day, never twice in a row without a
person writing in between, never while the chat is quiet (``/quiet``), and in groups only
with ``openers_in_groups``. Everything here is pure: the moment, the zone and the random
draws are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.config.model import InitiativeConfig
from bot.hours import DAY_MINUTES, Window, in_window
from bot.models import ChatKey

SPREAD = 0.25  # the opener falls within after_silence_s × (1 + SPREAD)
FIRST_HOUR_MINUTES = 60  # a moment outside the hours moves into the next window's first hour


@dataclass(frozen=True, slots=True)
class Silence:
    """A chat's last message and the two draws (uniform in [0, 1)) that place its opener."""

    last_at: datetime
    draw: float  # where between after_silence_s and 1.25 × after_silence_s
    window_draw: float  # where in the first hour of the next window, if need be


@dataclass(frozen=True, slots=True)
class OpenerFacts:
    """What the guards read about a chat, from the store, when an opener is due."""

    last_message_at: datetime | None  # anyone's, the bot's too
    last_chatter_at: datetime | None  # a person's
    last_talked_at: datetime | None  # a person's message that the bot answered
    last_opener_at: datetime | None
    openers_today: int
    waiting: int  # messages no batch has taken yet


@dataclass(frozen=True, slots=True)
class OpenerSent:
    """An opener batch of a chat: when, and how it ended (``answered``, ``silent``…)."""

    batch_id: int
    at: datetime
    outcome: str


@dataclass(frozen=True, slots=True)
class QuietPeriod:
    """A ``/quiet`` of a chat: no openers or follow-ups from ``starts_at`` to ``ends_at``."""

    id: int
    chat: ChatKey
    starts_at: datetime
    ends_at: datetime
    set_by: str
    ended_at: datetime | None = None  # ``/quiet off`` ended it early
    ended_by: str | None = None

    def until(self) -> datetime:
        """When the quiet is over: its end, or when it was turned off."""
        return self.ends_at if self.ended_at is None else min(self.ends_at, self.ended_at)


def _window_length_minutes(window: Window) -> int:
    start, end = window
    return end - start if end > start else end + DAY_MINUTES - start


def next_window_start(moment: datetime, *, window: Window, zone: ZoneInfo) -> datetime:
    """Return the first start of the local window after ``moment``."""
    local = moment.astimezone(zone)
    start = time(window[0] // 60, window[0] % 60)
    for days in (0, 1, 2):  # a DST change never moves a start by a whole day
        candidate = datetime.combine(local.date() + timedelta(days=days), start, tzinfo=zone)
        if candidate > local:
            return candidate
    msg = f"no window start after {moment}"  # pragma: no cover - unreachable
    raise AssertionError(msg)


def into_hours(moment: datetime, *, window: Window, zone: ZoneInfo, draw: float) -> datetime:
    """Return ``moment`` if it is inside the hours, else a moment in the next window's first
    hour, ``draw`` of the way in."""
    if in_window(moment, window=window, zone=zone):
        return moment
    first_minutes = min(FIRST_HOUR_MINUTES, _window_length_minutes(window))
    start = next_window_start(moment, window=window, zone=zone)
    return start + timedelta(minutes=first_minutes * draw)


def opener_moment(silence: Silence, *, config: InitiativeConfig, zone: ZoneInfo) -> datetime:
    """Return when an opener may come after ``silence``: a random moment between
    ``after_silence_s`` and 1.25 × that after the last message, moved into the hours."""
    wait_s = config.after_silence_s * (1 + SPREAD * silence.draw)
    moment = silence.last_at + timedelta(seconds=wait_s)
    return into_hours(moment, window=config.window, zone=zone, draw=silence.window_draw)


def opener_refusal(
    chat: ChatKey,
    facts: OpenerFacts,
    *,
    now: datetime,
    quiet_until: datetime | None,
    config: InitiativeConfig,
    zone: ZoneInfo,
) -> str | None:
    """Return why ``chat`` may not get an opener now; ``None`` if every guard lets it."""
    if not config.openers:
        return "openers are off"
    if chat.is_group and not config.openers_in_groups:
        return "openers in groups are off"
    if quiet_until is not None and now < quiet_until:
        return f"quiet until {quiet_until.astimezone(zone):%Y-%m-%d %H:%M}"
    active = timedelta(seconds=config.active_within_s)
    if facts.last_talked_at is None or now - facts.last_talked_at > active:
        return f"nobody talked with the bot in the last {config.active_within_s:g} s"
    silence = timedelta(seconds=config.after_silence_s)
    if facts.waiting or (
        facts.last_message_at is not None and now - facts.last_message_at < silence
    ):
        return "the chat is not quiet"
    if not in_window(now, window=config.window, zone=zone):
        return f"outside the hours {config.hours}"
    if facts.openers_today >= config.max_openers_per_day:
        return f"{facts.openers_today} opener(s) this chat day already"
    opener, chatter = facts.last_opener_at, facts.last_chatter_at
    if opener is not None and (chatter is None or chatter <= opener):
        return "nobody wrote since the last opener"
    return None
