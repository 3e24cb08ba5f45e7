"""One chat's conversation as a pure state machine: phases and the talk-over rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.conversation import Conversation, Phase, WaitEnd, answered_senders
from bot.models import ChatKey, ChatKind, IncomingMessage, StoredMessage

PRIVATE = ChatKey("test", ChatKind.PRIVATE, "42")
GROUP = ChatKey("test", ChatKind.GROUP, "-100")
SENT_AT = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def said(
    chat: ChatKey = PRIVATE,
    *,
    sender_id: str = "7",
    addressed: bool | None = None,
    message_id: str = "m",
) -> IncomingMessage:
    """Build a message; private messages always address the bot."""
    return IncomingMessage(
        chat=chat,
        message_id=message_id,
        sender_id=sender_id,
        sender_name="小明",
        text="嗯",
        sent_at=SENT_AT,
        addresses_bot=not chat.is_group if addressed is None else addressed,
    )


def answering(
    chat: ChatKey = PRIVATE, *, senders: frozenset[str] = frozenset({"7"}), owed: bool = True
) -> Conversation:
    """Return a conversation whose batch from ``senders`` is with the LLM."""
    conversation = Conversation(cancel_mode=True)
    conversation.message_in(said(chat, sender_id=next(iter(senders)), addressed=True))
    assert conversation.timer_fired() is True
    conversation.answer_started(senders, owed=owed or not chat.is_group)
    return conversation


def sending(chat: ChatKey = PRIVATE, *, senders: frozenset[str] = frozenset({"7"})) -> Conversation:
    """Return a conversation whose replies are going out."""
    conversation = answering(chat, senders=senders)
    assert conversation.answer_ready(2) is False
    assert conversation.answer_ended() is False
    return conversation


def test_phases_of_one_answer() -> None:
    """A message makes the chat wait, the timer makes it think, replies make it send, and
    once they are out it is idle."""
    conversation = Conversation(cancel_mode=True)
    phases = [conversation.phase]
    conversation.message_in(said())
    phases.append(conversation.phase)
    conversation.timer_fired()
    conversation.answer_started(frozenset({"7"}), owed=True)
    phases.append(conversation.phase)
    conversation.answer_ready(2)
    conversation.answer_ended()
    phases.append(conversation.phase)
    conversation.replies_done()
    phases.append(conversation.phase)
    assert phases == [Phase.IDLE, Phase.WAITING, Phase.THINKING, Phase.SENDING, Phase.IDLE]


def test_a_silent_answer_leaves_the_chat_idle() -> None:
    """An answer with no replies goes from thinking straight back to idle."""
    conversation = answering()
    assert (conversation.answer_ready(0), conversation.answer_ended()) == (False, False)
    assert (conversation.phase, conversation.answering) == (Phase.IDLE, frozenset())


@pytest.mark.parametrize("chat", [PRIVATE, GROUP], ids=["private", "group"])
def test_writing_while_replies_go_out_cancels_them(chat: ChatKey) -> None:
    """A message addressing the bot while replies go out cancels the unsent ones."""
    conversation = sending(chat)
    assert conversation.message_in(said(chat, addressed=True)).cancels is True


def test_a_bystander_in_a_group_cancels_nothing() -> None:
    """In a group, someone else chatting without naming the bot changes nothing."""
    conversation = sending(GROUP)
    bystander = said(GROUP, sender_id="99", addressed=False)
    assert (conversation.continues(bystander), conversation.message_in(bystander).cancels) == (
        False,
        False,
    )


def test_finish_mode_never_cancels() -> None:
    """With ``on_new_message = "finish"`` nothing is talked over."""
    conversation = Conversation(cancel_mode=False)
    conversation.message_in(said())
    conversation.timer_fired()
    conversation.answer_started(frozenset({"7"}), owed=True)
    conversation.answer_ready(3)
    talked = conversation.message_in(said()).cancels
    continues = conversation.continues(said(GROUP, addressed=False))
    assert (talked, continues) == (False, False)


@pytest.mark.parametrize(
    ("state", "sender_id", "expected"),
    [
        ("sending", "7", True),
        ("thinking", "7", True),
        ("sending", "99", False),
        ("idle", "7", False),
    ],
)
def test_a_group_message_from_the_person_answered_addresses_the_bot(
    state: str, sender_id: str, expected: bool
) -> None:
    """The person being answered writing again without naming the bot addresses it; a
    bystander does not, and nobody does when no answer is in hand."""
    if state == "sending":
        conversation = sending(GROUP)
    elif state == "thinking":
        conversation = answering(GROUP)
    else:
        conversation = Conversation(cancel_mode=True)
    message = said(GROUP, sender_id=sender_id, addressed=False)
    assert conversation.continues(message) is expected


def test_nothing_continues_while_thinking_about_a_batch_nobody_is_owed() -> None:
    """In a group batch that is not owed an answer (e.g. "smart" mode), writing again while
    it is thought out does not count as addressing the bot."""
    conversation = answering(GROUP, owed=False)
    assert conversation.continues(said(GROUP, addressed=False)) is False


def test_talked_over_while_thinking_keeps_only_the_first_reply() -> None:
    """Writing while the answer is thought out cuts it to its first reply once ready."""
    conversation = answering()
    cancel_now = conversation.message_in(said()).cancels
    assert (cancel_now, conversation.answer_ready(3)) == (False, True)


def test_talked_over_while_thinking_keeps_a_single_reply() -> None:
    """An answer of one reply has nothing to cut."""
    conversation = answering()
    conversation.message_in(said())
    assert conversation.answer_ready(1) is False


def test_a_bystander_while_thinking_cuts_nothing() -> None:
    """In a group, a bystander writing while the bot thinks leaves the whole answer."""
    conversation = answering(GROUP)
    conversation.message_in(said(GROUP, sender_id="99", addressed=False))
    assert conversation.answer_ready(3) is False


def test_one_batch_at_a_time() -> None:
    """A timer that fires while replies go out waits for them; the next batch starts
    once they are done, and only once."""
    conversation = sending()
    conversation.message_in(said())
    fired = conversation.timer_fired()
    phase_meanwhile = conversation.phase
    starts = (conversation.replies_done(), conversation.replies_done())
    assert (fired, phase_meanwhile, starts, conversation.phase) == (
        False,
        Phase.SENDING,
        (True, False),
        Phase.THINKING,
    )


def test_the_next_batch_waits_for_the_batch_in_hand_to_end() -> None:
    """Replies done before the batch task ended do not start the next one; its end does."""
    conversation = answering()
    conversation.answer_ready(1)
    conversation.message_in(said())
    conversation.timer_fired()
    assert (conversation.replies_done(), conversation.answer_ended()) == (False, True)


# -- a busy room: what re-arms the quiet timer -------------------------------------------


def room(*said_in_order: tuple[str, str, bool]) -> tuple[Conversation, list[bool]]:
    """Let (message id, sender, addresses the bot) arrive in a group; return whether each
    re-armed the timer."""
    conversation = Conversation(cancel_mode=True)
    rearmed = [
        conversation.message_in(
            said(GROUP, sender_id=sender, addressed=addressed, message_id=message_id)
        ).rearms
        for message_id, sender, addressed in said_in_order
    ]
    return conversation, rearmed


def test_before_anyone_asks_the_whole_room_re_arms_the_wait() -> None:
    """Until a message addresses the bot, every group message re-arms the timer (the
    room-wide debounce that "smart" mode waits on)."""
    _, rearmed = room(("1", "a", False), ("2", "b", False), ("3", "c", False))
    assert rearmed == [True, True, True]


def test_once_asked_only_the_askers_and_new_mentions_re_arm_the_wait() -> None:
    """After Alice addresses the bot, Bob's chatter joins as context without re-arming;
    Alice's own next message re-arms, and so does Carol addressing the bot, after which
    Carol's chatter re-arms too."""
    _, rearmed = room(
        ("1", "bob", False),
        ("2", "alice", True),
        ("3", "bob", False),
        ("4", "alice", False),
        ("5", "dave", False),
        ("6", "carol", True),
        ("7", "carol", False),
        ("8", "bob", False),
    )
    assert rearmed == [True, True, False, True, False, True, True, False]


def test_private_chats_re_arm_on_every_message() -> None:
    """In a private chat every message re-arms the wait, as before."""
    conversation = Conversation(cancel_mode=True)
    rearmed = [conversation.message_in(said(message_id=str(n))).rearms for n in range(3)]
    assert rearmed == [True, True, True]


def test_the_next_wait_starts_with_nobody_having_asked() -> None:
    """Once the timer fires, the askers belong to the batch taken: the next message from
    anyone re-arms the new wait."""
    conversation, _ = room(("1", "alice", True), ("2", "bob", False))
    conversation.timer_fired()
    after = conversation.message_in(said(GROUP, sender_id="bob", addressed=False, message_id="3"))
    assert after.rearms is True


def test_the_batch_knows_which_of_its_messages_re_armed_the_wait() -> None:
    """The batch started after the timer fires is told the ids that re-armed it; the
    others joined as context; the next batch starts afresh."""
    conversation, _ = room(
        ("1", "bob", False), ("2", "alice", True), ("3", "bob", False), ("4", "alice", False)
    )
    conversation.timer_fired()
    first = conversation.answer_started(frozenset({"alice", "bob"}), owed=True)
    conversation.answer_ready(0)
    conversation.answer_ended()
    conversation.message_in(said(GROUP, sender_id="bob", addressed=False, message_id="5"))
    conversation.timer_fired()
    second = conversation.answer_started(frozenset({"bob"}), owed=False)
    assert (first.rearmed_by, second.rearmed_by) == (("1", "2", "4"), ("5",))


def test_chatter_from_others_neither_delays_nor_cancels_the_answer() -> None:
    """With Alice's question waiting, Bob's chatter does not re-arm the wait; once Alice
    is being answered, Bob's chatter cancels nothing, while Alice writing again does."""
    conversation, rearmed = room(("1", "alice", True), ("2", "bob", False))
    conversation.timer_fired()
    conversation.answer_started(frozenset({"alice"}), owed=True)
    conversation.answer_ready(2)
    bob = conversation.message_in(said(GROUP, sender_id="bob", addressed=False, message_id="3"))
    alice = conversation.message_in(said(GROUP, sender_id="alice", addressed=True, message_id="4"))
    assert (rearmed, bob.cancels, alice.cancels) == ([True, False], False, True)


def test_only_the_first_question_of_a_wait_restarts_its_cap() -> None:
    """The first message addressing the bot in a wait is flagged (its max_wait_s counts
    from it); later ones, and any message in a private chat, are not."""
    conversation = Conversation(cancel_mode=True)
    flags = [
        conversation.message_in(
            said(GROUP, sender_id=sender, addressed=addressed, message_id=str(n))
        ).first_to_ask
        for n, (sender, addressed) in enumerate(
            [("bob", False), ("alice", True), ("carol", True), ("alice", False)]
        )
    ]
    private = Conversation(cancel_mode=True).message_in(said()).first_to_ask
    assert (flags, private) == ([False, True, False, False], False)


def stored(sender_id: str, *, addressed: bool) -> StoredMessage:
    return StoredMessage(GROUP, "m", sender_id, "x", "嗯", SENT_AT, False, addressed)


def test_a_group_batch_answers_those_who_asked_not_the_chatter_around_them() -> None:
    """The people being answered are the senders of the messages that address the bot;
    a batch nobody addressed answers everyone in it (as "smart" and "always" modes do)."""
    asked = answered_senders([stored("bob", addressed=False), stored("alice", addressed=True)])
    nobody = answered_senders([stored("bob", addressed=False), stored("carol", addressed=False)])
    assert (asked, nobody) == (frozenset({"alice"}), frozenset({"bob", "carol"}))


def test_a_wait_counts_the_context_its_batch_may_hold_beyond_max_batch() -> None:
    """The room's lines before the question and the chatter after it are context: the
    batch to come may hold that many messages more than max_batch; the next starts at 0."""
    conversation, _ = room(
        ("1", "bob", False),
        ("2", "bob", False),
        ("3", "alice", True),
        ("4", "bob", False),
        ("5", "carol", False),
        ("6", "alice", False),
    )
    conversation.timer_fired()
    held = conversation.batch_context
    conversation.answer_started(frozenset({"alice"}), owed=True)
    assert (held, conversation.batch_context) == (4, 0)


def timed_room(
    *said_in_order: tuple[float, str, bool], continue_s: float = 4.0
) -> tuple[Conversation, list[bool]]:
    """Let (seconds, sender, addresses the bot) arrive in a group, with
    ``groups.continue_s``; return whether each re-armed the timer."""
    conversation = Conversation(cancel_mode=True)
    rearmed = [
        conversation.message_in(
            said(GROUP, sender_id=sender, addressed=addressed, message_id=str(number)),
            at=at,
            continue_s=continue_s,
        ).rearms
        for number, (at, sender, addressed) in enumerate(said_in_order)
    ]
    return conversation, rearmed


def test_the_askers_quick_follow_up_still_joins_the_question() -> None:
    """Alice asks, then adds "…I mean for a beginner" 2 s later and another line 3 s after
    that: each continues her question and re-arms the wait."""
    _, rearmed = timed_room((0.0, "alice", True), (2.0, "alice", False), (5.0, "alice", False))
    assert rearmed == [True, True, True]


def test_an_asker_who_goes_on_chatting_with_the_room_no_longer_delays_the_answer() -> None:
    """Three members take turns every 3 s: Alice's lines 9 s apart are chatter with the
    others, context for her question, not re-arms; so is her next quick line once she has
    gone on to other talk, until she addresses the bot again."""
    _, rearmed = timed_room(
        (0.0, "alice", True),
        (3.0, "bob", False),
        (6.0, "carol", False),
        (9.0, "alice", False),
        (10.0, "alice", False),
        (12.0, "bob", False),
        (15.0, "alice", True),
        (17.0, "alice", False),
    )
    assert rearmed == [True, False, False, False, False, False, True, True]


def test_continue_s_zero_lets_only_new_mentions_re_arm() -> None:
    """With ``continue_s = 0`` the asker's unaddressed lines never re-arm; a new @ does."""
    _, rearmed = timed_room(
        (0.0, "alice", True), (0.5, "alice", False), (1.0, "alice", True), continue_s=0.0
    )
    assert rearmed == [True, False, True]


@pytest.mark.parametrize(
    ("ended_by", "asked", "expected"),
    [
        (WaitEnd.QUIET, True, WaitEnd.QUIET_AFTER_ASKER),
        (WaitEnd.QUIET, False, WaitEnd.QUIET),
        (WaitEnd.ANSWER_BOUND, True, WaitEnd.ANSWER_BOUND),
        (WaitEnd.MAX_WAIT, True, WaitEnd.MAX_WAIT),
    ],
)
def test_the_batch_is_told_why_its_wait_ended(
    ended_by: WaitEnd, asked: bool, expected: WaitEnd
) -> None:
    """A quiet that came after someone asked is "quiet after the asker"; the answer bound
    and max wait are named as such; the next batch starts from a plain quiet again."""
    conversation, _ = timed_room((0.0, "alice", asked), (1.0, "bob", False))
    conversation.timer_fired(ended_by)
    wait = conversation.answer_started(frozenset({"alice"}), owed=asked)
    conversation.answer_ready(0)
    conversation.answer_ended()
    conversation.message_in(said(GROUP, sender_id="bob", addressed=False, message_id="9"))
    conversation.timer_fired()
    after = conversation.answer_started(frozenset({"bob"}), owed=False)
    assert (wait.ended_by, after.ended_by) == (expected, WaitEnd.QUIET)


@pytest.mark.parametrize(
    ("after_s", "expected"),
    [(2.0, True), (9.0, False)],
    ids=["still typing to the bot", "chatting with the room"],
)
def test_the_asker_being_answered_talks_over_only_while_still_typing(
    after_s: float, expected: bool
) -> None:
    """While Alice's answer is thought out, her unaddressed line 2 s after her question
    continues the exchange (it cuts the answer and is answered); one 9 s later is talk
    with the room: context, and so is her next quick line."""
    conversation, _ = timed_room((0.0, "alice", True))
    conversation.timer_fired()
    conversation.answer_started(frozenset({"alice"}), owed=True)
    line = said(GROUP, sender_id="alice", addressed=False, message_id="2")
    continues = conversation.continues(line, at=after_s, continue_s=4.0)
    again = conversation.continues(line, at=after_s + 1.0, continue_s=4.0)
    assert (continues, again) == (expected, expected)
