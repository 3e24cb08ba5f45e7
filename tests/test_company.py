"""The bot's company: whom it answered and when, bot loops, and a record bounded by what is live."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.company import ANSWER_WITHIN, FOLLOW_UP_WITHIN, PAUSE, ROUNDS_APART, Company
from bot.models import ChatKey, ChatKind, IncomingMessage

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
GROUP = ChatKey("test", ChatKind.GROUP, "-100")
TOPIC = ChatKey("test", ChatKind.GROUP, "-100", "7")
PRIVATE = ChatKey("test", ChatKind.PRIVATE, "42")


def company() -> Company:
    return Company(zone=ZoneInfo("UTC"))


def said(chat: ChatKey, sender: str, *, addresses_bot: bool = True) -> IncomingMessage:
    return IncomingMessage(
        chat=chat,
        message_id="1",
        sender_id=sender,
        sender_name=sender,
        text="好",
        sent_at=NOON,
        addresses_bot=addresses_bot,
    )


def test_someone_answered_follows_up_for_ten_minutes_in_that_chat_only() -> None:
    """Alice, answered at noon, follows up until ten minutes later, in that chat alone;
    Bob, never answered, does not."""
    record = company()
    record.answered(GROUP, frozenset({"alice"}), at=NOON)
    within = NOON + FOLLOW_UP_WITHIN - timedelta(seconds=1)
    assert [
        record.follows_up(GROUP, "alice", now=within),
        record.follows_up(GROUP, "alice", now=NOON + FOLLOW_UP_WITHIN),
        record.follows_up(GROUP, "bob", now=within),
        record.follows_up(TOPIC, "alice", now=within),
    ] == [True, False, False, False]


def test_private_chats_keep_no_partners() -> None:
    """An answer in a private chat records nothing: every private message is answered."""
    record = company()
    record.answered(PRIVATE, frozenset({"42"}), at=NOON)
    assert (record.follows_up(PRIVATE, "42", now=NOON), len(record)) == (False, 0)


def test_five_fast_rounds_pause_the_chat_for_an_hour() -> None:
    """The fifth answer within two seconds from one sender pauses the chat until an hour
    later, and not a moment longer."""
    record = company()
    at = NOON
    found = []
    for _ in range(5):
        record.bot_spoke(GROUP, at=at)
        at += ANSWER_WITHIN
        found.append(record.heard(said(GROUP, "other-bot"), at=at))
    until = at + PAUSE
    assert (
        found,
        record.paused_until(GROUP, now=at),
        record.paused_until(GROUP, now=until),
    ) == ([False, False, False, False, True], until, None)


def test_rounds_far_apart_make_no_loop() -> None:
    """Fast answers more than ten minutes apart are separate exchanges, not a loop."""
    record = company()
    at = NOON
    for _ in range(5):
        record.bot_spoke(GROUP, at=at)
        record.heard(said(GROUP, "fast-typist"), at=at + timedelta(seconds=1))
        at += ROUNDS_APART + timedelta(minutes=1)
    assert record.paused_until(GROUP, now=at) is None


def test_a_chat_idle_past_its_windows_leaves_no_record() -> None:
    """A thousand groups answered once leave no record once ten minutes have passed and
    another chat is touched: the map holds the chats active lately, not every chat seen."""
    record = company()
    for number in range(1000):
        chat = ChatKey("test", ChatKind.GROUP, str(-number))
        record.answered(chat, frozenset({"alice"}), at=NOON)
        record.bot_spoke(chat, at=NOON)
    before = len(record)
    record.bot_spoke(GROUP, at=NOON + FOLLOW_UP_WITHIN + timedelta(seconds=1))
    assert (before, len(record)) == (1000, 1)


def test_a_pause_keeps_its_record_until_it_ends() -> None:
    """A paused chat keeps its record for the hour, then lets it go."""
    record = company()
    at = NOON
    for _ in range(5):
        record.bot_spoke(GROUP, at=at)
        at += timedelta(seconds=1)
        record.heard(said(GROUP, "other-bot"), at=at)
    other = ChatKey("test", ChatKind.GROUP, "-200")
    record.bot_spoke(other, at=at + PAUSE - timedelta(minutes=1))
    during = len(record)
    record.bot_spoke(other, at=at + PAUSE + timedelta(seconds=3))
    assert (during, len(record)) == (2, 1)
