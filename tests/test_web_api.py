"""The dashboard over plain HTTP: its JSON API, its pages, and who it lets in.

Each test runs the real core (SQLite, the ``openai`` SDK against the fake LLM, the
core) with a recording platform, and the dashboard on its own uvicorn server exactly
as ``pacebot run`` wires it; httpx talks to it over a real socket.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from adapters.checks import check
from adapters.web.auth import Gate, Sessions
from adapters.web.dashboard import LOG_TAIL_BYTES_MAX, tail
from bot.budget import format_cost
from bot.config.model import load_config
from bot.models import ChatKey, ChatKind, PersonNote
from bot.secrets import read_secrets
from fakes.dashboard import BEARER, TOKEN, Web
from fakes.harness import (
    GROUP,
    TEST_KEY,
    push_day_summary,
    replies_json,
)

ALICE = ChatKey("test", ChatKind.PRIVATE, "42")
ALICE_PATH = "/api/chats/test:private:42"
ALL_TIME = (datetime(1970, 1, 2, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
DAY = date(2026, 3, 5)


async def test_status_shows_a_waiting_chat_then_the_answered_one(web: Web) -> None:
    """A message waits (chat ``waiting``, 1 waiting); once answered the chat is idle."""
    web.bot.llm.reply_json(replies_json("你好呀"))
    await web.bot.say("你好")

    waiting = (await web.client.get("/api/status", headers=BEARER)).json()
    await web.bot.settle()
    answered = (await web.client.get("/api/status", headers=BEARER)).json()

    assert waiting["waiting_messages"] == 1
    assert [(c["chat"], c["phase"], c["message_count"]) for c in waiting["chats"]] == [
        ("test:private:42", "waiting", 1)
    ]
    assert waiting["platforms"] == [{"name": "test", "connected": None}]
    assert (answered["waiting_messages"], answered["queued_replies"]) == (0, 0)
    assert answered["llm_errors_last_hour"] == 0
    assert [(c["chat"], c["phase"], c["message_count"]) for c in answered["chats"]] == [
        ("test:private:42", "idle", 2)
    ]


@pytest.mark.parametrize(
    "web",
    [{"pacing": {"max_delay_s": 30.0}, "bot": {"admins": ["test:7"]}}],
    indirect=True,
)
async def test_status_command_and_api_agree_while_a_batch_waits(web: Web) -> None:
    """With one reply queued and two group messages waiting, ``/status`` in the group and
    ``GET /api/status`` give the same waiting, queued and error figures."""
    web.bot.llm.reply_json(replies_json("第一句", "第二句", delay=30.0))
    await web.bot.say("小满在吗？", chat=GROUP, sender_id="1", addresses_bot=True)
    answering = asyncio.create_task(web.bot.inbox.drain())  # answered now, not in 30 s
    await web.bot.platform.wait_for_sends(1)  # the second reply waits 30 s in the outbox
    async with asyncio.timeout(5):  # the platform has it; the outbox marks it sent just after
        while not await web.bot.ops.status.sent_today(GROUP):  # noqa: ASYNC110 - the store
            await asyncio.sleep(0.005)
    answering.cancel()
    await web.bot.say("今天好热", chat=GROUP, sender_id="2")
    await web.bot.say("是啊", chat=GROUP, sender_id="3")

    answer = await web.bot.command("/status", chat=GROUP)
    shown = (await web.client.get("/api/status", headers=BEARER)).json()

    figures = dict(line.split(": ", 1) for line in answer.splitlines() if line.count(": ") == 1)
    in_chat = (
        figures["waiting messages"],
        figures["queued replies"],
        figures["LLM errors in the last hour"],
    )
    on_api = (shown["waiting_messages"], shown["queued_replies"], shown["llm_errors_last_hour"])
    assert (in_chat, on_api) == (("2", "1", "0"), (2, 1, 0))
    assert (figures["sent today"], shown["sent_today"]) == (
        "1 text(s), 0 reaction(s), 0 sticker(s), 0 voice message(s)",
        {"content": 1},
    )


PRICES = {"price_in_per_million": 0.15, "price_out_per_million": 0.6, "currency": "CNY"}


def fake_tokens(web: Web, index: int) -> tuple[int, int]:
    """Return the prompt and completion tokens the fake LLM reported for one call."""
    usage = web.bot.llm.completions[index]["usage"]
    return usage["prompt_tokens"], usage["completion_tokens"]


@pytest.mark.parametrize("web", [{"budget": PRICES, "bot": {"admins": ["test:7"]}}], indirect=True)
async def test_cost_api_status_and_the_command_give_the_fakes_usage(web: Web) -> None:
    """GET /api/cost (per day, chat and kind; each day's sum; the total), GET /api/status
    and /status all give the tokens the fake reported, at the prices, in one wording."""
    web.bot.llm.reply_json(replies_json("你好呀"))
    web.bot.llm.reply_json(replies_json("在的"))
    await web.bot.say("你好")
    await web.bot.settle()
    await web.bot.say("小满在吗", chat=GROUP, sender_id="1", addresses_bot=True)
    await web.bot.settle()
    (alice_in, alice_out), (group_in, group_out) = fake_tokens(web, 0), fake_tokens(web, 1)
    every = alice_in + alice_out + group_in + group_out
    cost = ((alice_in + group_in) * 0.15 + (alice_out + group_out) * 0.6) / 1_000_000

    report = (await web.client.get("/api/cost", params={"days": 3}, headers=BEARER)).json()
    only = (
        await web.client.get(
            "/api/cost", params={"days": 3, "chat": "test:private:42"}, headers=BEARER
        )
    ).json()
    status = (await web.client.get("/api/status", headers=BEARER)).json()
    answer = await web.bot.command("/status", chat=GROUP)

    rows = [
        (r["chat"], r["kind"], r["prompt_tokens"], r["completion_tokens"]) for r in report["rows"]
    ]
    assert sorted(rows) == sorted(
        [
            ("test:group:-100", "reply", group_in, group_out),
            ("test:private:42", "reply", alice_in, alice_out),
        ]
    )
    assert (report["total"]["total_tokens"], report["total"]["cost"]) == (every, cost)
    assert [d["total_tokens"] for d in report["days"]] == [0, 0, every]
    assert report["currency"] == "CNY"
    assert only["total"]["total_tokens"] == alice_in + alice_out
    assert status["llm_today"]["bot"]["total_tokens"] == every
    assert status["llm_today"]["bot"]["cost_text"] == report["total"]["cost_text"]
    assert f"{every:,} in all ({report['total']['cost_text']})" in answer


@pytest.mark.parametrize(
    "query", [{"days": "0"}, {"days": "367"}, {"days": "x"}, {"chat": "qq:grp:1"}]
)
async def test_a_bad_cost_query_is_a_json_400(web: Web, query: dict[str, str]) -> None:
    """``days`` outside 1..366 or a malformed chat key: 400 with a JSON error."""
    response = await web.client.get("/api/cost", params=query, headers=BEARER)
    assert (response.status_code, set(response.json())) == (400, {"error"})


async def test_the_overview_draws_the_last_seven_days(web: Web) -> None:
    """The overview's inline SVG has a bar for each of the last seven chat days; today's
    carries the tokens the fake reported, the other days none."""
    web.bot.llm.reply_json(replies_json("你好呀"))
    await web.bot.say("你好")
    await web.bot.settle()
    await web.login()
    page = (await web.client.get("/")).text
    prompt, completion = fake_tokens(web, 0)
    bars = re.findall(r'<g class="day" data-day="([\d-]+)" data-tokens="(\d+)"', page)
    today = web.bot.ops.memory.today().isoformat()
    assert [int(tokens) for _, tokens in bars] == [0] * 6 + [prompt + completion]
    assert bars[-1][0] == today
    assert f"{prompt + completion:,}" in page.split('data-llm="total_tokens">')[1][:20]


async def test_chats_are_searchable(web: Web) -> None:
    """/api/chats lists every chat and finds one by part of its key or a sender's name."""
    await web.bot.say("hi", sender_name="Alice")
    bob = ChatKey("test", ChatKind.GROUP, "-7")
    await web.bot.say("hey", chat=bob, sender_name="Bob", addresses_bot=True)

    def keys(body: dict[str, list[dict[str, str]]]) -> list[str]:
        return [chat["chat"] for chat in body["chats"]]

    every = (await web.client.get("/api/chats", headers=BEARER)).json()
    by_name = (await web.client.get("/api/chats?search=alice", headers=BEARER)).json()
    by_key = (await web.client.get("/api/chats?search=group", headers=BEARER)).json()

    assert keys(every) == ["test:group:-7", "test:private:42"]
    assert (keys(by_name), keys(by_key)) == (["test:private:42"], ["test:group:-7"])


async def test_chats_are_named_by_their_group_title_or_their_chatters_name(web: Web) -> None:
    """Beside each key the status, the chat list and a chat's page show the group's newest
    title or the private chatter's newest name, before its key; a search finds a group by
    its title."""
    club = ChatKey("test", ChatKind.GROUP, "-7")
    await web.bot.say("hi", sender_name="Alice")
    await web.bot.say("hey", chat=club, sender_name="Bob", chat_title="读书会")
    await web.bot.say("新名字", chat=club, sender_name="Bob", chat_title="周末读书会")
    await web.login()

    def names(body: dict[str, list[dict[str, str]]]) -> list[tuple[str, str]]:
        return [(chat["chat"], chat["name"]) for chat in body["chats"]]

    status = (await web.client.get("/api/status", headers=BEARER)).json()
    every = (await web.client.get("/api/chats", headers=BEARER)).json()
    by_title = (await web.client.get("/api/chats?search=周末", headers=BEARER)).json()
    pages = {path: (await web.client.get(path)).text for path in ("/", "/chats")}
    club_page = (await web.client.get("/chats/test:group:-7")).text

    expected = [("test:group:-7", "周末读书会"), ("test:private:42", "Alice")]
    assert (names(status), names(every), names(by_title)) == (expected, expected, expected[:1])
    for text in pages.values():  # the title first, the key second
        assert '">周末读书会</a> <span class="key">test:group:-7</span>' in text
        assert '">Alice</a> <span class="key">test:private:42</span>' in text
    assert '<h1><span class="title">周末读书会</span>' in club_page
    assert '<p class="key">test:group:-7</p>' in club_page


async def test_pop_and_restore_change_the_prompt_and_are_audited(web: Web) -> None:
    """Pop takes the newest summary out of the prompt (deleted_by ``web``); restore puts it back."""
    await web.bot.say("hi")
    await push_day_summary(web.store, ALICE, date(2026, 3, 4), "我们聊了爬山。")
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "我们聊了火锅。")

    stack = (await web.client.get(f"{ALICE_PATH}/summaries", headers=BEARER)).json()
    popped = await web.client.post(f"{ALICE_PATH}/summaries/pop", headers=BEARER)
    prompt_after_pop = await web.bot.ops.status.system_prompt(ALICE)
    with sqlite3.connect(web.config.database_path) as db:
        audit = db.execute("SELECT summary_date, deleted_by FROM prompt_history").fetchall()
    restored = await web.client.post(f"{ALICE_PATH}/summaries/restore", headers=BEARER)
    prompt_after_restore = await web.bot.ops.status.system_prompt(ALICE)

    assert [(s["day"], s["in_prompt"]) for s in stack["summaries"]] == [
        ("2026-03-05", True),
        ("2026-03-04", True),
    ]
    assert (popped.status_code, popped.json()["popped"]["day"]) == (200, "2026-03-05")
    assert ("火锅" in prompt_after_pop, "爬山" in prompt_after_pop) == (False, True)
    assert audit == [("2026-03-04", None), ("2026-03-05", "web")]
    assert (restored.status_code, restored.json()["restored"]["day"]) == (200, "2026-03-05")
    assert "火锅" in prompt_after_restore


async def test_restore_is_offered_only_when_there_is_a_pop_to_undo(web: Web) -> None:
    """Nothing popped: the restore button is disabled and the stack says nothing is
    restorable; after a pop it is enabled, naming the day; a newer summary disables it."""
    await web.bot.say("hi")
    await push_day_summary(web.store, ALICE, date(2026, 3, 4), "我们聊了爬山。")
    csrf = await web.login()

    async def offered() -> tuple[str | None, bool]:
        stack = (await web.client.get(f"{ALICE_PATH}/summaries", headers=BEARER)).json()
        page = (await web.client.get("/chats/test:private:42")).text
        [button] = re.findall(r"<button[^>]*>Restore the last pop</button>", page)
        restorable = stack["restorable"]
        return (None if restorable is None else restorable["day"]), "disabled" not in button

    never_popped = await offered()
    await web.client.post("/chats/test:private:42/pop", data={"csrf": csrf})
    after_pop = await offered()
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "我们聊了火锅。")
    after_newer_summary = await offered()

    assert never_popped == (None, False)
    assert after_pop == ("2026-03-04", True)
    assert after_newer_summary == (None, False)


async def test_nothing_to_pop_or_restore_is_a_409(web: Web) -> None:
    """With only the persona left, pop and restore answer 409 with a JSON error."""
    await web.bot.say("hi")

    popped = await web.client.post(f"{ALICE_PATH}/summaries/pop", headers=BEARER)
    restored = await web.client.post(f"{ALICE_PATH}/summaries/restore", headers=BEARER)

    assert (popped.status_code, popped.json()) == (
        409,
        {"error": "nothing to pop: only the initial persona is left"},
    )
    assert restored.status_code == 409


async def test_pages_render_for_a_logged_in_browser(web: Web) -> None:
    """Overview, chats, one chat and the log tail render with the chat's data, escaped."""
    await web.bot.say("<script>alert(1)</script>", sender_name="Alice")
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "我们聊了火锅。")
    await web.login()

    pages = {path: await web.client.get(path) for path in ("/", "/chats?q=alice", "/logs")}
    chat = await web.client.get("/chats/test:private:42")

    assert {path: page.status_code for path, page in pages.items()} == {
        "/": 200,
        "/chats?q=alice": 200,
        "/logs": 200,
    }
    assert "test:private:42" in pages["/"].text
    assert "test:private:42" in pages["/chats?q=alice"].text
    assert "我们聊了火锅。" in chat.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in chat.text
    assert "<script>alert" not in chat.text


async def test_the_pop_form_pops_with_the_csrf_token_and_redirects(web: Web) -> None:
    """The page's pop form (cookie + CSRF field) pops and comes back saying, once, which
    summary went."""
    await web.bot.say("hi")
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "我们聊了火锅。")
    csrf = await web.login()

    response = await web.client.post("/chats/test:private:42/pop", data={"csrf": csrf})
    page = await web.client.get(response.headers["location"])
    again = await web.client.get(response.headers["location"])

    assert (response.status_code, response.headers["location"]) == (
        303,
        "/chats/test:private:42",
    )
    notice = "Popped the summary of 2026-03-05 (audited as web). Restore undoes it."
    assert (notice in page.text, notice in again.text) == (True, False)  # said once
    assert await web.store.live_summaries(ALICE) == []


# -- people and traces ----------------------------------------------------------------------


async def learn(web: Web, chat: ChatKey, *notes: PersonNote) -> dict[str, int]:
    """Store facts as the nightly summary would; return their ids by text."""
    facts = await web.store.add_facts(chat, DAY, notes, keep=20, now=datetime.now(UTC))
    return {fact.text: fact.id for fact in facts}


def system_prompt(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[0]["content"])


def forgotten_people(web: Web) -> list[tuple[str, str, str]]:
    with sqlite3.connect(web.config.database_path) as db:
        rows = db.execute(
            "SELECT chat_key, user_id, forgotten_by FROM forgotten_people ORDER BY user_id"
        ).fetchall()
    return [tuple(row) for row in rows]


def fact_audit(web: Web) -> list[tuple[int, str, str]]:
    with sqlite3.connect(web.config.database_path) as db:
        rows = db.execute("SELECT fact_id, action, done_by FROM fact_audit ORDER BY id").fetchall()
    return [tuple(row) for row in rows]


async def test_people_show_their_live_facts(web: Web) -> None:
    """/people lists each person with live facts, most facts first, each fact with its id."""
    await web.bot.say("hi")
    ids = await learn(
        web,
        ALICE,
        PersonNote("7", "小明", ("对花生过敏", "喜欢爬山")),
        PersonNote("8", "Bob", ("养猫",)),
    )
    await learn(web, GROUP, PersonNote("7", "小明", ("群里说的事",)))

    body = (await web.client.get(f"{ALICE_PATH}/people", headers=BEARER)).json()

    assert body["chat"] == "test:private:42"
    assert [(p["user_id"], p["name"], p["fact_count"]) for p in body["people"]] == [
        ("7", "小明", 2),
        ("8", "Bob", 1),
    ]
    newest = body["people"][0]["facts"][0]
    assert (newest["id"], newest["text"], newest["source_day"]) == (
        ids["喜欢爬山"],
        "喜欢爬山",
        "2026-03-05",
    )
    assert (newest["is_deleted"], newest["deleted_by"]) == (False, None)
    assert "群里说的事" not in str(body)


async def test_a_forgotten_fact_is_audited_as_web_and_leaves_the_prompt(web: Web) -> None:
    """Forget takes one fact out of /people and out of the next prompt, audited as ``web``."""
    web.bot.llm.reply_json(replies_json("好的"))
    await web.bot.say("hi")
    await web.bot.settle()
    ids = await learn(web, ALICE, PersonNote("7", "小明", ("对花生过敏", "喜欢爬山")))

    forgotten = await web.client.post(
        f"{ALICE_PATH}/facts/{ids['对花生过敏']}/forget", headers=BEARER
    )
    again = await web.client.post(f"{ALICE_PATH}/facts/{ids['对花生过敏']}/forget", headers=BEARER)
    people = (await web.client.get(f"{ALICE_PATH}/people", headers=BEARER)).json()["people"]
    web.bot.llm.reply_json(replies_json("嗯嗯"))
    await web.bot.say("还记得我吗")
    await web.bot.settle()
    prompt = system_prompt(web.bot.llm.requests[-1])

    assert forgotten.status_code == 200
    assert forgotten.json()["forgotten"]["text"] == "对花生过敏"
    assert (
        forgotten.json()["forgotten"]["is_deleted"],
        forgotten.json()["forgotten"]["deleted_by"],
    ) == (True, "web")
    assert (again.status_code, again.json()) == (
        404,
        {"error": f"no live fact {ids['对花生过敏']} in test:private:42"},
    )
    assert [f["text"] for f in people[0]["facts"]] == ["喜欢爬山"]
    assert "喜欢爬山" in prompt
    assert "对花生过敏" not in prompt
    assert (ids["对花生过敏"], "forgotten", "web") in fact_audit(web)


async def test_forgetting_a_person_forgets_all_their_facts_here_only(web: Web) -> None:
    """Forget a person: every fact about them in this chat, none elsewhere, nor another's."""
    await web.bot.say("hi")
    await web.bot.say("hey", chat=GROUP, addresses_bot=False)
    await learn(
        web,
        ALICE,
        PersonNote("7", "小明", ("对花生过敏", "喜欢爬山")),
        PersonNote("8", "Bob", ("养猫",)),
    )
    in_group = await learn(web, GROUP, PersonNote("7", "小明", ("群里说的事",)))
    group_path = "/api/chats/test:group:-100"

    forgotten = await web.client.post(f"{ALICE_PATH}/people/7/forget", headers=BEARER)
    nothing_left = await web.client.post(f"{ALICE_PATH}/people/7/forget", headers=BEARER)
    other_chats_fact = await web.client.post(
        f"{ALICE_PATH}/facts/{in_group['群里说的事']}/forget", headers=BEARER
    )
    people = (await web.client.get(f"{ALICE_PATH}/people", headers=BEARER)).json()["people"]
    group = (await web.client.get(f"{group_path}/people", headers=BEARER)).json()["people"]

    assert forgotten.json() == {"chat": "test:private:42", "user_id": "7", "forgotten": 2}
    assert (nothing_left.status_code, nothing_left.json()["forgotten"]) == (200, 0)
    assert other_chats_fact.status_code == 404
    assert [p["user_id"] for p in people] == ["8"]
    assert [f["text"] for f in group[0]["facts"]] == ["群里说的事"]
    assert [row[1:] for row in fact_audit(web) if row[1] == "forgotten"] == [
        ("forgotten", "web")
    ] * 2


async def test_forgetting_a_person_with_no_facts_is_recorded_like_forgetme(web: Web) -> None:
    """A person who wrote here but has no live fact is forgotten as ``/forgetme`` would do
    it: 200 with ``forgotten`` 0, and the forget recorded (as ``web``) all the same."""
    await web.bot.say("hi", sender_id="9", sender_name="Carol")
    forgetme = await web.bot.command("/forgetme", chat=ALICE, sender_id="8")

    response = await web.client.post(f"{ALICE_PATH}/people/9/forget", headers=BEARER)

    assert "Nothing is remembered about you" in forgetme
    assert (response.status_code, response.json()) == (
        200,
        {"chat": "test:private:42", "user_id": "9", "forgotten": 0},
    )
    assert forgotten_people(web) == [
        ("test:private:42", "8", "test:8"),
        ("test:private:42", "9", "web"),
    ]


async def test_forgetting_a_person_never_seen_here_is_404_and_records_nothing(web: Web) -> None:
    """A person who never wrote in the chat nor was remembered there (a mistyped id, one
    seen only in another chat) is 404, and no forget is recorded."""
    await web.bot.say("hi")
    await web.bot.say("hey", chat=GROUP, sender_id="12", addresses_bot=False)
    await learn(web, GROUP, PersonNote("13", "Dan", ("养狗",)))

    responses = [
        await web.client.post(f"{ALICE_PATH}/people/{user}/forget", headers=BEARER)
        for user in ("11", "12", "13")
    ]

    assert [(r.status_code, r.json()) for r in responses] == [
        (404, {"error": f"no person {user} was ever seen in test:private:42"})
        for user in ("11", "12", "13")
    ]
    assert forgotten_people(web) == []
    assert [f.text for f in (await web.store.live_facts(GROUP, ["13"]))["13"]] == ["养狗"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("facts/abc/forget", 400),
        ("facts/0/forget", 400),
        ("facts/99999999999999999999999/forget", 400),
        (f"facts/{'9' * 5000}/forget", 400),
        ("people/7'%20OR%20'1'='1/forget", 400),
        ("people/..%2F..%2Fetc/forget", 404),
    ],
)
async def test_bad_fact_and_person_ids_are_refused(web: Web, path: str, status: int) -> None:
    """A fact id no number or too large for SQLite, a person id with SQL or ``../``: refused."""
    await web.bot.say("hi")
    await learn(web, ALICE, PersonNote("7", "小明", ("喜欢爬山",)))

    response = await web.client.post(f"{ALICE_PATH}/{path}", headers=BEARER)
    live = await web.store.live_facts(ALICE, ["7"])

    assert response.status_code == status
    assert set(response.json()) == {"error"}
    assert [f.text for f in live["7"]] == ["喜欢爬山"]


async def test_forgetting_needs_the_token_and_from_a_page_the_csrf_token(web: Web) -> None:
    """No token: 401. A cookie without the CSRF token: 403. The page's form: forgotten."""
    await web.bot.say("hi")
    ids = await learn(web, ALICE, PersonNote("7", "小明", ("对花生过敏", "喜欢爬山")))
    fact = ids["对花生过敏"]
    anonymous = await web.client.post(f"{ALICE_PATH}/facts/{fact}/forget")
    csrf = await web.login()
    page = await web.client.get("/chats/test:private:42")

    no_csrf = await web.client.post(f"{ALICE_PATH}/facts/{fact}/forget")
    form_no_csrf = await web.client.post(
        f"/chats/test:private:42/facts/{fact}/forget", data={"x": "1"}
    )
    person_no_csrf = await web.client.post(f"{ALICE_PATH}/people/7/forget")
    still_live = await web.store.live_facts(ALICE, ["7"])
    form = await web.client.post(f"/chats/test:private:42/facts/{fact}/forget", data={"csrf": csrf})
    after = await web.client.get(form.headers["location"])

    assert anonymous.status_code == 401
    assert [r.status_code for r in (no_csrf, form_no_csrf, person_no_csrf)] == [403, 403, 403]
    assert len(still_live["7"]) == 2
    assert f'action="/chats/test:private:42/facts/{fact}/forget"' in page.text
    assert (form.status_code, form.headers["location"]) == (303, "/chats/test:private:42")
    assert (
        "Forgot “对花生过敏” about 小明 (audited as web). It no longer reaches the prompt."
    ) in after.text
    people = after.text.split('id="people"')[1].split("</section>")[0]
    assert "对花生过敏" not in people
    assert "喜欢爬山" in people


async def test_the_page_says_what_forgetting_a_person_did(web: Web) -> None:
    """The page's "forget this person" comes back saying whether facts went, none were
    there, or the person was never seen here."""
    await web.bot.say("hi", sender_id="9", sender_name="Carol")
    await learn(web, ALICE, PersonNote("7", "小明", ("喜欢爬山",)))
    csrf = await web.login()

    notices = []
    for user in ("7", "9", "11"):
        await web.client.post(f"/chats/test:private:42/people/{user}/forget", data={"csrf": csrf})
        page = (await web.client.get("/chats/test:private:42")).text
        notices.append(re.findall(r'<p class="notice" role="status">([^<]*)</p>', page))

    assert notices == [
        [
            "Forgot 1 fact(s) about 小明 here (audited as web); nothing they wrote up to"
            " today will be learned."
        ],
        ["Nothing was remembered about id 9 here; nothing they wrote up to today will be learned."],
        ["That person never wrote here: nothing was done."],
    ]


async def test_traces_are_newest_first_bounded_by_n_and_hold_no_secret(web: Web) -> None:
    """/traces?n=2 gives the two newest batches with calls, tier and each reply's fate."""
    for n in range(3):
        web.bot.llm.reply_json(replies_json(f"回复{n}"))
        await web.bot.say(f"消息{n}", message_id=f"m{n}")
        await web.bot.settle()

    two = await web.client.get(f"{ALICE_PATH}/traces?n=2", headers=BEARER)
    default = (await web.client.get(f"{ALICE_PATH}/traces", headers=BEARER)).json()
    newest = two.json()["traces"][0]

    assert [t["message_ids"] for t in two.json()["traces"]] == [["m2"], ["m1"]]
    assert [t["senders"] for t in two.json()["traces"]] == [{"m2": "小明"}, {"m1": "小明"}]
    assert len(default["traces"]) == 3
    assert (newest["why"], newest["tier"], newest["error"]) == ("answered", "json", None)
    assert set(newest["prompt_tokens"]) >= {"persona", "history", "batch", "contract"}
    assert newest["recall"]["how"] == "nothing"
    [call] = newest["llm_calls"]
    assert (call["kind"], call["model"], call["finish_reason"]) == ("reply", "gpt-4o-mini", "stop")
    assert call["latency_ms"] >= 0
    assert newest["replies"] == [{"seq": 0, "state": "sent", "content": "回复2", "kind": "content"}]
    assert (newest["dropped"], newest["heard"]) == ([], [])
    assert "回复2" in newest["raw_output"]
    assert TEST_KEY not in two.text
    assert web.bot.llm.base_url not in two.text


async def test_a_failed_batch_shows_its_error_in_the_api_and_the_page(web: Web) -> None:
    """A failed call's trace says ``failed`` with the error, in JSON and on the page."""
    web.bot.llm.fail(500)
    await web.bot.say("在吗")
    await web.bot.settle()
    await web.login()

    [failed] = (await web.client.get(f"{ALICE_PATH}/traces", headers=BEARER)).json()["traces"]
    page = (await web.client.get("/chats/test:private:42")).text

    assert (failed["why"], failed["replies"]) == ("failed", [])
    assert "HTTP 500" in failed["error"]
    assert failed["llm_calls"][0]["error"] == failed["error"]
    assert 'class="trace failed"' in page
    assert "HTTP 500" in page
    assert TEST_KEY not in page


@pytest.mark.parametrize("web", [{"llm": {"memory_tool": True}}], indirect=True)
async def test_a_memory_search_shows_in_the_trace_json_and_page(web: Web) -> None:
    """The memory tool's search is a step of the trace after the call that asked for it,
    with its outcome, duration and result size."""
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "大家去了海底捞火锅店。")
    web.bot.llm.call_tool("search_memory", {"query": "火锅店"})
    web.bot.llm.reply_json(replies_json("记得，是海底捞"))
    await web.bot.say("上次那家火锅店叫什么", message_id="m1")
    await web.bot.settle()
    await web.login()

    [trace] = (await web.client.get(f"{ALICE_PATH}/traces", headers=BEARER)).json()["traces"]
    page = (await web.client.get("/chats/test:private:42")).text

    assert [call["kind"] for call in trace["llm_calls"]] == ["reply", "reply+memory"]
    [step] = trace["tool_steps"]
    assert (step["name"], step["after_call"]) == ("search_memory", 0)
    assert "海底捞" in step["result"]
    assert (step["outcome"], step["result_chars"]) == ("ok", len(step["result"]))
    assert f"ms, {step['result_chars']} chars</li>" in page
    first_call, tool, second_call = (
        page.index('<li class="call">- reply · gpt-4o-mini'),
        page.index('<li class="tool">- tool search_memory'),
        page.index('<li class="call">- reply+memory · gpt-4o-mini'),
    )
    assert first_call < tool < second_call


@pytest.mark.parametrize("n", ["0", "-1", "abc", "201", "9" * 5000, "1.5"])
async def test_a_bad_n_for_traces_is_a_json_400(web: Web, n: str) -> None:
    """``n`` outside 1..200 or not a whole number: 400 with a JSON error, no crash."""
    await web.bot.say("hi")

    response = await web.client.get(f"{ALICE_PATH}/traces", params={"n": n}, headers=BEARER)

    assert response.status_code == 400
    assert set(response.json()) == {"error"}


async def test_the_chat_page_shows_people_and_traces_escaped(web: Web) -> None:
    """The chat page lists facts with a forget button and the traces of its batches, each
    message id with the name it was written under."""
    web.bot.llm.reply_json(replies_json("<b>好的</b>"))
    await web.bot.say("hi", message_id="m1", sender_name="<i>小明</i>")
    await web.bot.settle()
    await learn(web, ALICE, PersonNote("7", "小明", ("<img src=x onerror=alert(1)>",)))
    await web.login()

    page = (await web.client.get("/chats/test:private:42")).text

    assert 'id="people"' in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img src=x" not in page
    assert 'id="traces"' in page
    assert "answered" in page
    assert "reply · gpt-4o-mini" in page
    assert "&lt;b&gt;好的&lt;/b&gt;" in page
    assert '<li class="messages">messages: m1 (&lt;i&gt;小明&lt;/i&gt;)</li>' in page
    assert TEST_KEY not in page


@pytest.mark.parametrize(
    "web", [{"groups": {"reply_mode": "smart", "talk_value": 1.0}, "budget": PRICES}], indirect=True
)
async def test_the_chat_page_shows_the_gate_and_the_cost_of_each_batch(web: Web) -> None:
    """A group's page says why a batch stayed out, and what an answered one cost: the
    fake's tokens at the prices."""
    web.bot.llm.reply_json(replies_json("你好"))
    web.bot.llm.reply_json(replies_json("知道"))
    await web.bot.say("你好")  # the login opens Alice's page
    await web.bot.settle()
    await web.bot.say("今天好热", chat=GROUP, sender_id="1", addresses_bot=False)
    await web.bot.settle()
    await web.bot.say("有人知道吗？", chat=GROUP, sender_id="2", addresses_bot=False)
    await web.bot.settle()
    await web.login()
    page = (await web.client.get("/chats/test:group:-100")).text
    prompt, completion = fake_tokens(web, 1)
    cost = (prompt * 0.15 + completion * 0.6) / 1_000_000
    gates = re.findall(r'<li class="gate">gate: ([^<]*)</li>', page)
    costs = re.findall(r'<li class="cost">([^<]*)</li>', page)
    assert (len(gates), gates[1]) == (2, "no reason")
    assert gates[0].startswith("question; talk_value draw ")
    assert costs == [
        f"tokens {prompt + completion:,} (prompt {prompt:,}, completion {completion:,}),"
        f" cost {format_cost(cost, 'CNY')}"
    ]


# -- who gets in ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/api/status", 401, None),
        ("/api/chats", 401, None),
        (f"{ALICE_PATH}/summaries", 401, None),
        (f"{ALICE_PATH}/people", 401, None),
        (f"{ALICE_PATH}/traces", 401, None),
        ("/", 303, "/login"),
        ("/chats?q=alice", 303, "/login?next=%2Fchats%3Fq%3Dalice"),
        ("/chats/test:private:42", 303, "/login?next=%2Fchats%2Ftest%3Aprivate%3A42"),
        ("/logs", 303, "/login?next=%2Flogs"),
    ],
)
async def test_without_the_token_the_api_is_401_and_a_page_goes_to_the_login(
    web: Web, path: str, status: int, location: str | None
) -> None:
    """No credentials, a wrong Bearer token, or a wrong cookie: the API answers 401 JSON and
    nothing else, a page sends the browser to the login form; neither shows any chat."""
    await web.bot.say("secret words")
    anonymous = await web.client.get(path)
    wrong = await web.client.get(path, headers={"Authorization": "Bearer not-the-token"})
    forged = await web.client.get(path, headers={"Cookie": f"pacebot_session={TOKEN}"})

    answers = [(r.status_code, r.headers.get("location")) for r in (anonymous, wrong, forged)]
    assert answers == [(status, location)] * 3
    for response in (anonymous, wrong, forged):
        assert "secret words" not in response.text
        assert "test:private:42" not in response.text
    if path.startswith("/api/"):
        assert anonymous.json() == {"error": "unauthorized"}


async def test_after_the_login_the_browser_is_back_on_the_page_it_opened(web: Web) -> None:
    """The login form keeps the page asked for and goes back to it once the token is given,
    and only once: a wrong token shows the form again, still holding it."""
    await web.bot.say("hi")
    sent_away = await web.client.get("/chats/test:private:42")
    form = await web.client.get(sent_away.headers["location"])
    wrong = await web.client.post(
        "/login", data={"token": "not-the-token", "next": "/chats/test:private:42"}
    )
    right = await web.client.post("/login", data={"token": TOKEN, "next": "/chats/test:private:42"})
    page = await web.client.get(right.headers["location"])

    hidden = '<input type="hidden" name="next" value="/chats/test:private:42">'
    assert (hidden in form.text, wrong.status_code, hidden in wrong.text) == (True, 401, True)
    assert (right.status_code, right.headers["location"]) == (303, "/chats/test:private:42")
    assert (page.status_code, "Prompt stack" in page.text) == (200, True)


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/chats",
        "https://evil.example/",
        "/\\evil.example",
        "javascript:alert(1)",
        "/login",
        "/chats\r\nSet-Cookie: x=1",
        "",
    ],
)
async def test_the_login_goes_back_only_to_a_page_of_the_dashboard(web: Web, target: str) -> None:
    """A ``next`` that is not a local path (another site, a script, the login form itself,
    a header break) is never followed nor put in the form: the login goes to the overview."""
    form = await web.client.get("/login", params={"next": target})
    response = await web.client.post("/login", data={"token": TOKEN, "next": target})

    assert ('name="next"' in form.text, response.status_code) == (False, 303)
    assert response.headers["location"] == "/"


async def test_a_page_asked_with_the_token_in_its_url_is_refused_not_sent_on(web: Web) -> None:
    """A token in a page's query string gets a bare 401: it never travels to the login form."""
    response = await web.client.get("/chats", params={"token": TOKEN})

    assert (response.status_code, response.headers.get("location")) == (401, None)
    assert TOKEN not in response.text


async def test_a_token_in_the_query_string_is_refused(web: Web) -> None:
    """The token in the URL is refused, even beside a valid Bearer header."""
    plain = await web.client.get("/api/status", params={"token": TOKEN})
    other_name = await web.client.get("/api/status", params={"t": TOKEN}, headers=BEARER)
    named = await web.client.get("/api/status", params={"access_token": "x"}, headers=BEARER)

    assert [r.status_code for r in (plain, other_name, named)] == [401, 401, 401]


async def test_cookie_changes_need_the_csrf_token(web: Web) -> None:
    """With the session cookie, a POST without (or with a wrong) CSRF token is 403."""
    await web.bot.say("hi")
    await push_day_summary(web.store, ALICE, date(2026, 3, 5), "我们聊了火锅。")
    csrf = await web.login()

    missing = await web.client.post(f"{ALICE_PATH}/summaries/pop")
    wrong = await web.client.post(f"{ALICE_PATH}/summaries/pop", headers={"X-CSRF-Token": "x"})
    form_missing = await web.client.post("/chats/test:private:42/pop", data={"other": "1"})
    still_there = await web.store.live_summaries(ALICE)
    right = await web.client.post(f"{ALICE_PATH}/summaries/pop", headers={"X-CSRF-Token": csrf})

    assert [r.status_code for r in (missing, wrong, form_missing)] == [403, 403, 403]
    assert missing.json()["error"].startswith("the CSRF token is missing or wrong")
    assert [s.day for s in still_there] == [date(2026, 3, 5)]
    assert right.status_code == 200


async def test_login_sets_a_strict_http_only_session_cookie(web: Web) -> None:
    """A right token gets a random HttpOnly SameSite=Strict cookie; a wrong one a 401 form."""
    wrong = await web.client.post("/login", data={"token": "guess"})
    right = await web.client.post("/login", data={"token": TOKEN})
    cookie = right.headers["set-cookie"]
    session = web.client.cookies["pacebot_session"]
    logged_out = await web.client.post("/logout", data={"csrf": "not-it"})

    assert (wrong.status_code, "That is not the token." in wrong.text) == (401, True)
    assert right.status_code == 303
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert TOKEN not in cookie
    assert len(session) >= 32
    assert logged_out.status_code == 403


@pytest.mark.parametrize(
    ("chat", "status"),
    [
        ("test:private:..%2F..%2Fetc%2Fpasswd", 404),
        ("test:private:42'%20OR%20'1'='1", 400),
        ("test:private:1;DROP%20TABLE%20messages", 400),
        ("telegram:channel:1", 400),
        ("test:private:999", 404),
        ("test:group:-100:7", 404),
        ("test:group:-100:", 400),
        ("test:group:-100:7:8", 400),
    ],
)
async def test_bad_chat_keys_get_a_json_error_before_any_lookup(
    web: Web, chat: str, status: int
) -> None:
    """A chat key with ``../`` or SQL in it, or of no known chat, is a JSON 400 or 404."""
    await web.bot.say("hi")
    await learn(web, ALICE, PersonNote("7", "小明", ("喜欢爬山",)))

    responses = [
        await web.client.get(f"/api/chats/{chat}/{what}", headers=BEARER)
        for what in ("summaries", "people", "traces")
    ]
    responses.append(await web.client.post(f"/api/chats/{chat}/people/7/forget", headers=BEARER))
    messages_left = len(await web.store.messages_between(ALICE, *ALL_TIME, limit=10))

    assert [r.status_code for r in responses] == [status] * 4
    assert all(set(r.json()) == {"error"} for r in responses)
    assert messages_left == 1
    assert len((await web.store.live_facts(ALICE, ["7"]))["7"]) == 1


async def test_a_1_mb_body_is_refused_with_413(web: Web) -> None:
    """A 1 MB body is refused with 413, declared or streamed in chunks, token or not."""
    megabyte = b"x" * (1024 * 1024)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(megabyte), 64 * 1024):
            yield megabyte[start : start + 64 * 1024]

    declared = await web.client.post("/login", content=megabyte)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    streamed = await web.client.post("/login", content=chunks(), headers=form)

    assert (declared.status_code, declared.json()) == (
        413,
        {"error": "request body over 65536 bytes"},
    )
    assert streamed.status_code == 413


async def test_responses_carry_the_security_headers(web: Web) -> None:
    """Every answer forbids framing and inline script; API and pages are never cached."""
    api = await web.client.get("/api/status", headers=BEARER)
    page = await web.client.get("/login")
    denied = await web.client.get("/api/status")

    for response in (api, page, denied):
        assert response.headers["x-frame-options"] == "DENY"
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["cache-control"] == "no-store"
    assert "unsafe-inline" not in api.headers["content-security-policy"]


# -- pieces ----------------------------------------------------------------------------------


def test_sessions_expire_and_are_capped() -> None:
    """A session ends after its time; past the cap the oldest is closed first."""
    clock = [0.0]
    sessions = Sessions(ttl_s=10.0, clock=lambda: clock[0])
    first = sessions.open()
    others = [sessions.open() for _ in range(63)]
    found_before = sessions.find(first.id)
    newest = sessions.open()
    at_the_cap = [sessions.find(s.id) for s in (first, others[0], others[-1], newest)]
    clock[0] = 11.0

    assert found_before == first
    assert at_the_cap == [None, others[0], others[-1], newest]
    assert (len(others), len(sessions)) == (63, 64)
    assert sessions.find(newest.id) is None
    assert sessions.find(others[0].id) is None


def test_the_gate_compares_tokens_exactly() -> None:
    """Only the whole token matches: not a prefix, not an extension, not another case."""
    gate = Gate(TOKEN, Sessions())

    assert [gate.is_token(t) for t in (TOKEN, TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "")] == [
        True,
        False,
        False,
        False,
        False,
    ]


@pytest.fixture
def big_log(tmp_path: Path) -> Path:
    """A log file longer than the tail ever reads."""
    path = tmp_path / "pacebot.log"
    line = "2026-03-05 12:00:00.000 | INFO    | - | line {:06d} " + "·" * 40 + "\n"
    path.write_text("".join(line.format(n) for n in range(8000)), encoding="utf-8")
    assert path.stat().st_size > LOG_TAIL_BYTES_MAX
    return path


def test_the_log_tail_reads_only_the_end(big_log: Path, tmp_path: Path) -> None:
    """The tail gives the last lines whole, read from only the file's last 256 KiB, and
    nothing for a missing log."""
    last = tail(big_log, lines=3)
    many = tail(big_log, lines=100_000)
    line_bytes = big_log.stat().st_size // 8000  # every line has the same length
    whole_lines_in_reach = LOG_TAIL_BYTES_MAX // line_bytes

    assert [line.split()[-2] for line in last] == ["007997", "007998", "007999"]
    assert all(line.startswith("2026-03-05") for line in many)
    assert [line.split()[-2] for line in many] == [
        f"{n:06d}" for n in range(8000 - whole_lines_in_reach, 8000)
    ]
    assert tail(tmp_path / "missing.log", lines=10) == []


async def test_the_chat_page_is_reachable_only_for_known_chats(web: Web) -> None:
    """An unknown but well-formed chat is a 404 page; a known one renders."""
    await web.bot.say("hi")
    await web.login()

    unknown = await web.client.get("/chats/test:private:999")
    known = await web.client.get("/chats/test:private:42")

    assert (unknown.status_code, known.status_code) == (404, 200)


# -- configuration ---------------------------------------------------------------------------


def test_check_refuses_the_dashboard_without_a_long_enough_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pacebot check` refuses [web] enabled with no token or a short one, and passes a good one."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", TEST_KEY)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:telegram-token")
    monkeypatch.delenv("PACEBOT_WEB_TOKEN", raising=False)
    path = tmp_path / "config.toml"
    path.write_text(
        '[telegram]\nenabled = true\n[web]\nenabled = true\nhost = "0.0.0.0"\n', encoding="utf-8"
    )
    without = check(path)
    said_without = capsys.readouterr().err
    monkeypatch.setenv("PACEBOT_WEB_TOKEN", "short")
    short = check(path)
    said_short = capsys.readouterr().err
    monkeypatch.setenv("PACEBOT_WEB_TOKEN", TOKEN)
    good = check(path)
    secrets = read_secrets(load_config(path), console=False)

    assert (without, "[web] token_env: environment variable PACEBOT_WEB_TOKEN" in said_without) == (
        1,
        True,
    )
    assert (short, "use at least 16" in said_short, "short" in said_short) == (1, True, False)
    assert good == 0
    assert TOKEN in secrets.every  # so the log scrubber hides it


async def test_later_items_openers_and_quiet_over_the_api_with_cancel(web: Web) -> None:
    """GET …/later lists a chat's pending items and quiet periods; POST …/cancel cancels
    one as ``web`` (then 404), and the form on the page does the same with a notice."""
    web.bot.llm.reply_json(
        {
            "replies": [
                {"content": "好"},
                {"later": {"in_seconds": 3600, "note": "提醒交作业", "kind": "remind"}},
                {"later": {"in_seconds": 7200, "note": "问问考试", "kind": "followup"}},
            ]
        }
    )
    await web.bot.say("一小时后提醒我交作业")
    await web.bot.settle()
    await web.bot.ops.initiative.quiet(ALICE, hours=2, by="test:7")
    listed = (await web.client.get(f"{ALICE_PATH}/later", headers=BEARER)).json()
    cancelled = await web.client.post(f"{ALICE_PATH}/later/1/cancel", headers=BEARER)
    again = await web.client.post(f"{ALICE_PATH}/later/1/cancel", headers=BEARER)
    bad = await web.client.post(f"{ALICE_PATH}/later/abc/cancel", headers=BEARER)
    csrf = await web.login()
    form = await web.client.post("/chats/test:private:42/later/2/cancel", data={"csrf": csrf})
    page = await web.client.get(form.headers["location"])
    items = await web.store.later_items(ALICE, pending_only=False, limit=9)

    assert [(i["id"], i["kind"], i["note"], i["asker_id"]) for i in listed["pending"]] == [
        (1, "remind", "提醒交作业", "7"),
        (2, "followup", "问问考试", "7"),
    ]
    assert ([q["set_by"] for q in listed["quiet"]], listed["quiet_until"] is not None) == (
        ["test:7"],
        True,
    )
    assert (cancelled.status_code, cancelled.json()["cancelled"]["cancelled_by"]) == (200, "web")
    assert (again.status_code, bad.status_code, set(again.json())) == (404, 400, {"error"})
    assert (form.status_code, "Cancelled #2, 问问考试 (audited as web)" in page.text) == (303, True)
    assert [(i.state, i.cancelled_by) for i in items] == [("cancelled", "web")] * 2
