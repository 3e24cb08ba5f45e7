"""The nightly job with a real store and the real openai SDK: idempotent, isolated, catching up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from adapters.openai_llm import OpenAILLM
from bot.config.model import Config
from bot.config.settings import Settings
from bot.days import chat_day_bounds
from bot.memory.stack import Memory, SummaryResult
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ops.memory import MemoryOps
from fakes.harness import TEST_KEY, make_config
from fakes.openai_api import FakeLLMServer
from scheduler.jobs import NIGHTLY_JOB_ID, nightly_trigger, start_scheduler
from storage.sqlite import SqliteStore

SHANGHAI = ZoneInfo("Asia/Shanghai")
TODAY = date(2026, 11, 22)
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=SHANGHAI)  # noon on chat day 11-22
ALPHA = ChatKey("telegram", ChatKind.GROUP, "-1")
BETA = ChatKey("qq", ChatKind.GROUP, "2")


def summary_json(text: str) -> str:
    return json.dumps({"summary": text, "topics": ["t"], "key_points": [], "keywords": ["k"]})


@dataclass
class World:
    config: Config
    store: SqliteStore
    memory: Memory
    llm: FakeLLMServer
    clock: list[datetime]

    async def say(self, chat: ChatKey, text: str, at: datetime, n: int) -> None:
        message = IncomingMessage(chat, str(n), "7", "小明", text, at.astimezone(UTC))
        await self.store.add_message(message, received_at=at.astimezone(UTC))

    async def nightly(self) -> None:
        await MemoryOps(Settings(self.config), self.memory, self.store).run_nightly()


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with FakeLLMServer(default=summary_json("默认总结")) as server:
        config = make_config(tmp_path, server.base_url, memory={"catch_up_days": 3})
        clock = [NOW]
        async with (
            await SqliteStore.open(config.database_path) as store,
            OpenAILLM.from_config(config.llm, api_key=TEST_KEY) as llm,
        ):
            settings = Settings(config, persona="初始人设")
            memory = Memory(settings, store, llm, now=lambda: clock[0])
            yield World(config, store, memory, server, clock)


def on_day(day: date, hour: int = 12) -> datetime:
    return datetime.combine(day, time(hour), SHANGHAI)


async def test_each_active_chat_day_gets_one_summary(world: World) -> None:
    """Every chat with messages yesterday is summarised once; a second run changes nothing."""
    yesterday = TODAY - timedelta(days=1)
    await world.say(ALPHA, "周六去爬山", on_day(yesterday), 1)
    await world.say(BETA, "今天加班", on_day(yesterday), 2)
    await world.nightly()
    await world.nightly()
    assert len(world.llm.requests) == 2
    assert [r.day for r in await world.store.live_summaries(ALPHA)] == [yesterday]
    assert [r.day for r in await world.store.live_summaries(BETA)] == [yesterday]


async def test_at_most_summary_concurrency_calls_at_once(world: World) -> None:
    """Five chats with memory.summary_concurrency = 2: two LLM calls in flight, never more."""
    world.config = world.config.model_copy(
        update={"memory": world.config.memory.model_copy(update={"summary_concurrency": 2})}
    )
    yesterday = TODAY - timedelta(days=1)
    chats = [ChatKey("telegram", ChatKind.GROUP, f"-{n}") for n in range(5)]
    for n, chat in enumerate(chats):
        await world.say(chat, "聊天", on_day(yesterday), n)
        world.llm.hang(0.4, content=summary_json(f"第{n}个群"))
    run = asyncio.create_task(world.nightly())
    await world.llm.wait_for_requests(2)
    await asyncio.sleep(0.2)  # well before the first answer: nobody else may have asked
    in_flight = len(world.llm.requests)
    await run
    assert (in_flight, len(world.llm.requests)) == (2, 5)
    assert [len(await world.store.live_summaries(c)) for c in chats] == [1] * 5


async def test_two_runs_at_once_push_one_summary(world: World) -> None:
    """A double run racing on the same chat day still leaves exactly one live summary."""
    await world.say(ALPHA, "你好", on_day(TODAY - timedelta(days=1)), 1)
    world.llm.hang(0.1, content=summary_json("第一次"))
    world.llm.hang(0.1, content=summary_json("第二次"))
    await asyncio.gather(world.nightly(), world.nightly())
    assert len(await world.store.live_summaries(ALPHA)) == 1


async def test_one_failing_chat_does_not_stop_the_others(world: World) -> None:
    """A chat whose summary fails is retried next run; the other chats are summarised now."""
    yesterday = TODAY - timedelta(days=1)
    await world.say(ALPHA, "a", on_day(yesterday), 1)
    await world.say(BETA, "b", on_day(yesterday), 2)
    world.llm.fail(500)
    await world.nightly()
    done = [len(await world.store.live_summaries(c)) for c in (ALPHA, BETA)]
    assert sorted(done) == [0, 1]
    await world.nightly()
    assert [len(await world.store.live_summaries(c)) for c in (ALPHA, BETA)] == [1, 1]


async def test_crash_mid_summary_leaves_nothing_and_is_redone(world: World) -> None:
    """A run killed during the LLM call writes no partial rows; the next run completes the day."""
    await world.say(ALPHA, "a", on_day(TODAY - timedelta(days=1)), 1)
    world.llm.hang(5.0)
    run = asyncio.create_task(world.nightly())
    await world.llm.wait_for_requests(1)
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    assert await world.store.live_summaries(ALPHA) == []
    await world.nightly()
    assert len(await world.store.live_summaries(ALPHA)) == 1


async def test_catch_up_is_bounded_by_catch_up_days(world: World) -> None:
    """After downtime the missed days are summarised, but no more than catch_up_days back."""
    for back in (1, 2, 3, 5):
        await world.say(ALPHA, f"{back} days back", on_day(TODAY - timedelta(days=back)), back)
    await world.nightly()
    days = [r.day for r in await world.store.live_summaries(ALPHA)]
    assert days == [TODAY - timedelta(days=n) for n in (3, 2, 1)]


HOLD_S = 0.2
"""How long a summary request waits for company: ample for a second one sent alongside."""


class LaterDayFirst:
    """Hold each summary request until another arrives (or ``HOLD_S``); answer the later day first.

    A run that asks for one chat's days one after another never has company, so each
    request is answered after the hold, in the order asked. A run that asks for them
    side by side gets the later day pushed first, wrecking the stack's order.
    """

    def __init__(self, store: SqliteStore, chat: ChatKey) -> None:
        self.overlaps: list[tuple[date, list[date]]] = []  # (day asked, days then in flight)
        self._store, self._chat = store, chat
        self._in_flight: set[date] = set()
        self._company = asyncio.Event()

    async def __call__(self, body: dict[str, Any]) -> None:
        found = re.search(r"DAY-(\d{4}-\d\d-\d\d)", body["messages"][1]["content"])
        assert found is not None
        day = date.fromisoformat(found[1])
        if self._in_flight:
            self.overlaps.append((day, sorted(self._in_flight)))
            self._company.set()
        self._in_flight.add(day)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._company.wait(), HOLD_S)
        for later in [d for d in self._in_flight if d > day]:
            async with asyncio.timeout(2):
                while not await self._pushed(later):  # noqa: ASYNC110 - the run writes the store
                    await asyncio.sleep(0.005)
        self._in_flight.discard(day)

    async def _pushed(self, day: date) -> bool:
        return await self._store.has_summary(self._chat, day, include_popped=True)


async def test_a_chats_missed_days_are_summarised_one_by_one_oldest_first(world: World) -> None:
    """Catching up, one chat's days are asked one at a time and stacked in day order."""
    days = [TODAY - timedelta(days=back) for back in (3, 2, 1)]
    for n, day in enumerate(days):
        await world.say(ALPHA, f"DAY-{day.isoformat()}", on_day(day), n)
    held = LaterDayFirst(world.store, ALPHA)
    world.llm.before_answer = held
    await world.nightly()

    persona = (await world.memory.persona(ALPHA)).text
    stacked = [persona.index(f"[Memory of {day.isoformat()}") for day in days]
    assert held.overlaps == []
    assert [r.day for r in await world.store.live_summaries(ALPHA)] == days
    assert stacked == sorted(stacked)


async def test_today_is_not_summarised_by_the_job(world: World) -> None:
    """The unfinished current chat day waits for its boundary."""
    await world.say(ALPHA, "still today", on_day(TODAY, 9), 1)
    await world.nightly()
    assert world.llm.requests == []


async def test_a_message_at_two_in_the_morning_belongs_to_the_day_before(world: World) -> None:
    """02:00 on the 22nd is chat day 11-21 (the boundary is 04:00), and is summarised as such."""
    await world.say(ALPHA, "深夜聊天", datetime(2026, 11, 22, 2, 0, tzinfo=SHANGHAI), 1)
    await world.nightly()
    assert [r.day for r in await world.store.live_summaries(ALPHA)] == [date(2026, 11, 21)]
    assert "深夜聊天" in world.llm.requests[0]["messages"][1]["content"]


async def test_popped_day_is_not_resummarised_but_can_be_on_purpose(world: World) -> None:
    """The job leaves a popped day alone; an explicit run re-creates it."""
    yesterday = TODAY - timedelta(days=1)
    await world.say(ALPHA, "a", on_day(yesterday), 1)
    await world.nightly()
    assert await world.memory.pop(ALPHA, by="telegram:1") is not None
    await world.nightly()
    assert await world.store.live_summaries(ALPHA) == []
    assert await world.memory.summarise(ALPHA, yesterday, on_purpose=True) is SummaryResult.PUSHED
    assert len(await world.store.live_summaries(ALPHA)) == 1


async def test_summary_prompt_holds_only_that_chat_and_day(world: World) -> None:
    """The summariser sees one chat's messages of one chat day, and nothing of another chat."""
    yesterday = TODAY - timedelta(days=1)
    await world.say(ALPHA, "ALPHA-CANARY", on_day(yesterday), 1)
    await world.say(BETA, "BETA-CANARY", on_day(yesterday), 2)
    await world.say(ALPHA, "TODAY-CANARY", on_day(TODAY), 3)
    await world.nightly()
    prompts = sorted(r["messages"][1]["content"] for r in world.llm.requests)
    assert ["ALPHA-CANARY" in p for p in prompts].count(True) == 1
    assert all("TODAY-CANARY" not in p for p in prompts)
    assert not any("ALPHA-CANARY" in p and "BETA-CANARY" in p for p in prompts)


class JobEvents:
    """What the scheduler reports of the nightly job, and how many times it started."""

    def __init__(self, scheduler: AsyncIOScheduler) -> None:
        self.started = 0
        self.seen: list[int] = []
        self.changed = asyncio.Event()
        loop = asyncio.get_running_loop()
        mask = EVENT_JOB_EXECUTED | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
        scheduler.add_listener(
            lambda event: loop.call_soon_threadsafe(self._seen, event.code), mask
        )

    def _seen(self, code: int) -> None:
        self.seen.append(code)
        self.changed.set()

    async def wait_for(self, code: int) -> None:
        async with asyncio.timeout(5):
            while code not in self.seen:
                self.changed.clear()
                await self.changed.wait()


def asleep_since(tmp_path: Path, *, hours_ago: float) -> tuple[Config, datetime]:
    """Return a config whose day boundary passed ``hours_ago`` hours ago, and that moment."""
    zone = ZoneInfo("Asia/Shanghai")
    boundary = (datetime.now(zone) - timedelta(hours=hours_ago)).replace(second=0, microsecond=0)
    config = make_config(
        tmp_path, "http://127.0.0.1:9/v1", memory={"day_boundary": f"{boundary:%H:%M}"}
    )
    return config, boundary


async def test_the_clock_runs_the_cores_nightly_recipe(world: World) -> None:
    """The job APScheduler starts at the boundary is the core's recipe: yesterday's chat
    is summarised by it, as by a run by hand."""
    yesterday = TODAY - timedelta(days=1)
    await world.say(ALPHA, "周六去爬山", on_day(yesterday), 1)
    scheduler = start_scheduler(
        world.config, MemoryOps(Settings(world.config), world.memory, world.store).run_nightly
    )
    try:
        events = JobEvents(scheduler)
        scheduler.modify_job(NIGHTLY_JOB_ID, next_run_time=datetime.now(UTC))
        await events.wait_for(EVENT_JOB_EXECUTED)
    finally:
        scheduler.shutdown(wait=False)
    assert [r.day for r in await world.store.live_summaries(ALPHA)] == [yesterday]


@pytest.mark.parametrize(("hours_ago", "runs"), [(2.0, 1), (7.0, 0)])
async def test_boundaries_slept_through_collapse_into_one_run(
    tmp_path: Path, hours_ago: float, runs: int
) -> None:
    """Woken after sleeping through three day boundaries, the job runs once if the last
    one passed at most six hours ago (none of the older ones is run or counted as
    missed), and not at all if it is older: it waits for the next boundary."""
    config, last = asleep_since(tmp_path, hours_ago=hours_ago)
    started: list[datetime] = []

    async def nightly() -> None:
        started.append(datetime.now(UTC))

    scheduler = start_scheduler(config, nightly)
    try:
        events = JobEvents(scheduler)
        scheduler.modify_job(NIGHTLY_JOB_ID, next_run_time=last - timedelta(days=2))
        await events.wait_for(EVENT_JOB_EXECUTED if runs else EVENT_JOB_MISSED)
        job = scheduler.get_job(NIGHTLY_JOB_ID)
        assert job is not None
        next_run: datetime = job.next_run_time
    finally:
        scheduler.shutdown(wait=False)
    assert (len(started), events.seen.count(EVENT_JOB_MISSED)) == (runs, 1 - runs)
    assert next_run == last + timedelta(days=1)


async def test_a_run_never_overlaps_the_one_still_running(tmp_path: Path) -> None:
    """A boundary that comes while the last night's run is still going does not start a
    second run beside it; the one running finishes alone."""
    config, _ = asleep_since(tmp_path, hours_ago=1.0)
    started = 0
    release = asyncio.Event()

    async def nightly() -> None:
        nonlocal started
        started += 1
        await release.wait()

    scheduler = start_scheduler(config, nightly)
    try:
        events = JobEvents(scheduler)
        scheduler.modify_job(NIGHTLY_JOB_ID, next_run_time=datetime.now(UTC))
        async with asyncio.timeout(5):
            while not started:  # noqa: ASYNC110 - the job counts itself, nothing to await
                await asyncio.sleep(0.005)
        scheduler.modify_job(NIGHTLY_JOB_ID, next_run_time=datetime.now(UTC))
        await events.wait_for(EVENT_JOB_MAX_INSTANCES)
        release.set()
        await events.wait_for(EVENT_JOB_EXECUTED)
    finally:
        scheduler.shutdown(wait=False)
    assert (started, events.seen) == (1, [EVENT_JOB_MAX_INSTANCES, EVENT_JOB_EXECUTED])


@pytest.mark.parametrize(
    ("zone", "boundary", "after", "expected"),
    [
        ("Asia/Shanghai", "04:00", "2026-11-22T05:00", "2026-11-23T04:00"),
        # Berlin leaves summer time on 2026-10-25: 04:00 local is 03:00 UTC that day.
        ("Europe/Berlin", "04:00", "2026-10-24T12:00", "2026-10-25T04:00"),
        # New York enters summer time on 2026-03-08 at 02:00.
        ("America/New_York", "03:30", "2026-03-07T12:00", "2026-03-08T03:30"),
    ],
)
def test_cron_fires_at_the_local_day_boundary(
    tmp_path: Path, zone: str, boundary: str, after: str, expected: str
) -> None:
    """The nightly trigger fires at memory.day_boundary in bot.timezone, across DST changes."""
    config = make_config(
        tmp_path, "http://127.0.0.1:9/v1", bot={"timezone": zone}, memory={"day_boundary": boundary}
    )
    local = ZoneInfo(zone)
    when = datetime.fromisoformat(after).replace(tzinfo=local)
    due = datetime.fromisoformat(expected).replace(tzinfo=local)
    fire = nightly_trigger(config).get_next_fire_time(None, when)
    assert fire == due
    start, _ = chat_day_bounds(due.date(), zone=local, boundary=config.memory.day_boundary_time)
    assert fire.astimezone(UTC) == start


async def test_a_partial_summary_of_today_gives_way_to_the_whole_day(world: World) -> None:
    """Today summarised at noon is partial; after the day has ended the nightly run
    summarises the whole day into the same place of the stack, not partial any more."""
    ops = MemoryOps(world.config, world.memory, world.store)
    earlier = TODAY - timedelta(days=2)
    await world.say(ALPHA, "早上的话", on_day(TODAY, 9), 1)
    await world.say(ALPHA, "前天的话", on_day(earlier), 2)
    world.llm.reply(summary_json("上午的部分"))
    assert await ops.summarise(ALPHA, TODAY, by="test") is SummaryResult.PUSHED
    world.llm.reply(summary_json("前天"))
    assert await ops.summarise(ALPHA, earlier, by="test") is SummaryResult.PUSHED
    partial = (await world.store.live_summaries(ALPHA))[0]
    await world.say(ALPHA, "晚上的话", on_day(TODAY, 21), 3)

    world.clock[0] = NOW + timedelta(days=1)
    world.llm.reply(summary_json("全天"))
    await world.nightly()
    await world.nightly()

    stack = await world.store.live_summaries(ALPHA)
    assert [(r.id, r.day, r.partial, r.content.summary) for r in stack] == [
        (partial.id, TODAY, False, "全天"),
        (stack[1].id, earlier, False, "前天"),
    ]
    assert partial.partial is True
    assert partial.added_prompt.startswith(f"[Memory of {TODAY} (Sunday), until 12:00] 上午的部分")
    assert "晚上的话" in world.llm.requests[2]["messages"][1]["content"]
    assert len(world.llm.requests) == 3
    assert await world.store.search_summaries(ALPHA, "部分", limit=3) == []


async def test_a_popped_partial_summary_stays_popped(world: World) -> None:
    """A partial summary popped before the day ended is not written again by the nightly run."""
    await world.say(ALPHA, "今天的话", on_day(TODAY, 9), 1)
    assert await world.memory.summarise(ALPHA, TODAY, on_purpose=True) is SummaryResult.PUSHED
    assert await world.memory.pop(ALPHA, by="telegram:1") is not None
    world.clock[0] = NOW + timedelta(days=1)
    await world.nightly()
    assert (await world.store.live_summaries(ALPHA), len(world.llm.requests)) == ([], 1)


async def test_a_future_day_is_not_summarised(world: World) -> None:
    """Tomorrow is refused: it has not begun, and no LLM call is made."""
    await world.say(ALPHA, "今天的话", on_day(TODAY, 9), 1)
    tomorrow = TODAY + timedelta(days=1)
    result = await world.memory.summarise(ALPHA, tomorrow, on_purpose=True)
    assert (result, world.llm.requests) == (SummaryResult.FUTURE, [])
