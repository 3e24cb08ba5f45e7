"""The store's contract, on a real SQLite file.

Each test uses only what the core's ports name (:class:`bot.keeping.KeptMessages`,
:class:`bot.batches.Batches`, :class:`bot.sender.Outbox`, …), except where it reads back
what the store holds through :class:`Tables`. What is SQLite's own (the file, WAL,
migrations, durability across processes) is in ``test_storage.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple, cast

import pytest

from bot.errors import StorageError
from bot.models import (
    BatchOutcome,
    ChatActivity,
    ChatKey,
    ChatKind,
    IncomingMessage,
    Picture,
    StoredMessage,
    VoiceNote,
)
from bot.replies.items import (
    ItemKind,
    OutboxItem,
    OutboxState,
    Outgoing,
    PlannedReply,
    Reaction,
    Sticker,
    Text,
    Voice,
)
from fakes.store_rows import ALICE, T0, add, answered_batch, at, incoming, stored
from storage.sqlite import SqliteStore

GROUP = ChatKey("qq", ChatKind.GROUP, "456")


class Reply(NamedTuple):
    """One outbox row as a store holds it."""

    content: str
    state: str
    reason: str | None
    platform_message_id: str | None


BotMessageRow = tuple[str, str, str, str, float, int, int | None]
"""message_id, sender_id, sender_name, text, sent_at (unix s), from_bot, batch_id."""


class Tables:
    """Read the tables with a second, plain connection to the file."""

    def __init__(self, path: Path) -> None:
        """Read the database at ``path``."""
        self._path = path

    def _peek(self, sql: str) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self._path)) as db:
            return db.execute(sql).fetchall()

    def batch_states(self) -> list[str]:
        """Return every batch's state, oldest batch first."""
        return [state for (state,) in self._peek("SELECT state FROM batches ORDER BY id")]

    def outbox(self) -> list[Reply]:
        """Return every queued reply, in queueing order."""
        return [
            Reply(*row)
            for row in self._peek(
                "SELECT content, state, reason, platform_message_id FROM outbox ORDER BY id"
            )
        ]

    def bot_messages(self) -> list[BotMessageRow]:
        """Return the bot's own messages in the log, in storage order."""
        return [
            (row[0], row[1], row[2], row[3], row[4], row[5], row[6])
            for row in self._peek(
                "SELECT message_id, sender_id, sender_name, text, sent_at, from_bot, batch_id"
                " FROM messages WHERE from_bot = 1 ORDER BY id"
            )
        ]


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    """Open a fresh store and close it after the test."""
    async with await SqliteStore.open(db_path) as opened:
        yield opened


@pytest.fixture
def tables(db_path: Path) -> Tables:
    """Read back what the store holds."""
    return Tables(db_path)


async def test_closed_store_refuses_work(store: SqliteStore) -> None:
    """After close, calls raise StorageError; closing again does nothing."""
    await store.close()
    await store.close()

    with pytest.raises(StorageError, match="closed"):
        await store.waiting_counts()
    with pytest.raises(StorageError, match="closed"):
        await store.scheduled_count()


# -- messages ----------------------------------------------------------------------------


async def test_duplicate_delivery_is_stored_once(store: SqliteStore) -> None:
    """The same platform message delivered twice is stored once; the second add says so."""
    message = incoming(ALICE, "7")

    first = await store.add_message(message, received_at=at(8))
    second = await store.add_message(message, received_at=at(9))

    assert (first, second) == (True, False)
    assert await store.waiting_counts() == {ALICE: 1}


async def test_messages_added_together_say_which_are_new(store: SqliteStore) -> None:
    """A page of 1,100 messages (three INSERTs in SQLite) is stored at once; a message
    stored before, or repeated in the page, is not new; the page keeps its order."""
    await store.add_message(incoming(ALICE, "3"), received_at=at(3))
    page = [incoming(ALICE, str(n)) for n in range(1, 1101)]
    page.insert(10, incoming(ALICE, "5"))  # the same message twice in one page
    page.append(incoming(GROUP, "1"))

    new = await store.add_messages(page, received_at=at(300))

    assert [m.message_id for m, is_new in zip(page, new, strict=True) if not is_new] == ["3", "5"]
    assert sum(new) == 1100
    assert await store.waiting_counts() == {ALICE: 1100, GROUP: 1}
    batch = await store.open_batch(ALICE, limit=1200, now=at(301))
    assert batch is not None
    in_page_order = [str(n) for n in range(1, 1101) if n != 3]
    assert [m.message_id for m in batch.messages] == ["3", *in_page_order]


async def test_nothing_of_a_page_is_stored_when_one_message_is_invalid(store: SqliteStore) -> None:
    """A naive datetime anywhere in a page refuses the page before anything is written."""
    naive = datetime(2026, 3, 5, 12, 0)  # noqa: DTZ001 - the point of the test
    page = [incoming(ALICE, "1"), incoming(ALICE, "2", sent_at=naive)]

    with pytest.raises(ValueError, match="sent_at must be timezone-aware"):
        await store.add_messages(page, received_at=T0)
    assert await store.waiting_counts() == {}


async def test_same_message_id_in_two_chats_is_two_messages(store: SqliteStore) -> None:
    """Message ids are unique per chat, not across chats."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "1"))

    assert await store.waiting_counts() == {ALICE: 1, GROUP: 1}


async def test_pictures_round_trip_and_take_notes(store: SqliteStore) -> None:
    """A message's picture references come back in its batch, and a note sticks to them."""
    pictures = (Picture("AgACAgIAAxk-file-id", "[photo]"), Picture("https://x/图.png", "[image]"))
    message = dataclasses.replace(incoming(ALICE, "1", "[photo] 这个怎么样？"), pictures=pictures)
    await add(store, message, incoming(ALICE, "2", "no picture"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None

    kept = await store.add_image_notes(ALICE, {"1": "一只橘猫", "2": "nothing", "9": "unknown"})
    await store.close_batch(batch.id, BatchOutcome.SILENT, now=T0)
    history = await store.recent_history(ALICE, exclude_batch=0, limit=10)

    assert [m.pictures for m in batch.messages] == [pictures, ()]
    assert kept == 1
    assert [(m.image_note, m.shown_text) for m in history] == [
        ("一只橘猫", "[photo: 一只橘猫] 这个怎么样？"),
        (None, "no picture"),
    ]


async def test_edit_replaces_text(store: SqliteStore) -> None:
    """An edit changes the stored text; editing an unknown message reports False."""
    await add(store, incoming(ALICE, "1", "helo"))

    edited = await store.edit_message(ALICE, "1", "hello")
    unknown = await store.edit_message(ALICE, "2", "nothing")
    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert (edited, unknown) == (True, False)
    assert batch is not None
    assert [m.text for m in batch.messages] == ["hello"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "😀🎉👨‍👩‍👧‍👦",
        "مرحبا بالعالم — שלום",
        "\u202eevil\u202c and \u200b zero width",
        "控制字符\x01\x07\x1b[31m\x7f",
        "{user} 100% {{not a template}} %s",
        "长" * 50_000 + "x" * 50_000,
    ],
    ids=["empty", "emoji", "rtl", "bidi-controls", "control-chars", "braces", "100k"],
)
async def test_text_round_trips(store: SqliteStore, text: str) -> None:
    """Any text a chatter can send comes back exactly as it went in."""
    await add(store, incoming(ALICE, "1", text))

    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert batch is not None
    assert batch.messages[0].text == text


async def test_lone_surrogates_are_replaced(store: SqliteStore) -> None:
    """Text with a lone surrogate (from escaped JSON) is stored with U+FFFD, not refused."""
    await add(store, incoming(ALICE, "1", "bad \ud800 pair but good 😀"))

    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert batch is not None
    assert batch.messages[0].text == "bad \ufffd pair but good 😀"


async def test_timestamps_round_trip_as_aware_utc(store: SqliteStore) -> None:
    """A time given in any zone comes back as the same instant, in UTC, to the microsecond."""
    shanghai = timezone(timedelta(hours=8))
    sent_at = datetime(2026, 3, 5, 23, 59, 58, 123456, tzinfo=shanghai)
    await add(store, incoming(ALICE, "1", sent_at=sent_at))

    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert batch is not None
    assert batch.messages[0].sent_at == sent_at
    assert batch.messages[0].sent_at.tzinfo is UTC
    assert batch.messages[0].sent_at.hour == 15


async def test_naive_datetimes_are_rejected(store: SqliteStore) -> None:
    """A naive datetime is a programming error and raises ValueError."""
    naive = datetime(2026, 3, 5, 12, 0)  # noqa: DTZ001 - the point of the test

    with pytest.raises(ValueError, match="sent_at must be timezone-aware"):
        await store.add_message(incoming(ALICE, "1", sent_at=naive), received_at=T0)
    with pytest.raises(ValueError, match="now must be timezone-aware"):
        await store.open_batch(ALICE, limit=30, now=naive)


# -- batches ------------------------------------------------------------------------------


async def test_open_batch_takes_oldest_up_to_limit(store: SqliteStore) -> None:
    """A batch takes the oldest waiting messages up to the limit; the rest keep waiting."""
    messages = [incoming(ALICE, str(i)) for i in range(1, 6)]
    await add(store, *messages, incoming(GROUP, "1"))

    first = await store.open_batch(ALICE, limit=3, now=T0)
    counts = await store.waiting_counts()

    assert first is not None
    assert (first.chat, first.messages) == (ALICE, tuple(stored(m) for m in messages[:3]))
    assert counts == {ALICE: 2, GROUP: 1}


async def test_open_batch_returns_none_when_nothing_waits(
    store: SqliteStore, tables: Tables
) -> None:
    """With no waiting messages no batch is created."""
    await add(store, incoming(GROUP, "1"))

    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert batch is None
    assert tables.batch_states() == []


async def test_concurrent_open_batches_share_nothing(store: SqliteStore) -> None:
    """Two batches opened at once never take the same message."""
    await add(store, *(incoming(ALICE, str(i)) for i in range(1, 4)))

    first, second = await asyncio.gather(
        store.open_batch(ALICE, limit=2, now=T0), store.open_batch(ALICE, limit=2, now=T0)
    )

    assert first is not None
    assert second is not None
    taken = sorted(m.message_id for m in first.messages + second.messages)
    assert taken == ["1", "2", "3"]


async def test_close_batch_queues_replies(store: SqliteStore) -> None:
    """Closing as answered queues the replies in order, scheduled, with their due times."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    replies = [
        PlannedReply(Text("hi"), at(10)),
        PlannedReply(Text("how are you?", reply_to="1"), at(13)),
    ]

    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=at(10), replies=replies)

    expected = [
        OutboxItem(items[0].id, ALICE, batch.id, 0, Text("hi"), at(10), OutboxState.SCHEDULED),
        OutboxItem(
            items[1].id,
            ALICE,
            batch.id,
            1,
            Text("how are you?", "1"),
            at(13),
            OutboxState.SCHEDULED,
        ),
    ]
    assert items == expected
    assert await store.next_scheduled(ALICE) == expected[0]
    assert await store.scheduled_count(ALICE) == 2


async def test_close_batch_refuses_double_close(store: SqliteStore, tables: Tables) -> None:
    """A batch closed twice raises StorageError and queues nothing the second time."""
    await add(store, incoming(ALICE, "1"))
    batch, _ = await answered_batch(store, ALICE, ["one"])

    with pytest.raises(StorageError, match="not open"):
        await store.close_batch(
            batch.id, BatchOutcome.ANSWERED, now=at(5), replies=[PlannedReply(Text("two"), at(5))]
        )

    assert await store.scheduled_count() == 1
    assert tables.batch_states() == ["answered"]


async def test_close_batch_that_fails_changes_nothing(store: SqliteStore, tables: Tables) -> None:
    """A close that fails half-way through its replies leaves the batch open and queues
    nothing, so closing it again works."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    broken = [PlannedReply(Text("one"), at(1)), PlannedReply(Text(cast(str, None)), at(2))]

    with pytest.raises((AttributeError, TypeError)):
        await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=at(1), replies=broken)
    before = (await store.scheduled_count(), tables.batch_states())
    await store.close_batch(batch.id, BatchOutcome.SILENT, now=at(2))

    assert (before, tables.batch_states()) == ((0, ["open"]), ["silent"])


async def test_close_unknown_batch_is_refused(store: SqliteStore) -> None:
    """Closing a batch that never existed raises StorageError."""
    with pytest.raises(StorageError, match="batch 99 is not open"):
        await store.close_batch(99, BatchOutcome.SILENT, now=T0)


async def test_failed_batches_are_counted_since(store: SqliteStore) -> None:
    """Only batches that failed at or after the given moment are counted."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "2"))
    for chat, finished in [(ALICE, at(10)), (GROUP, at(20))]:
        batch = await store.open_batch(chat, limit=30, now=T0)
        assert batch is not None
        await store.close_batch(batch.id, BatchOutcome.FAILED, now=finished, error="timeout")

    counts = [await store.failed_batches_since(at(s)) for s in (0, 15, 25)]

    assert counts == [2, 1, 0]


async def test_abandon_releases_messages(store: SqliteStore) -> None:
    """Batches left open wait again after abandoning: same messages, next batch, no reclose."""
    await add(store, incoming(ALICE, "1"), incoming(ALICE, "2"))
    stale = await store.open_batch(ALICE, limit=30, now=T0)
    assert stale is not None

    abandoned = await store.abandon_open_batches(now=at(60))
    counts = await store.waiting_counts()
    fresh = await store.open_batch(ALICE, limit=30, now=at(61))

    assert (abandoned, counts) == (1, {ALICE: 2})
    assert fresh is not None
    assert fresh.messages == stale.messages
    assert fresh.id != stale.id
    with pytest.raises(StorageError, match="not open"):
        await store.close_batch(stale.id, BatchOutcome.ANSWERED, now=at(62))


# -- history ------------------------------------------------------------------------------


async def test_history_excludes_waiting_and_current_batch(store: SqliteStore) -> None:
    """History holds earlier batches and the bot's replies, oldest first, not the new ones."""
    old = [incoming(ALICE, "1"), incoming(ALICE, "2")]
    await add(store, *old)
    _, items = await answered_batch(store, ALICE, ["reply"], now=at(3))
    assert await store.claim_for_sending(items[0].id, now=at(3))
    await store.mark_sent(
        items[0].id, platform_message_id="900", said="reply", sender_name="小满", now=at(4)
    )
    await add(store, incoming(ALICE, "5"))
    current = await store.open_batch(ALICE, limit=30, now=at(6))
    assert current is not None
    await add(store, incoming(ALICE, "7"))

    history = await store.recent_history(ALICE, exclude_batch=current.id, limit=10)

    bot_reply = StoredMessage(ALICE, "900", "bot", "小满", "reply", at(4), from_bot=True)
    assert history == [stored(old[0]), stored(old[1]), bot_reply]


async def test_chat_activity_lists_chats_newest_first_with_the_bots_messages(
    store: SqliteStore,
) -> None:
    """Each chat once, with all its messages counted (the bot's too), latest activity first."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "2"), incoming(ALICE, "3"))
    _, items = await answered_batch(store, GROUP, ["hi"], now=at(4))
    assert await store.claim_for_sending(items[0].id, now=at(4))
    await store.mark_sent(
        items[0].id, platform_message_id="900", said="hi", sender_name="小满", now=at(5)
    )

    activity = await store.chat_activity(limit=10)

    assert activity == [ChatActivity(GROUP, 2, at(5)), ChatActivity(ALICE, 2, at(3))]


async def test_chat_activity_is_limited_and_searchable_by_key_or_sender(store: SqliteStore) -> None:
    """A search finds a chat by part of its key or of a sender's name, ASCII case aside."""
    bob = IncomingMessage(GROUP, "2", "77", "Bob 小王", "hi", at(2), addresses_bot=True)
    await add(store, incoming(ALICE, "1"), bob)

    found = {
        search: [a.chat for a in await store.chat_activity(search=search, limit=10)]
        for search in ("TELEGRAM", "bob", "小王", "456", "nobody", "")
    }
    newest = await store.chat_activity(limit=1)

    assert found == {
        "TELEGRAM": [ALICE],
        "bob": [GROUP],
        "小王": [GROUP],
        "456": [GROUP],
        "nobody": [],
        "": [GROUP, ALICE],
    }
    assert [a.chat for a in newest] == [GROUP]


async def test_a_chat_is_named_by_its_newest_title_or_its_chatters_newest_name(
    store: SqliteStore,
) -> None:
    """A group takes the newest title its messages gave (an older one arriving late changes
    nothing), a private chat its chatter's newest name (never the bot's); a search finds a
    group by its title."""
    quiet = ChatKey("qq", ChatKind.GROUP, "789")  # no message of it gave a title
    titled = [
        dataclasses.replace(incoming(GROUP, "1"), chat_title="爬山群"),
        dataclasses.replace(incoming(GROUP, "3"), chat_title="周末爬山群"),
    ]
    await store.add_messages(titled, received_at=at(4))
    await add(store, dataclasses.replace(incoming(GROUP, "2"), chat_title="old name"))
    await add(store, incoming(quiet, "5"), incoming(ALICE, "6"))
    await add(store, dataclasses.replace(incoming(ALICE, "7"), sender_name="Alice W."))
    _, items = await answered_batch(store, ALICE, ["hi"], now=at(8))
    assert await store.claim_for_sending(items[0].id, now=at(8))
    await store.mark_sent(
        items[0].id, platform_message_id="900", said="hi", sender_name="小满", now=at(9)
    )

    names = await store.chat_names([GROUP, quiet, ALICE])
    found = [a.chat for a in await store.chat_activity(search="周末", limit=10)]

    assert names == {GROUP: "周末爬山群", ALICE: "Alice W."}
    assert found == [GROUP]


async def test_history_is_limited_to_newest_by_sent_time(store: SqliteStore) -> None:
    """The limit keeps the newest messages by platform time, returned oldest first."""
    late_arrival = incoming(ALICE, "9", sent_at=at(1.5))  # sent early, delivered last
    messages = [incoming(ALICE, "1"), incoming(ALICE, "2"), incoming(ALICE, "3"), late_arrival]
    await add(store, *messages)
    await answered_batch(store, ALICE, [])
    await add(store, incoming(GROUP, "4"))
    await answered_batch(store, GROUP, [])

    history = await store.recent_history(ALICE, exclude_batch=0, limit=3)

    assert [m.message_id for m in history] == ["9", "2", "3"]


async def test_chats_active_since_lists_a_platforms_recent_chats_newest_first(
    store: SqliteStore,
) -> None:
    """Only chats of that platform where a chatter wrote since then, the latest first,
    each once, up to the limit; the bot's own messages do not count as activity."""
    quiet = ChatKey("qq", ChatKind.PRIVATE, "7")
    friend = ChatKey("qq", ChatKind.PRIVATE, "8")
    quick = ChatKey("qqx", ChatKind.GROUP, "9")  # another platform whose name starts alike
    await add(store, incoming(quiet, "1"), incoming(GROUP, "10"), incoming(GROUP, "12"))
    await add(store, incoming(friend, "11"), incoming(ALICE, "13"), incoming(quick, "14"))
    _, items = await answered_batch(store, quiet, ["hi"], now=at(20))
    assert await store.claim_for_sending(items[0].id, now=at(20))
    await store.mark_sent(
        items[0].id, platform_message_id="900", said="hi", sender_name="小满", now=at(21)
    )

    found = {
        (since, limit): await store.chats_active_since("qq", at(since), limit=limit)
        for since, limit in ((0, 10), (0, 1), (10, 10), (11.5, 10), (13, 10))
    }

    assert found == {
        (0, 10): [GROUP, friend, quiet],
        (0, 1): [GROUP],
        (10, 10): [GROUP, friend],
        (11.5, 10): [GROUP],
        (13, 10): [],
    }


async def test_context_is_stored_once_and_never_waits(store: SqliteStore, tables: Tables) -> None:
    """Messages kept as context are new only once, wait for no batch, are in the history at
    once (closed in a skipped batch per chat), and leave waiting messages alone."""
    await add(store, incoming(ALICE, "1"), incoming(ALICE, "2"))
    context = [incoming(ALICE, "2"), incoming(ALICE, "3"), incoming(GROUP, "4")]

    first = await store.add_context(context, received_at=at(10))
    again = await store.add_context(context, received_at=at(11))
    history = await store.recent_history(ALICE, exclude_batch=0, limit=10)

    assert (first, again) == ([False, True, True], [False, False, False])
    assert await store.waiting_counts() == {ALICE: 2}
    assert [m.message_id for m in history] == ["3"]
    assert tables.batch_states() == ["skipped", "skipped"]


# -- outbox -------------------------------------------------------------------------------


async def test_unsaid_replies_come_from_last_answered_batch(store: SqliteStore) -> None:
    """The cancelled replies of the newest earlier answered batch are returned in order."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["sent", "left 1", "left 2"])
    assert await store.claim_for_sending(items[0].id, now=T0)
    await store.mark_sent(
        items[0].id, platform_message_id="900", said="sent", sender_name="bot", now=T0
    )
    assert await store.cancel_scheduled(ALICE, now=at(1)) == 2
    await add(store, incoming(ALICE, "2"))
    silent = await store.open_batch(ALICE, limit=30, now=at(2))
    assert silent is not None
    await store.close_batch(silent.id, BatchOutcome.SILENT, now=at(2))
    await add(store, incoming(ALICE, "3"))
    current = await store.open_batch(ALICE, limit=30, now=at(3))
    assert current is not None

    unsaid = await store.unsaid_replies(ALICE, before_batch=current.id)
    other_chat = await store.unsaid_replies(GROUP, before_batch=current.id)

    assert (unsaid, other_chat) == (["left 1", "left 2"], [])


async def test_unsaid_replies_only_look_at_the_newest_answered_batch(
    store: SqliteStore,
) -> None:
    """A fully sent answered batch hides older cancelled replies: nothing is unsaid now."""
    await add(store, incoming(ALICE, "1"))
    await answered_batch(store, ALICE, ["old"])
    await store.cancel_scheduled(ALICE, now=T0)
    await add(store, incoming(ALICE, "2"))
    _, new_items = await answered_batch(store, ALICE, ["new"])
    assert await store.claim_for_sending(new_items[0].id, now=T0)
    await store.mark_sent(
        new_items[0].id, platform_message_id="901", said="new", sender_name="b", now=T0
    )
    await add(store, incoming(ALICE, "3"))
    current = await store.open_batch(ALICE, limit=30, now=T0)
    assert current is not None

    unsaid = await store.unsaid_replies(ALICE, before_batch=current.id)

    assert unsaid == []


async def test_claim_after_cancel_fails(store: SqliteStore) -> None:
    """A cancelled reply cannot be claimed; a claimed reply is not cancelled."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["one", "two"])

    claimed_first = await store.claim_for_sending(items[0].id, now=T0)
    cancelled = await store.cancel_scheduled(ALICE, now=T0)
    claimed_second = await store.claim_for_sending(items[1].id, now=T0)

    assert (claimed_first, cancelled, claimed_second) == (True, 1, False)
    assert await store.next_scheduled(ALICE) is None


async def test_claim_and_cancel_racing_have_one_winner(store: SqliteStore) -> None:
    """A claim and a cancel issued together never both take the same reply."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["one", "two"])

    claimed, cancelled = await asyncio.gather(
        store.claim_for_sending(items[0].id, now=T0), store.cancel_scheduled(ALICE, now=T0)
    )

    assert (claimed, cancelled) in {(True, 1), (False, 2)}


async def test_mark_sent_keeps_the_bot_message(store: SqliteStore, tables: Tables) -> None:
    """A sent reply becomes a bot message in the chat that never waits for an answer."""
    await add(store, incoming(GROUP, "1"))
    batch, items = await answered_batch(store, GROUP, ["@Alice sure"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    await store.mark_sent(
        items[0].id, platform_message_id="77", said="@Alice sure", sender_name="小满", now=at(2)
    )

    row = tables.bot_messages()
    outbox = [(reply.state, reply.platform_message_id) for reply in tables.outbox()]
    assert row == [("77", "bot", "小满", "@Alice sure", at(2).timestamp(), 1, batch.id)]
    assert outbox == [("sent", "77")]
    assert await store.waiting_counts() == {}


async def test_mark_sent_that_fails_changes_nothing(store: SqliteStore, tables: Tables) -> None:
    """A reply whose sent record fails stays being sent, with no bot message kept."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    with pytest.raises((AttributeError, TypeError)):
        await store.mark_sent(
            items[0].id, platform_message_id="77", said="hi", sender_name=cast(str, None), now=at(1)
        )

    states = [reply.state for reply in tables.outbox()]
    assert (states, tables.bot_messages()) == (["sending"], [])


async def test_mark_sent_keeps_the_quote(store: SqliteStore) -> None:
    """A sent reply that quoted a message keeps what it quoted."""
    await add(store, incoming(GROUP, "1"))
    batch = await store.open_batch(GROUP, limit=30, now=T0)
    assert batch is not None
    (item,) = await store.close_batch(
        batch.id,
        BatchOutcome.ANSWERED,
        now=T0,
        replies=[PlannedReply(Text("yes", reply_to="1"), T0)],
    )
    assert await store.claim_for_sending(item.id, now=T0)
    await store.mark_sent(
        item.id, platform_message_id="77", said="yes", sender_name="小满", now=at(2)
    )

    history = await store.recent_history(GROUP, exclude_batch=0, limit=10)

    assert [(m.message_id, m.reply_to_id) for m in history] == [("1", None), ("77", "1")]


async def test_mark_sent_tolerates_a_known_platform_id(store: SqliteStore) -> None:
    """A sent reply whose platform id is already stored is marked sent without failing."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    await store.mark_sent(
        items[0].id, platform_message_id="1", said="hi", sender_name="bot", now=T0
    )

    history = await store.recent_history(ALICE, exclude_batch=0, limit=10)
    assert [(m.message_id, m.from_bot) for m in history] == [("1", False)]
    assert await store.scheduled_count() == 0


async def test_mark_sent_refuses_an_unclaimed_reply(store: SqliteStore) -> None:
    """Marking a reply sent that was never claimed is a bug and raises StorageError."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])

    with pytest.raises(StorageError, match="not being sent"):
        await store.mark_sent(
            items[0].id, platform_message_id="9", said="hi", sender_name="b", now=T0
        )

    assert await store.recent_history(ALICE, exclude_batch=0, limit=10) == [
        stored(incoming(ALICE, "1"))
    ]


async def test_release_makes_a_reply_sendable_again(store: SqliteStore) -> None:
    """A released reply is scheduled again and can be claimed once more."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    await store.release(items[0].id, now=at(1))

    assert await store.next_scheduled(ALICE) == items[0]
    assert await store.claim_for_sending(items[0].id, now=at(2))


async def test_release_refuses_a_reply_not_being_sent(store: SqliteStore) -> None:
    """Releasing a reply that is only scheduled is a bug and raises StorageError."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])

    with pytest.raises(StorageError, match="not being sent"):
        await store.release(items[0].id, now=T0)

    assert await store.next_scheduled(ALICE) == items[0]


async def test_mark_dropped_leaves_final_states_alone(store: SqliteStore, tables: Tables) -> None:
    """Dropping gives up a scheduled reply, but a cancelled one stays cancelled."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["one", "two"])
    await store.mark_dropped(items[0].id, now=T0, reason="chat unavailable")
    await store.cancel_scheduled(ALICE, now=T0)

    await store.mark_dropped(items[1].id, now=T0, reason="too late")

    states = [(reply.state, reply.reason) for reply in tables.outbox()]
    assert states == [("dropped", "chat unavailable"), ("cancelled", None)]


async def test_drop_scheduled_counts_one_chat(store: SqliteStore) -> None:
    """Dropping a chat's scheduled replies leaves other chats' replies queued."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "2"))
    await answered_batch(store, ALICE, ["a", "b"])
    await answered_batch(store, GROUP, ["c"])

    dropped = await store.drop_scheduled(ALICE, now=T0, reason="kicked")

    assert dropped == 2
    assert (await store.scheduled_count(ALICE), await store.scheduled_count()) == (0, 1)


async def test_next_scheduled_orders_by_due_time(store: SqliteStore) -> None:
    """The earliest due reply of the chat comes first, then by batch and sequence."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    replies = [PlannedReply(Text("later"), at(9)), PlannedReply(Text("sooner"), at(5))]
    await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=T0, replies=replies)

    item = await store.next_scheduled(ALICE)

    assert item is not None
    assert (item.item, item.seq) == (Text("sooner"), 1)


async def test_recover_outbox_drops_sending_and_stale(store: SqliteStore, tables: Tables) -> None:
    """After a restart, sending and stale replies are dropped; fresh ones stay scheduled."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "2"))
    _, alice_items = await answered_batch(store, ALICE, ["in flight", "stale"], now=at(0))
    _, group_items = await answered_batch(store, GROUP, ["fresh"], now=at(500))
    assert await store.claim_for_sending(alice_items[0].id, now=at(1))

    chats = await store.recover_outbox(now=at(600), stale_after_s=300)

    states = [(reply.content, reply.state, reply.reason) for reply in tables.outbox()]
    assert chats == [GROUP]
    assert states == [
        ("in flight", "dropped", "interrupted while sending"),
        ("stale", "dropped", "stale"),
        ("fresh", "scheduled", None),
    ]
    assert await store.next_scheduled(GROUP) == group_items[0]


async def test_items_of_every_kind_come_back_as_they_were_queued(store: SqliteStore) -> None:
    """A text, a reaction, a sticker and a voice note are queued and read back as such."""
    await add(store, incoming(GROUP, "1"))
    batch = await store.open_batch(GROUP, limit=30, now=T0)
    assert batch is not None
    queued: list[Outgoing] = [Text("好", "1"), Reaction("👍", "1"), Sticker("s7"), Voice("晚安")]
    replies = [PlannedReply(item, at(n)) for n, item in enumerate(queued)]

    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=T0, replies=replies)

    assert [item.item for item in items] == queued


async def test_a_reaction_sent_is_no_message_of_the_bot(store: SqliteStore, tables: Tables) -> None:
    """An item sent without a message of its own (a reaction) is sent, and no bot message
    joins the history; a text sent after it does."""
    await add(store, incoming(GROUP, "1"))
    batch = await store.open_batch(GROUP, limit=30, now=T0)
    assert batch is not None
    reaction, text = await store.close_batch(
        batch.id,
        BatchOutcome.ANSWERED,
        now=T0,
        replies=[PlannedReply(Reaction("👍", "1"), T0), PlannedReply(Text("好的"), at(1))],
    )
    for item, message_id, said in ((reaction, None, None), (text, "90", "好的")):
        assert await store.claim_for_sending(item.id, now=at(2))
        await store.mark_sent(
            item.id, platform_message_id=message_id, said=said, sender_name="小满", now=at(2)
        )

    assert [reply.state for reply in tables.outbox()] == ["sent", "sent"]
    assert [(row[0], row[3]) for row in tables.bot_messages()] == [("90", "好的")]


async def test_a_voice_note_is_kept_heard_once_and_then_forgotten_as_unheard(
    store: SqliteStore,
) -> None:
    """A message's voice note comes back as it was stored; it is unheard while it waits
    with nothing kept; what is kept ("" for a note given up on) ends that, and the heard
    words become the message's text."""
    note = VoiceNote("voice-1", "[voice 0:07]", 7.0, "https://example.com/r", 5120)
    given_up = VoiceNote("voice-2", "[voice]")
    await add(
        store,
        dataclasses.replace(incoming(ALICE, "1", "[voice 0:07]"), voice=note),
        dataclasses.replace(incoming(ALICE, "2", "[voice]"), voice=given_up),
        incoming(ALICE, "3", "plain"),
    )
    unheard = [m.message_id for m in await store.unheard_voice_notes()]
    await store.keep_transcript(ALICE, "1", transcript="你好", text="[voice 0:07] 你好")
    await store.keep_transcript(ALICE, "2", transcript="", text=None)
    batch = await store.open_batch(ALICE, limit=30, now=at(5))
    assert batch is not None

    assert unheard == ["1", "2"]
    assert await store.unheard_voice_notes() == []
    assert [(m.text, m.voice, m.transcript) for m in batch.messages] == [
        ("[voice 0:07] 你好", note, "你好"),
        ("[voice]", given_up, ""),
        ("plain", None, None),
    ]


async def test_what_an_item_went_out_as_is_kept_and_counted(
    store: SqliteStore, db_path: Path
) -> None:
    """A voice item sent as text counts as a text sent, one sent as voice as a voice
    note; a row from before sent_as existed counts by its own kind."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    planned = [PlannedReply(Voice("晚安"), T0), PlannedReply(Voice("好梦"), at(1))]
    planned.append(PlannedReply(Text("嗯"), at(2)))
    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=T0, replies=planned)
    for item, sent_as in zip(items, (ItemKind.CONTENT, ItemKind.VOICE, None), strict=True):
        assert await store.claim_for_sending(item.id, now=at(3))
        await store.mark_sent(
            item.id,
            platform_message_id=f"m{item.id}",
            said=item.item.text if isinstance(item.item, Voice) else "嗯",
            sender_name="小满",
            now=at(3),
            sent_as=sent_as,
        )
    with closing(sqlite3.connect(db_path)) as db:
        kept = db.execute("SELECT kind, sent_as FROM outbox ORDER BY id").fetchall()

    assert kept == [("voice", "content"), ("voice", "voice"), ("content", None)]
    assert await store.sent_counts(ALICE, since=T0) == {"content": 2, "voice": 1}
