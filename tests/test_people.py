"""People memory: facts read from the nightly summary, kept per (chat, person), forgotten."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.memory.people import (
    FACT_CHARS_MAX,
    normalise_fact,
    people_in_view,
    read_people,
    render_people,
)
from bot.memory.stack import SummaryResult
from bot.models import ChatKey, ChatKind, Fact, IncomingMessage, PersonNote, StoredMessage
from fakes.harness import GROUP, PRIVATE, Harness, harness, replies_json
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore
from tests.log_capture import captured_logs

ADMIN = {"bot": {"admins": ["test:7"]}}
OTHER_GROUP = ChatKey("test", ChatKind.GROUP, "-200")
DAY = date(2026, 11, 21)
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SPEAKERS = {"7": "小明", "8": "Alice"}
PEOPLE_TITLE = "People here (what you know about them; each fact is from this chat):"


def summary_answer(people: Any, text: str = "大家聊了考研。") -> str:
    body = {"summary": text, "topics": [], "key_points": [], "keywords": [], "people": people}
    return json.dumps(body, ensure_ascii=False)


def read(people: Any) -> tuple[PersonNote, ...]:
    return read_people(
        summary_answer(people), finish_reason="stop", speakers=SPEAKERS, chat=PRIVATE
    )


def note(user_id: str, *facts: str) -> PersonNote:
    return PersonNote(user_id, SPEAKERS.get(user_id, "?"), facts)


# -- reading the summary's people field -----------------------------------------------


def test_people_are_read_with_numeric_ids_and_their_speaker_names() -> None:
    """A numeric user_id is taken as text; the name is the one they wrote under."""
    notes = read([{"user_id": 7, "name": "Xiaoming", "facts": ["对花生过敏"]}])

    assert notes == (PersonNote("7", "小明", ("对花生过敏",)),)


def test_facts_about_someone_who_did_not_write_that_day_are_dropped() -> None:
    """Only the day's speakers in this chat get facts, whatever the model claims."""
    notes = read(
        [
            {"user_id": "999", "name": "Mallory", "facts": ["是管理员"]},
            {"user_id": "8", "facts": ["在准备考研"]},
        ]
    )

    assert notes == (PersonNote("8", "Alice", ("在准备考研",)),)


def test_a_ten_kilobyte_fact_is_refused_and_the_others_kept() -> None:
    """An overlong fact is refused whole (not cut), and the short ones beside it stay."""
    notes = read([{"user_id": "7", "facts": ["x" * 10_000, "喜欢猫"]}])

    assert notes == (PersonNote("7", "小明", ("喜欢猫",)),)
    assert read([{"user_id": "7", "facts": ["y" * FACT_CHARS_MAX]}])[0].facts == (
        "y" * FACT_CHARS_MAX,
    )


def test_malformed_people_fields_give_no_facts_and_raise_nothing() -> None:
    """A string, a number, an object without id or a missing field gives no facts."""
    assert read("小明喜欢猫") == ()
    assert read(3) == ()
    assert read([{"name": "小明", "facts": ["喜欢猫"]}, "小明", None]) == ()
    no_field = json.dumps({"summary": "平静的一天"})
    assert read_people(no_field, finish_reason="stop", speakers=SPEAKERS, chat=PRIVATE) == ()


def test_the_same_fact_twice_in_one_answer_is_read_once() -> None:
    """Whitespace, width and case do not make a fact new."""
    notes = read([{"user_id": "8", "facts": ["Likes  CATS", "likes cats", "ｌｉｋｅｓ ｃａｔｓ"]}])

    assert notes == (PersonNote("8", "Alice", ("Likes CATS",)),)
    assert [normalise_fact(" Likes\tCATS "), normalise_fact("ｌｉｋｅｓ ｃａｔｓ")] == [
        "likescats",
        "likescats",
    ]


def test_people_part_fits_its_budget_with_whole_facts_in_order() -> None:
    """Batch senders come first; facts that do not fit are left out, never cut."""
    facts = [Fact(n, PRIVATE, "7", "小明", f"事实{n}" * 5, DAY, NOW) for n in range(1, 30)]
    text = render_people([("7", "小明", facts)], budget_tokens=60)
    alice = [
        Fact(n, GROUP, "8", "Alice", t, DAY, NOW) for n, t in [(31, "在准备考研"), (32, "喜欢猫")]
    ]
    known = {"7": facts, "8": alice}
    history = [StoredMessage(GROUP, "1", "7", "小明", "早", NOW, from_bot=False)]
    batch = [StoredMessage(GROUP, "2", "8", "Alice", "我也在", NOW, from_bot=False)]
    in_view = [(uid, name, known[uid]) for uid, name in people_in_view(batch, history)]
    both = render_people(in_view, budget_tokens=60)

    assert text.startswith("People here")
    assert "- 小明 (id 7): 事实1事实1" in text
    assert "事实29" not in text
    assert text.splitlines() == [
        PEOPLE_TITLE,
        "- 小明 (id 7): 事实1事实1事实1事实1事实1; 事实2事实2事实2事实2事实2; "
        "事实3事实3事实3事实3事实3",
    ]
    assert both.splitlines() == [
        PEOPLE_TITLE,
        "- Alice (id 8): 在准备考研; 喜欢猫",
        "- 小明 (id 7): 事实1事实1事实1事实1事实1",
    ]
    assert render_people([("7", "小明", facts)], budget_tokens=5) == ""


# -- the store --------------------------------------------------------------------------


async def test_facts_are_kept_once_and_per_chat(store: SqliteStore) -> None:
    """A duplicate is skipped; the same person in another chat has their own facts."""
    first = await store.add_facts(PRIVATE, DAY, [note("7", "喜欢猫")], keep=20, now=NOW)
    again = await store.add_facts(PRIVATE, DAY, [note("7", "喜欢  猫")], keep=20, now=NOW)
    await store.add_facts(GROUP, DAY, [note("7", "CANARY-GROUP 在群里说要搬家")], keep=20, now=NOW)

    private = await store.live_facts(PRIVATE, ["7"])
    group = await store.live_facts(GROUP, ["7"])
    assert [f.text for f in first] == ["喜欢猫"]
    assert again == []
    assert [f.text for f in private["7"]] == ["喜欢猫"]
    assert [f.text for f in group["7"]] == ["CANARY-GROUP 在群里说要搬家"]


async def test_the_oldest_facts_give_way_and_stay_audited(
    store: SqliteStore, db_path: Path
) -> None:
    """Past facts_per_person the oldest are soft-deleted by the nightly job, not lost."""
    for n in range(4):
        await store.add_facts(PRIVATE, DAY, [note("7", f"fact {n}")], keep=3, now=NOW)

    live = await store.live_facts(PRIVATE, ["7"])
    assert [f.text for f in live["7"]] == ["fact 3", "fact 2", "fact 1"]
    with closing(sqlite3.connect(db_path)) as db:
        kept = db.execute(
            "SELECT fact, is_deleted, deleted_by FROM person_facts ORDER BY id"
        ).fetchall()
        audit = db.execute("SELECT action, done_by FROM fact_audit ORDER BY id").fetchall()
    assert kept[0] == ("fact 0", 1, "nightly")
    assert len(kept) == 4
    assert audit.count(("learned", "nightly")) == 4
    assert audit.count(("crowded_out", "nightly")) == 1


async def test_forgetting_is_per_chat_and_audited(store: SqliteStore, db_path: Path) -> None:
    """A fact id from another chat is unknown here; forgetting records who did it."""
    [fact] = await store.add_facts(GROUP, DAY, [note("7", "喜欢猫")], keep=20, now=NOW)
    await store.add_facts(PRIVATE, DAY, [note("7", "a"), note("8", "b")], keep=20, now=NOW)

    assert await store.forget_fact(PRIVATE, fact.id, by="test:1", now=NOW) is None
    assert await store.forget_fact(GROUP, 10**15, by="test:1", now=NOW) is None
    forgotten = await store.forget_fact(GROUP, fact.id, by="test:1", now=NOW)
    assert await store.forget_fact(GROUP, fact.id, by="test:1", now=NOW) is None
    assert await store.forget_person(PRIVATE, "7", by="test:7", now=NOW, through=DAY) == 1
    assert await store.forget_person(PRIVATE, "nobody", by="test:7", now=NOW, through=DAY) == 0

    assert forgotten is not None
    assert forgotten.text == "喜欢猫"
    assert forgotten.deleted_by == "test:1"
    assert [p.user_id for p in await store.known_people(PRIVATE)] == ["8"]
    with closing(sqlite3.connect(db_path)) as db:
        audit = db.execute(
            "SELECT action, done_by FROM fact_audit WHERE action = 'forgotten' ORDER BY id"
        ).fetchall()
        rows = db.execute("SELECT count(*) FROM person_facts").fetchone()
    assert audit == [("forgotten", "test:1"), ("forgotten", "test:7")]
    assert rows == (3,)


async def test_a_person_is_seen_in_a_chat_by_writing_being_remembered_or_forgotten(
    store: SqliteStore,
) -> None:
    """Seen in a chat: wrote there, has a fact there (live or forgotten) or was forgotten
    there; what happened in another chat does not count."""
    said = IncomingMessage(PRIVATE, "m1", "5", "Eve", "hi", NOW)
    await store.add_message(said, received_at=NOW)
    [fact] = await store.add_facts(PRIVATE, DAY, [note("7", "喜欢猫")], keep=20, now=NOW)
    await store.forget_fact(PRIVATE, fact.id, by="test:1", now=NOW)
    await store.add_facts(PRIVATE, DAY, [note("8", "在学日语")], keep=20, now=NOW)
    await store.forget_person(PRIVATE, "6", by="test:6", now=NOW, through=DAY)
    await store.add_facts(GROUP, DAY, [note("9", "喜欢狗")], keep=20, now=NOW)

    seen = {user: await store.person_seen(PRIVATE, user) for user in ("5", "6", "7", "8", "9")}

    assert seen == {"5": True, "6": True, "7": True, "8": True, "9": False}
    assert await store.person_seen(GROUP, "5") is False


async def test_a_forgotten_person_is_not_learned_again_from_days_up_to_the_request(
    store: SqliteStore,
) -> None:
    """After /forgetme on DAY, that day's (and older) summaries teach nothing about them.

    Other people of the same day, the same person in another chat, and later days still
    learn; a second request moves the line later, never earlier.
    """
    later = date(2026, 11, 22)
    await store.add_facts(PRIVATE, DAY, [note("7", "喜欢猫")], keep=20, now=NOW)
    await store.forget_person(PRIVATE, "7", by="test:7", now=NOW, through=DAY)
    await store.forget_person(PRIVATE, "8", by="test:8", now=NOW, through=later)
    await store.forget_person(PRIVATE, "8", by="test:8", now=NOW, through=DAY)

    same_day = await store.add_facts(
        PRIVATE, DAY, [note("7", "喜欢猫", "住在杭州"), note("9", "喜欢狗")], keep=20, now=NOW
    )
    older_day = await store.add_facts(
        PRIVATE, date(2026, 11, 1), [note("7", "考研")], keep=20, now=NOW
    )
    elsewhere = await store.add_facts(GROUP, DAY, [note("7", "住在杭州")], keep=20, now=NOW)
    next_day = await store.add_facts(
        PRIVATE, later, [note("7", "养了一只狗"), note("8", "在学日语")], keep=20, now=NOW
    )

    assert [(f.user_id, f.text) for f in same_day] == [("9", "喜欢狗")]
    assert older_day == []
    assert [f.text for f in elsewhere] == ["住在杭州"]
    assert [(f.user_id, f.text) for f in next_day] == [("7", "养了一只狗")]


async def test_a_forgotten_fact_is_not_learned_again_but_a_crowded_out_one_is(
    store: SqliteStore,
) -> None:
    """/forget of one fact holds on later days; a fact that only gave way may come back."""
    [cats, home] = await store.add_facts(
        PRIVATE, DAY, [note("7", "喜欢猫", "住在杭州")], keep=20, now=NOW
    )
    await store.forget_fact(PRIVATE, home.id, by="test:1", now=NOW)
    await store.add_facts(PRIVATE, DAY, [note("7", "养了一只狗")], keep=1, now=NOW)

    later = date(2026, 11, 23)
    again = await store.add_facts(
        PRIVATE, later, [note("7", " 住在 杭州 ", "喜欢猫")], keep=20, now=NOW
    )

    assert cats.text == "喜欢猫"
    assert [f.text for f in again] == ["喜欢猫"]  # it was crowded out, not forgotten
    assert [f.text for f in (await store.live_facts(PRIVATE, ["7"]))["7"]] == [
        "喜欢猫",
        "养了一只狗",
    ]


# -- through the running bot ------------------------------------------------------------


async def summarise_today(bot: Harness, chat: ChatKey, people: Any) -> SummaryResult:
    memory = bot.ops.memory
    bot.llm.reply(summary_answer(people))
    return await memory.summarise(chat, memory.today(), by="test:7")


def system_prompt_with(bot: Harness, text: str) -> str:
    """Return the system prompt of the reply request whose batch holds ``text``."""
    for request in reversed(bot.llm.requests):
        if text in str(request["messages"][-1]["content"]):
            return str(request["messages"][0]["content"])
    raise AssertionError(text)


async def test_a_fact_from_the_night_reaches_the_same_chat_only(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A fact learned in one group shows in that group's next prompt, never in another chat."""
    llm.reply_json(replies_json("好"))
    async with harness(tmp_path, llm, groups={"reply_mode": "always"}) as bot:
        await bot.say("我对花生过敏", chat=GROUP, sender_id="7")
        await bot.say("我也在", chat=OTHER_GROUP, sender_id="7")
        await bot.settle()
        pushed = await summarise_today(
            bot, GROUP, [{"user_id": "7", "facts": ["CANARY-PEANUT 对花生过敏"]}]
        )
        summary_request = str(llm.requests[-1]["messages"][-1]["content"])
        await bot.say("午饭吃什么", chat=GROUP, sender_id="7")
        await bot.say("晚饭吃什么", chat=OTHER_GROUP, sender_id="7")
        await bot.settle()
        group_prompt = system_prompt_with(bot, ": 午饭吃什么")
        other_prompt = system_prompt_with(bot, ": 晚饭吃什么")

    assert pushed is SummaryResult.PUSHED
    assert "小明 (id 7): 我对花生过敏" in summary_request
    assert "- 小明 (id 7): CANARY-PEANUT 对花生过敏" in group_prompt
    assert "CANARY-PEANUT" not in other_prompt


def test_people_in_view_puts_batch_senders_first() -> None:
    """The batch's senders lead, then the history's, newest first; the bot is nobody."""

    def message(sender: str, *, from_bot: bool = False) -> StoredMessage:
        return StoredMessage(GROUP, "1", sender, f"n{sender}", "x", NOW, from_bot)

    history = [message("1"), message("2"), message("bot", from_bot=True), message("3")]
    batch = [message("2")]

    assert people_in_view(batch, history) == [("2", "n2"), ("3", "n3"), ("1", "n1")]


BAD_PEOPLE = [
    {"user_id": "7", "facts": ["x" * 10_000, "CANARY-OK 喜欢猫"]},
    {"user_id": "999", "facts": ["CANARY-GHOST 从没来过"]},
    "小明",
    {"facts": ["没有 id"]},
    {"user_id": "7", "facts": 5},
]


NOT_A_LIST = ["the summary's people field is not a list; no facts learned"]
EACH_BAD_PERSON = [
    "a fact about 7 of 10000 characters refused (at most 200)",
    "facts about '999', who did not write here that day, dropped",
    *["a malformed person in the summary dropped"] * 3,  # the bare string, no id, facts 5
]


@pytest.mark.parametrize(
    ("people", "kept", "warned"),
    [
        ({"7": "喜欢猫"}, [], NOT_A_LIST),
        ("小明喜欢猫", [], NOT_A_LIST),
        (BAD_PEOPLE, ["CANARY-OK 喜欢猫"], EACH_BAD_PERSON),
    ],
    ids=["a mapping", "a string", "every kind of bad person"],
)
async def test_a_malformed_people_field_keeps_the_summary(
    tmp_path: Path, llm: FakeLLMServer, people: Any, kept: list[str], warned: list[str]
) -> None:
    """A bad people field or bad people in it cost no summary; only well-formed facts stay.

    A 10 kB fact, a stranger, a bare string, a person without an id and facts given as a
    number are each dropped with a warning; the good fact beside them is kept.
    """
    async with harness(tmp_path, llm) as bot:
        await bot.say("我喜欢猫", sender_id="7")
        await bot.settle()
        with captured_logs() as logs:
            result = await summarise_today(bot, PRIVATE, people)
        memory = bot.ops.memory
        stack = [entry.record for entry in (await memory.prompt_stack(PRIVATE)).entries]
        facts = await memory.facts(PRIVATE, "7")
        stranger = await memory.facts(PRIVATE, "999")

    assert result is SummaryResult.PUSHED
    assert [r.content.summary for r in stack] == ["大家聊了考研。"]
    assert [f.text for f in facts] == kept
    assert stranger == []
    # One warning per bad thing, read up to the validator's own words.
    assert [line.message.split(": ")[0] for line in logs.at("WARNING")] == warned
    assert logs.tracebacks() == []


async def test_a_huge_stored_fact_never_breaks_the_people_budget(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A 10 kB fact already in the store is left out whole; the prompt's people part fits."""
    llm.reply_json(replies_json("好"))
    memory_config = {"context_budget_tokens": 2000, "people_share": 0.1}
    async with harness(tmp_path, llm, groups={"reply_mode": "always"}, memory=memory_config) as bot:
        async with await SqliteStore.open(bot.config.database_path) as store:
            notes = [
                PersonNote("7", "小明", ("CANARY-HUGE " + "长" * 10_000,)),
                PersonNote("8", "Alice", ("CANARY-SMALL 喜欢猫",)),
            ]
            await store.add_facts(GROUP, DAY, notes, keep=20, now=NOW)
        await bot.say("在吗", chat=GROUP, sender_id="7")
        await bot.say("我也在", chat=GROUP, sender_id="8", sender_name="Alice")
        await bot.settle()
        async with await SqliteStore.open(bot.config.database_path) as store:
            [shown] = await store.recent_traces(GROUP, count=1)
    prompt = system_prompt_with(bot, ": 我也在")

    assert "- Alice (id 8): CANARY-SMALL 喜欢猫" in prompt
    assert "CANARY-HUGE" not in prompt
    assert 0 < dict(shown.trace.prompt_tokens)["people"] <= 200


async def test_a_chats_fact_never_shows_in_another_chat(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A group's canary fact stays out of other chats' prompt, /facts, /people, /trace, /recall."""
    admin = {"admins": ["test:7"]}
    async with harness(tmp_path, llm, bot=admin, groups={"reply_mode": "always"}) as bot:
        for chat in (GROUP, OTHER_GROUP, PRIVATE):
            await bot.say("我对花生过敏", chat=chat, sender_id="7")
        await bot.settle()
        await summarise_today(bot, GROUP, [{"user_id": "7", "facts": ["CANARY-A 对花生过敏"]}])
        [fact] = await bot.ops.memory.facts(GROUP, "7")
        elsewhere: list[str] = []
        for chat in (OTHER_GROUP, PRIVATE):
            await bot.say("花生能吃吗", chat=chat, sender_id="7")
            await bot.settle()
            elsewhere += [
                system_prompt_with(bot, ": 花生能吃吗"),
                await bot.command("/facts 7", chat=chat),
                await bot.command("/people", chat=chat),
                await bot.command("/trace", chat=chat),
                await bot.command("/recall CANARY-A 花生过敏", chat=chat),
                await bot.command(f"/forget {fact.id}", chat=chat),
            ]
        home = await bot.command("/facts 7", chat=GROUP)

    assert [text for text in elsewhere if "CANARY-A" in text] == []
    assert elsewhere[5] == (
        f"There is no fact #{fact.id} in {OTHER_GROUP}: it was forgotten already, "
        "or never was here."
    )
    assert f"#{fact.id} · learned from " in home
    assert home.splitlines()[1].endswith("CANARY-A 对花生过敏")


async def test_tonights_summary_learns_nothing_about_someone_who_said_forgetme_today(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/forgetme in the afternoon: the night's summary of that day still reads their morning
    messages, and stores facts about the others only."""
    llm.reply_json(replies_json("好"))
    async with harness(tmp_path, llm, groups={"reply_mode": "always"}) as bot:
        await bot.say("我对花生过敏", chat=GROUP, sender_id="7")
        await bot.say("我在学日语", chat=GROUP, sender_id="8")
        await bot.settle()
        forgot = await bot.command("/forgetme", chat=GROUP, sender_id="8")
        pushed = await summarise_today(
            bot,
            GROUP,
            [
                {"user_id": "7", "facts": ["对花生过敏"]},
                {"user_id": "8", "facts": ["在学日语"]},
            ],
        )
        people = bot.ops.memory
        kept = {uid: [f.text for f in await people.facts(GROUP, uid)] for uid in ("7", "8")}

    assert forgot.startswith("Nothing is remembered about you in this chat")
    assert pushed is SummaryResult.PUSHED
    assert kept == {"7": ["对花生过敏"], "8": []}
