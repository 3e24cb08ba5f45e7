"""Plans fitted into a platform's reply window (the official QQ bot's passive replies)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.models import ChatKey, ChatKind, StoredMessage
from bot.replies.items import DroppedItem, PlannedReply, Sticker, Text
from bot.replies.window import SLACK_S, Anchor, ReplyWindow, anchor_of, fit_window, open_anchor

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
GROUP = ReplyWindow(messages=5, within_s=300.0)
CHAT = ChatKey("qqbot", ChatKind.GROUP, "G")


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def texts(*delays_s: float) -> list[PlannedReply]:
    return [PlannedReply(Text(f"t{n}"), at(delay)) for n, delay in enumerate(delays_s, 1)]


def said(message_id: str, seconds_ago: float, *, addressed: bool = False) -> StoredMessage:
    return StoredMessage(
        CHAT, message_id, "u", "u", "hi", at(-seconds_ago), from_bot=False, addresses_bot=addressed
    )


def test_the_anchor_is_the_newest_addressed_message_else_the_newest() -> None:
    """A batch answers its newest message that addressed the bot, else its newest."""
    addressed = [said("1", 30, addressed=True), said("2", 20, addressed=True), said("3", 10)]
    unaddressed = [said("1", 30), said("2", 20)]
    assert (anchor_of(addressed), anchor_of(unaddressed), anchor_of([])) == (
        Anchor("2", at(-20)),
        Anchor("2", at(-20)),
        None,
    )


def test_extra_texts_are_joined_into_the_last_message_that_may_go() -> None:
    """Seven texts to one message become five replies naming it, the last three joined."""
    fitted = fit_window(texts(0, 1, 2, 3, 4, 5, 6), GROUP, Anchor("m", NOW), now=NOW, limit=2000)
    assert [(r.item, r.due_at, r.answers) for r in fitted.replies] == [
        (Text("t1"), at(0), "m"),
        (Text("t2"), at(1), "m"),
        (Text("t3"), at(2), "m"),
        (Text("t4"), at(3), "m"),
        (Text("t5\nt6\nt7"), at(4), "m"),
    ]
    assert (fitted.dropped, fitted.changes) == ((), ("3 texts joined into message 5",))


def test_extra_items_that_are_no_text_are_dropped() -> None:
    """Beyond the count, a sticker cannot be joined: it is dropped and said so."""
    plan = [*texts(0, 0, 0, 0), PlannedReply(Sticker("s1"), at(1)), *texts(2)]
    fitted = fit_window(plan, GROUP, Anchor("m", NOW), now=NOW, limit=2000)
    assert [r.item for r in fitted.replies][-1] == Text("t1")
    assert fitted.dropped == (DroppedItem("sticker", "more than 5 message(s) answer one message"),)


def test_delays_are_shortened_to_end_inside_the_window() -> None:
    """A plan whose last item would come after the window closes is compressed so that
    it comes ``SLACK_S`` before, each delay in proportion."""
    anchor = Anchor("m", at(-260))  # the window closes 40 s from now
    fitted = fit_window(texts(0, 30, 60), GROUP, anchor, now=NOW, limit=2000)
    end_s = 40 - SLACK_S
    assert [r.due_at for r in fitted.replies] == [at(0), at(end_s / 2), at(end_s)]
    assert fitted.changes == (f"delays shortened to end within the reply window ({end_s:.0f} s)",)


def test_a_closed_window_drops_the_plan() -> None:
    """Past the window nothing is planned: each item is dropped with the reason."""
    fitted = fit_window(texts(0, 1), GROUP, Anchor("m", at(-301)), now=NOW, limit=2000)
    reason = f"the reply window of message m closed at {at(-1):%H:%M:%S}"
    assert (fitted.replies, fitted.dropped) == ((), (DroppedItem("content", reason),) * 2)


def test_what_answers_nothing_goes_as_one_message() -> None:
    """Without an anchor (a reminder, an opener) the texts are joined into one message
    that names no message."""
    fitted = fit_window(texts(0, 3), GROUP, None, now=NOW, limit=2000)
    assert [(r.item, r.answers) for r in fitted.replies] == [(Text("t1\nt2"), None)]


def test_a_reminder_answers_its_askers_message_only_while_the_window_is_open() -> None:
    """The asker's newest message anchors a reminder while a plan still fits its window."""
    fresh, stale = said("f", 60), said("s", 300 - SLACK_S)
    assert (open_anchor(fresh, GROUP, now=NOW), open_anchor(stale, GROUP, now=NOW)) == (
        Anchor("f", at(-60)),
        None,
    )
