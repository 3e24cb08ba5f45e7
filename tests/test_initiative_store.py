"""The later items' store and the rules that read them: a real SQLite file, no event loop
where none is needed."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.hours import in_window
from bot.initiative.occasion import OccasionKind
from bot.initiative.openers import Silence, into_hours, opener_moment
from bot.initiative.promises import Promise, Refused, due_time
from bot.initiative.wakeup import WakeUp
from bot.models import BatchOutcome, ChatKey, IncomingMessage
from bot.replies.contract import LATER_CONTRACT, contract
from bot.replies.items import ItemKind, Later, PlannedReply, Text
from bot.replies.plan import parse_replies
from fakes.harness import make_config
from storage.sqlite import SqliteStore

T0 = datetime(2026, 11, 26, 13, 0, tzinfo=UTC)
ZONE = ZoneInfo("Asia/Shanghai")
CHAT = ChatKey.parse("telegram:private:42")
TOPIC = ChatKey.parse("telegram:group:-100123:7")


async def promise_in(store: SqliteStore, chat: ChatKey, *due_in_s: float) -> int:
    """Answer a message of ``chat`` with promises due ``due_in_s`` after T0; return the batch."""
    message = IncomingMessage(chat, "m1", "7", "小明", "提醒我", T0, addresses_bot=True)
    await store.add_messages([message], received_at=T0)
    batch = await store.open_batch(chat, limit=10, now=T0)
    assert batch is not None
    promises = [
        Promise("remind", f"n{s:g}", T0 + timedelta(seconds=s), "7", "小明") for s in due_in_s
    ]
    await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=T0, promises=promises)
    return batch.id


async def test_a_due_item_is_claimed_once(store: SqliteStore) -> None:
    """Two turns at once claim a due item once; one not due yet is left pending."""
    await promise_in(store, CHAT, 60, 600)
    later = T0 + timedelta(seconds=61)
    first, second = await asyncio.gather(
        store.claim_due_later(now=later, platforms=["telegram"], limit=10),
        store.claim_due_later(now=later, platforms=["telegram"], limit=10),
    )
    assert ([i.note for i in first], second) == (["n60"], [])
    assert await store.next_later_due(platforms=["telegram"]) == T0 + timedelta(seconds=600)
    assert await store.next_later_due(platforms=["qq"]) is None


async def test_an_item_is_done_with_the_batch_that_ran_it(store: SqliteStore) -> None:
    """Closing the initiative batch queues its reply and marks its item done in one go; a
    crash before that leaves it to run again at the next start, never twice after it."""
    await promise_in(store, TOPIC, 60, 120)
    due = T0 + timedelta(seconds=200)
    first, second = await store.claim_due_later(now=due, platforms=["telegram"], limit=10)
    batch = await store.open_initiative_batch(
        TOPIC, OccasionKind.REMIND, later_id=first.id, now=due
    )
    assert batch is not None
    assert batch.messages == ()
    reply = PlannedReply(Text("该交作业了"), due)
    [queued] = await store.close_batch(batch.id, BatchOutcome.ANSWERED, now=due, replies=[reply])
    crashed = await store.open_initiative_batch(
        TOPIC, OccasionKind.REMIND, later_id=second.id, now=due
    )
    assert crashed is not None
    await store.abandon_open_batches(now=due)  # the crash: its item is pending again
    dropped = await store.recover_later(now=due, stale_after_s=300)
    items = {i.note: i.state for i in await store.later_items(TOPIC, pending_only=False, limit=9)}
    assert (queued.chat, dropped, items) == (TOPIC, [], {"n60": "done", "n120": "pending"})
    assert (
        await store.open_initiative_batch(TOPIC, OccasionKind.REMIND, later_id=first.id, now=due)
        is None
    )


async def test_recovery_drops_what_went_stale(store: SqliteStore) -> None:
    """At start-up a running item is pending again; items over stale_after_s past due are
    dropped (and returned, to be logged), the others kept."""
    await promise_in(store, CHAT, 60, 3600)
    await store.claim_due_later(now=T0 + timedelta(seconds=61), platforms=["telegram"], limit=1)
    dropped = await store.recover_later(now=T0 + timedelta(seconds=3700), stale_after_s=300)
    pending = await store.later_items(CHAT, pending_only=True, limit=9)
    assert ([(i.note, i.state, i.reason) for i in dropped], [i.note for i in pending]) == (
        [("n60", "dropped", "stale")],
        ["n3600"],
    )


def later(**fields: object) -> Later:
    return Later(str(fields.pop("note", "交作业")), "remind", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (later(at="2026-11-27 09:00"), datetime(2026, 11, 27, 1, 0, tzinfo=UTC)),
        (later(at="2026-11-27T09:00:30"), datetime(2026, 11, 27, 1, 0, 30, tzinfo=UTC)),
        (later(in_seconds=90), T0 + timedelta(seconds=90)),
        (later(at="2026-11-27 9点"), "'at' '2026-11-27 9点' is not a local time YYYY-MM-DD HH:MM"),
        (later(at="2026-02-30 09:00"), "'at' '2026-02-30 09:00' is no date and time that exists"),
        (
            later(at="2026-11-26 20:59"),
            "'at' '2026-11-26 20:59' is in the past (now 2026-11-26 21:00)",
        ),
        (
            later(at="2026-12-27 09:00"),
            "'at' '2026-12-27 09:00' is beyond max_days_ahead (30 days)",
        ),
        (later(in_seconds=0), "'in_seconds' 0 is not in the future"),
        (later(in_seconds=float("nan")), "'in_seconds' nan is not in the future"),
        (
            later(in_seconds=86400 * 31),
            "'in_seconds' 2.6784e+06 is beyond max_days_ahead (30 days)",
        ),
        (later(at="2026-11-27 09:00", in_seconds=5), "needs either 'at' or 'in_seconds', not both"),
        (later(), "needs either 'at' or 'in_seconds', not neither"),
        (later(note="  ", in_seconds=5), "an empty note"),
    ],
)
def test_a_later_item_is_read_or_refused_with_why(item: Later, expected: object) -> None:
    """``at`` is local time in bot.timezone, ``in_seconds`` counts from now; every way to be
    unusable is refused, naming what is wrong."""
    try:
        found: object = due_time(item, now=T0, zone=ZONE, max_days_ahead=30)
    except Refused as exc:
        found = str(exc)
    assert found == expected


@pytest.mark.parametrize(
    ("window", "local", "inside"),
    [
        ((9 * 60, 22 * 60), "08:59", False),
        ((9 * 60, 22 * 60), "09:00", True),
        ((9 * 60, 22 * 60), "22:00", False),
        ((22 * 60, 2 * 60), "23:30", True),
        ((22 * 60, 2 * 60), "01:59", True),
        ((22 * 60, 2 * 60), "02:00", False),
        ((0, 24 * 60), "03:00", True),
    ],
)
def test_the_hours_window_may_run_past_midnight(
    window: tuple[int, int], local: str, inside: bool
) -> None:
    """A window like 22:00-02:00 runs past midnight; 00:00-24:00 is the whole day."""
    hour, minute = (int(part) for part in local.split(":"))
    moment = datetime(2026, 11, 26, hour, minute, tzinfo=ZONE)
    assert in_window(moment, window=window, zone=ZONE) == inside


def test_an_opener_falls_between_the_silence_and_a_quarter_more_inside_the_hours() -> None:
    """Draws 0 and 1 give the two ends of the span; a moment outside the hours moves into
    the first hour of the next window, as far in as its second draw says."""
    config = make_config(Path(), "http://127.0.0.1:9/v1", initiative={"openers": True}).initiative
    ten = datetime(2026, 11, 26, 10, 0, tzinfo=ZONE)
    ends = [opener_moment(Silence(ten, d, 0.0), config=config, zone=ZONE) for d in (0.0, 1.0)]
    late = opener_moment(Silence(ten.replace(hour=20), 0.0, 0.5), config=config, zone=ZONE)
    assert [f"{m:%H:%M}" for m in ends] == ["18:00", "20:00"]
    assert f"{late.astimezone(ZONE):%d %H:%M}" == "27 09:30"
    assert into_hours(ten, window=config.window, zone=ZONE, draw=0.9) == ten


@pytest.mark.looptime  # the wake-up is one loop timer: on a fast-forwarded loop it fires exactly
async def test_one_wake_up_moves_only_earlier() -> None:
    """Asking for later moments keeps the one armed; an earlier one replaces it; it fires
    once, at the earliest."""
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    wakeup = WakeUp(lambda: fired.append(loop.time()), now=lambda: T0)
    started = loop.time()
    for seconds in (0.3, 0.5, 0.05, 0.4):
        wakeup.at(T0 + timedelta(seconds=seconds))
    await asyncio.sleep(0.4)
    assert [round((at - started) * 1000) for at in fired] == [50]  # in ms of loop time


def test_the_contract_offers_later_items_only_when_on_and_its_example_reads() -> None:
    """The later line is in the contract only when later items are offered (with
    max_days_ahead in it), and its example is an item the plan reader keeps."""
    offered = contract(frozenset({ItemKind.CONTENT, ItemKind.LATER}), images=False, later_days=7)
    example = LATER_CONTRACT[LATER_CONTRACT.index("{") : LATER_CONTRACT.index("}}") + 2]
    plan = parse_replies(
        json.dumps({"replies": [json.loads(example)]}), finish_reason="stop", max_delay_s=5
    )
    assert (
        "within 7 days" in offered,
        '{"later"' in contract(frozenset({ItemKind.CONTENT}), images=False),
    ) == (
        True,
        False,
    )
    assert [type(reply.item) for reply in plan.replies] == [Later]
