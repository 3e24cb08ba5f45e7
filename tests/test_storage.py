"""The SQLite store on real files: messages, batches, the outbox and durability."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest

from bot.errors import StorageError
from bot.models import (
    Batch,
    BatchOutcome,
    ChatKey,
    ChatKind,
    IncomingMessage,
    OutboxItem,
    OutboxState,
    PlannedReply,
    StoredMessage,
)
from storage.migrate import load_migrations
from storage.sqlite import SqliteStore

T0 = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)
ALICE = ChatKey("telegram", ChatKind.PRIVATE, "123")
GROUP = ChatKey("qq", ChatKind.GROUP, "456")
LATEST_VERSION = len(load_migrations())


def at(seconds: float) -> datetime:
    """Return T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def incoming(
    chat: ChatKey,
    message_id: str,
    text: str | None = None,
    *,
    sent_at: datetime | None = None,
    sender_id: str = "42",
    reply_to_id: str | None = None,
) -> IncomingMessage:
    """Build a chatter's message; numeric ids double as seconds after T0."""
    return IncomingMessage(
        chat=chat,
        message_id=message_id,
        sender_id=sender_id,
        sender_name="Alice",
        text=f"message {message_id}" if text is None else text,
        sent_at=at(int(message_id)) if sent_at is None else sent_at,
        addresses_bot=chat.kind is ChatKind.PRIVATE,
        reply_to_id=reply_to_id,
    )


def stored(message: IncomingMessage) -> StoredMessage:
    """Return how the store should give ``message`` back."""
    return StoredMessage(
        chat=message.chat,
        message_id=message.message_id,
        sender_id=message.sender_id,
        sender_name=message.sender_name,
        text=message.text,
        sent_at=message.sent_at,
        from_bot=False,
        addresses_bot=message.addresses_bot,
        reply_to_id=message.reply_to_id,
    )


def peek(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the file with a second, plain connection."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


async def add(store: SqliteStore, *messages: IncomingMessage) -> None:
    """Store messages, received one second after they were sent."""
    for message in messages:
        assert await store.add_message(message, received_at=message.sent_at + timedelta(seconds=1))


async def answered_batch(
    store: SqliteStore, chat: ChatKey, contents: list[str], *, now: datetime = T0
) -> tuple[Batch, list[OutboxItem]]:
    """Open a batch of the waiting messages and close it as answered with ``contents``."""
    batch = await store.open_batch(chat, limit=30, now=now)
    assert batch is not None
    replies = [
        PlannedReply(content, due_at=now + timedelta(seconds=i))
        for i, content in enumerate(contents)
    ]
    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=now, replies=replies)
    return batch, items


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Return where the test database lives (its directory does not exist yet)."""
    return tmp_path / "data" / "pacebot.sqlite3"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    """Open a fresh store and close it after the test."""
    async with await SqliteStore.open(db_path) as opened:
        yield opened


# -- opening and migrations ------------------------------------------------------------


async def test_open_migrates_an_empty_file(store: SqliteStore, db_path: Path) -> None:
    """A new database gets every migration, its tables and the newest version."""
    tables = peek(
        db_path,
        "SELECT name FROM pragma_table_list WHERE schema = 'main'"
        " AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite%' ORDER BY name",
    )
    version = peek(db_path, "PRAGMA user_version")

    assert tables == [
        ("batches",),
        ("knowledge_fts",),
        ("knowledge_index",),
        ("messages",),
        ("outbox",),
        ("prompt_history",),
    ]
    assert version == [(LATEST_VERSION,)]


async def test_reopen_keeps_data_and_version(db_path: Path) -> None:
    """Closing and reopening keeps the stored messages and does not migrate again."""
    async with await SqliteStore.open(db_path) as first:
        await add(first, incoming(ALICE, "1"), incoming(ALICE, "2"))

    async with await SqliteStore.open(db_path) as second:
        counts = await second.waiting_counts()
        batch = await second.open_batch(ALICE, limit=30, now=T0)

    assert counts == {ALICE: 2}
    assert batch is not None
    assert [m.message_id for m in batch.messages] == ["1", "2"]
    assert peek(db_path, "PRAGMA user_version") == [(LATEST_VERSION,)]


async def test_newer_schema_is_refused(db_path: Path) -> None:
    """A database written by a newer pacebot is not opened, and not touched."""
    async with await SqliteStore.open(db_path):
        pass
    with closing(sqlite3.connect(db_path)) as db:
        db.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")

    with pytest.raises(StorageError, match="newer than this pacebot knows") as raised:
        await SqliteStore.open(db_path)

    assert f"version {LATEST_VERSION + 1}" in str(raised.value)
    assert peek(db_path, "PRAGMA user_version") == [(LATEST_VERSION + 1,)]


async def test_corrupt_file_is_refused(db_path: Path) -> None:
    """A file that is not an SQLite database gives a StorageError naming the file."""
    db_path.parent.mkdir(parents=True)
    await asyncio.to_thread(db_path.write_bytes, b"this is not a database, just text " * 200)

    with pytest.raises(StorageError, match="cannot open the database") as raised:
        await SqliteStore.open(db_path)

    assert str(db_path) in str(raised.value)


async def test_unopenable_path_is_refused(tmp_path: Path) -> None:
    """A path that is a directory gives a StorageError, not a raw sqlite3 error."""
    with pytest.raises(StorageError, match="cannot open the database"):
        await SqliteStore.open(tmp_path)


async def test_wal_mode_is_on(store: SqliteStore, db_path: Path) -> None:
    """The database file is in WAL journal mode."""
    assert peek(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_closed_store_refuses_work(db_path: Path) -> None:
    """After the context manager exits, calls raise StorageError and close is idempotent."""
    async with await SqliteStore.open(db_path) as store:
        pass

    await store.close()
    with pytest.raises(StorageError, match="closed"):
        await store.waiting_counts()


# -- messages ----------------------------------------------------------------------------


async def test_duplicate_delivery_is_stored_once(store: SqliteStore) -> None:
    """The same platform message delivered twice is stored once; the second add says so."""
    message = incoming(ALICE, "7")

    first = await store.add_message(message, received_at=at(8))
    second = await store.add_message(message, received_at=at(9))

    assert (first, second) == (True, False)
    assert await store.waiting_counts() == {ALICE: 1}


async def test_same_message_id_in_two_chats_is_two_messages(store: SqliteStore) -> None:
    """Message ids are unique per chat, not across chats."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "1"))

    assert await store.waiting_counts() == {ALICE: 1, GROUP: 1}


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
    store: SqliteStore, db_path: Path
) -> None:
    """With no waiting messages no batch is created."""
    await add(store, incoming(GROUP, "1"))

    batch = await store.open_batch(ALICE, limit=30, now=T0)

    assert batch is None
    assert peek(db_path, "SELECT chat_key FROM batches") == []


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
    replies = [PlannedReply("hi", at(10)), PlannedReply("how are you?", at(13), reply_to="1")]

    items = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=at(10), replies=replies)

    expected = [
        OutboxItem(items[0].id, ALICE, batch.id, 0, "hi", at(10), OutboxState.SCHEDULED),
        OutboxItem(
            items[1].id, ALICE, batch.id, 1, "how are you?", at(13), OutboxState.SCHEDULED, "1"
        ),
    ]
    assert items == expected
    assert await store.next_scheduled(ALICE) == expected[0]
    assert await store.scheduled_count(ALICE) == 2


async def test_close_batch_refuses_double_close(store: SqliteStore, db_path: Path) -> None:
    """A batch closed twice raises StorageError and queues nothing the second time."""
    await add(store, incoming(ALICE, "1"))
    batch, _ = await answered_batch(store, ALICE, ["one"])

    with pytest.raises(StorageError, match="not open"):
        await store.close_batch(
            batch.id, BatchOutcome.ANSWERED, now=at(5), replies=[PlannedReply("two", at(5))]
        )

    assert await store.scheduled_count() == 1
    assert peek(db_path, "SELECT state FROM batches") == [("answered",)]


async def test_close_unknown_batch_is_refused(store: SqliteStore) -> None:
    """Closing a batch that never existed raises StorageError."""
    with pytest.raises(StorageError, match="batch 99 is not open"):
        await store.close_batch(99, BatchOutcome.SILENT, now=T0)


async def test_close_batch_is_atomic(store: SqliteStore, db_path: Path) -> None:
    """If queueing a reply fails, the batch stays open and no reply is queued."""
    await add(store, incoming(ALICE, "1"))
    batch = await store.open_batch(ALICE, limit=30, now=T0)
    assert batch is not None
    unstorable = PlannedReply("two", at(1), reply_to=cast("str", object()))

    with pytest.raises(StorageError):
        await store.close_batch(
            batch.id, BatchOutcome.ANSWERED, now=T0, replies=[PlannedReply("one", T0), unstorable]
        )

    assert peek(db_path, "SELECT state FROM batches") == [("open",)]
    assert await store.scheduled_count() == 0
    assert await store.close_batch(batch.id, BatchOutcome.FAILED, now=T0, error="boom") == []


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
    await store.mark_sent(items[0].id, platform_message_id="900", sender_name="小满", now=at(4))
    await add(store, incoming(ALICE, "5"))
    current = await store.open_batch(ALICE, limit=30, now=at(6))
    assert current is not None
    await add(store, incoming(ALICE, "7"))

    history = await store.recent_history(ALICE, exclude_batch=current.id, limit=10)

    bot_reply = StoredMessage(ALICE, "900", "bot", "小满", "reply", at(4), from_bot=True)
    assert history == [stored(old[0]), stored(old[1]), bot_reply]


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


# -- outbox -------------------------------------------------------------------------------


async def test_unsaid_replies_come_from_last_answered_batch(store: SqliteStore) -> None:
    """The cancelled replies of the newest earlier answered batch are returned in order."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["sent", "left 1", "left 2"])
    assert await store.claim_for_sending(items[0].id, now=T0)
    await store.mark_sent(items[0].id, platform_message_id="900", sender_name="bot", now=T0)
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
    await store.mark_sent(new_items[0].id, platform_message_id="901", sender_name="b", now=T0)
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


async def test_mark_sent_keeps_the_bot_message(store: SqliteStore, db_path: Path) -> None:
    """A sent reply becomes a bot message in the chat that never waits for an answer."""
    await add(store, incoming(GROUP, "1"))
    batch, items = await answered_batch(store, GROUP, ["@Alice sure"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    await store.mark_sent(items[0].id, platform_message_id="77", sender_name="小满", now=at(2))

    row = peek(
        db_path,
        "SELECT message_id, sender_id, sender_name, text, sent_at, from_bot, batch_id"
        " FROM messages WHERE from_bot = 1",
    )
    outbox = peek(db_path, "SELECT state, platform_message_id FROM outbox")
    assert row == [("77", "bot", "小满", "@Alice sure", at(2).timestamp(), 1, batch.id)]
    assert outbox == [("sent", "77")]
    assert await store.waiting_counts() == {}


async def test_mark_sent_keeps_the_quote(store: SqliteStore) -> None:
    """A sent reply that quoted a message keeps what it quoted."""
    await add(store, incoming(GROUP, "1"))
    batch = await store.open_batch(GROUP, limit=30, now=T0)
    assert batch is not None
    (item,) = await store.close_batch(
        batch.id, BatchOutcome.ANSWERED, now=T0, replies=[PlannedReply("yes", T0, reply_to="1")]
    )
    assert await store.claim_for_sending(item.id, now=T0)
    await store.mark_sent(item.id, platform_message_id="77", sender_name="小满", now=at(2))

    history = await store.recent_history(GROUP, exclude_batch=0, limit=10)

    assert [(m.message_id, m.reply_to_id) for m in history] == [("1", None), ("77", "1")]


async def test_mark_sent_tolerates_a_known_platform_id(store: SqliteStore) -> None:
    """A sent reply whose platform id is already stored is marked sent without failing."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])
    assert await store.claim_for_sending(items[0].id, now=T0)

    await store.mark_sent(items[0].id, platform_message_id="1", sender_name="bot", now=T0)

    history = await store.recent_history(ALICE, exclude_batch=0, limit=10)
    assert [(m.message_id, m.from_bot) for m in history] == [("1", False)]
    assert await store.scheduled_count() == 0


async def test_mark_sent_refuses_an_unclaimed_reply(store: SqliteStore) -> None:
    """Marking a reply sent that was never claimed is a bug and raises StorageError."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["hi"])

    with pytest.raises(StorageError, match="not being sent"):
        await store.mark_sent(items[0].id, platform_message_id="9", sender_name="b", now=T0)

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


async def test_mark_dropped_leaves_final_states_alone(store: SqliteStore, db_path: Path) -> None:
    """Dropping gives up a scheduled reply, but a cancelled one stays cancelled."""
    await add(store, incoming(ALICE, "1"))
    _, items = await answered_batch(store, ALICE, ["one", "two"])
    await store.mark_dropped(items[0].id, now=T0, reason="chat unavailable")
    await store.cancel_scheduled(ALICE, now=T0)

    await store.mark_dropped(items[1].id, now=T0, reason="too late")

    states = peek(db_path, "SELECT state, reason FROM outbox ORDER BY seq")
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
    replies = [PlannedReply("later", at(9)), PlannedReply("sooner", at(5))]
    await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=T0, replies=replies)

    item = await store.next_scheduled(ALICE)

    assert item is not None
    assert (item.content, item.seq) == ("sooner", 1)


async def test_recover_outbox_drops_sending_and_stale(store: SqliteStore, db_path: Path) -> None:
    """After a restart, sending and stale replies are dropped; fresh ones stay scheduled."""
    await add(store, incoming(ALICE, "1"), incoming(GROUP, "2"))
    _, alice_items = await answered_batch(store, ALICE, ["in flight", "stale"], now=at(0))
    _, group_items = await answered_batch(store, GROUP, ["fresh"], now=at(500))
    assert await store.claim_for_sending(alice_items[0].id, now=at(1))

    chats = await store.recover_outbox(now=at(600), stale_after_s=300)

    states = peek(db_path, "SELECT content, state, reason FROM outbox ORDER BY id")
    assert chats == [GROUP]
    assert states == [
        ("in flight", "dropped", "interrupted while sending"),
        ("stale", "dropped", "stale"),
        ("fresh", "scheduled", None),
    ]
    assert await store.next_scheduled(GROUP) == group_items[0]


# -- durability ---------------------------------------------------------------------------


async def test_second_connection_sees_committed_data(db_path: Path) -> None:
    """What one store commits, another connection to the file sees while the first is open."""
    async with await SqliteStore.open(db_path) as writer:
        await add(writer, incoming(ALICE, "1"))
        async with await SqliteStore.open(db_path) as reader:
            seen = await reader.waiting_counts()
        await writer.open_batch(ALICE, limit=30, now=T0)
        raw = peek(db_path, "SELECT message_id, batch_id IS NOT NULL FROM messages")

    assert seen == {ALICE: 1}
    assert raw == [("1", 1)]


async def test_data_survives_reopen(db_path: Path) -> None:
    """Batches, queued replies and history all survive closing and reopening."""
    async with await SqliteStore.open(db_path) as first:
        await add(first, incoming(ALICE, "1"))
        batch, items = await answered_batch(first, ALICE, ["hi", "again"])
        await add(first, incoming(ALICE, "3"))

    async with await SqliteStore.open(db_path) as second:
        queued = await second.next_scheduled(ALICE)
        counts = await second.waiting_counts()
        current = await second.open_batch(ALICE, limit=30, now=at(4))
        assert current is not None
        history = await second.recent_history(ALICE, exclude_batch=current.id, limit=10)

    assert (queued, counts) == (items[0], {ALICE: 1})
    assert current.id > batch.id
    assert history == [stored(incoming(ALICE, "1"))]
