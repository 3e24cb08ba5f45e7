"""Turns on the one connection: storing incoming messages goes ahead of the answers' work."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from bot.models import ChatKey, ChatKind, IncomingMessage
from storage.sqlite import SqliteStore
from storage.turns import Turns


async def _take(turns: Turns, name: str, order: list[str], *, urgent: bool = False) -> None:
    async with turns.turn(urgent=urgent):
        order.append(name)
        await asyncio.sleep(0)


async def test_urgent_waiters_go_before_those_that_came_earlier() -> None:
    """While one holds the lock, an urgent waiter is served before earlier ordinary ones."""
    turns = Turns()
    order: list[str] = []
    async with turns.turn():
        tasks = [asyncio.create_task(_take(turns, name, order)) for name in ("a", "b")]
        tasks.append(asyncio.create_task(_take(turns, "urgent", order, urgent=True)))
        tasks.append(asyncio.create_task(_take(turns, "c", order)))
        await asyncio.sleep(0.01)
        assert order == []  # nobody got in while the lock was held
    await asyncio.gather(*tasks)
    assert order == ["urgent", "a", "b", "c"]


async def test_one_holder_at_a_time() -> None:
    """However many take turns, the body never runs twice at once."""
    turns = Turns()
    inside = 0
    most = 0

    async def hold(urgent: bool) -> None:
        nonlocal inside, most
        async with turns.turn(urgent=urgent):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.001)
            inside -= 1

    await asyncio.gather(*(hold(n % 3 == 0) for n in range(30)))
    assert (most, inside) == (1, 0)


async def test_a_cancelled_waiter_does_not_keep_the_lock() -> None:
    """A waiter cancelled in the queue, or just as it was handed the lock, passes it on."""
    turns = Turns()
    order: list[str] = []
    async with turns.turn():
        queued = asyncio.create_task(_take(turns, "cancelled in the queue", order))
        handed = asyncio.create_task(_take(turns, "cancelled when handed", order, urgent=True))
        last = asyncio.create_task(_take(turns, "last", order))
        await asyncio.sleep(0.01)
        queued.cancel()
        await asyncio.sleep(0.01)
    handed.cancel()  # the lock was just handed to it; it has not run yet
    await asyncio.wait_for(last, timeout=1.0)
    results = await asyncio.gather(queued, handed, return_exceptions=True)
    assert order == ["last"]
    assert [type(result) for result in results] == [asyncio.CancelledError] * 2


async def test_storing_a_page_goes_ahead_of_queued_reads(tmp_path: Path) -> None:
    """With fifty reads queued for the connection, a page of messages is stored first."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, "1")
    page = [
        IncomingMessage(chat, str(n), "1", "Alice", "hi", datetime.now(UTC), addresses_bot=True)
        for n in range(3)
    ]
    done: list[str] = []

    async def read() -> None:
        await store.waiting_counts()
        done.append("read")

    async def write() -> None:
        await store.add_messages(page, received_at=datetime.now(UTC))
        done.append("page")

    async with await SqliteStore.open(tmp_path / "pacebot.db") as store:
        reads = [asyncio.create_task(read()) for _ in range(50)]
        await asyncio.sleep(0)  # every read is queued for the connection
        await asyncio.gather(write(), *reads)
    assert done.index("page") <= 1  # after the read holding the connection, if any


async def test_a_write_cancelled_as_its_transaction_begins_leaves_none_open(
    tmp_path: Path,
) -> None:
    """A writer cancelled while BEGIN is on its way rolls back: the next write succeeds."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, "1")

    def page(first: int) -> list[IncomingMessage]:  # over 500 rows: written in a transaction
        return [
            IncomingMessage(chat, str(n), "1", "Alice", "hi", datetime.now(UTC))
            for n in range(first, first + 600)
        ]

    async with await SqliteStore.open(tmp_path / "pacebot.db") as store:
        cancelled = asyncio.create_task(store.add_messages(page(0), received_at=datetime.now(UTC)))
        await asyncio.sleep(0)  # it holds the connection and waits for BEGIN
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        stored = await store.add_messages(page(1000), received_at=datetime.now(UTC))
        waiting = await store.waiting_counts()
    assert (cancelled.cancelled(), sum(stored), waiting) == (True, 600, {chat: 600})
