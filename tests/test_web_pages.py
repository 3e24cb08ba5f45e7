"""The dashboard's pages over HTTP: a trace shown as ``/trace`` shows it, the chat page's
glance, a voice reply shown as voice, the log's level filter and search, and the pages in
``bot.language``.

They run the real core with a recording platform and the dashboard on its own uvicorn
server, as ``pacebot run`` wires them (:func:`fakes.dashboard.running_web`).
"""

from __future__ import annotations

import contextlib
import html
import re
import sqlite3
from typing import Any

import httpx
import pytest

from bot.log import LOG_FILE
from bot.models import ChatKey
from fakes.dashboard import BEARER, TOKEN, Web
from fakes.harness import GROUP, replies_json

ALICE_PAGE = "/chats/test:private:42"


def first_trace(page: str) -> list[str]:
    """Return the lines of the page's newest trace as text: its summary, each line, the raw
    output's label and text."""
    shown = page.split('<details class="trace', 1)[1].split("</details>\n  </details>")[0]
    summary = re.search(r"<summary>([^<]*)</summary>", shown)
    assert summary is not None
    lines = re.findall(r'<li class="[^"]*">([^<]*)</li>', shown)
    raw = re.search(r'<details class="raw"><summary>([^<]*)</summary><pre>([^<]*)</pre>', shown)
    tail = [f"{raw[1]}\n{raw[2]}"] if raw else []
    return [html.unescape(text) for text in [summary[1], *lines, *tail]]


@pytest.mark.parametrize("web", [{"bot": {"admins": ["test:7"]}}], indirect=True)
async def test_the_page_shows_a_trace_as_trace_shows_it(web: Web) -> None:
    """A batch whose answer kept one later item, refused another and dropped a bad item:
    the chat page shows its trace line for line as /trace does, promised and refused items
    included, and the API lists them too."""
    web.bot.llm.reply_json(
        {
            "replies": [
                {"content": "好，一小时后提醒你"},
                {"later": {"in_seconds": 3600, "note": "提醒喝水", "kind": "remind"}},
                {"later": {"at": "2001-01-01 09:00", "note": "过去的事", "kind": "remind"}},
                {"content": "嗯", "mood": "happy"},
            ]
        }
    )
    await web.bot.say("一小时后提醒我喝水")
    await web.bot.settle()
    answer = await web.bot.command("/trace")
    await web.login()
    page = (await web.client.get(ALICE_PAGE)).text
    [traced] = (
        await web.client.get("/api/chats/test:private:42/traces?n=1", headers=BEARER)
    ).json()["traces"]

    shown = "\n".join(first_trace(page))
    assert shown == answer
    assert "kept for later: remind at " in shown
    assert sorted(item["kind"] for item in traced["dropped"]) == ["content", "later"]
    assert [item["note"] for item in traced["promised"]] == ["提醒喝水"]


def glance(page: str) -> dict[str, str]:
    """Return the chat page's "at a glance" rows, by their term."""
    found = page.split('<section id="glance">', 1)[1].split("</section>", 1)[0]
    pairs = re.findall(r"<dt>([^<]*)</dt><dd[^>]*>([^<]*)</dd>", found)
    return {html.unescape(term): html.unescape(value) for term, value in pairs}


GROUPS: dict[str, Any] = {
    "reply_mode": "mention",
    "override": [
        {
            "chat": "test:group:-100",
            "reply_mode": "smart",
            "talk_value": 1.0,
            "interests": ["猫", "火锅"],
            "unaddressed_calls_per_hour": 3,
        }
    ],
}


PROFILES = [{"name": "书友", "chats": ["test:private:*"], "persona": "你是书友。"}]


@pytest.mark.parametrize("web", [{"groups": GROUPS, "profiles": PROFILES}], indirect=True)
async def test_the_chat_page_leads_with_how_the_chat_is_answered(web: Web) -> None:
    """A group's page opens with its reply mode, interests, override and this hour's
    unaddressed calls, then its profile and whether the bot is on there, then its recent
    messages, newest first; a private chat's says every batch is answered and names its
    profile; a chat switched off says so."""
    await web.bot.say("你好")  # the login opens Alice's page
    await web.bot.settle()
    web.bot.llm.reply_json(replies_json("猫好可爱"))
    await web.bot.say("我家的猫", chat=GROUP, sender_id="1", addresses_bot=False)
    await web.bot.settle()
    await web.bot.say("晚上吃什么", chat=GROUP, sender_id="2", addresses_bot=False)
    await web.login()
    group = (await web.client.get("/chats/test:group:-100")).text
    private = (await web.client.get(ALICE_PAGE)).text
    await web.bot.ops.access.switch(GROUP, on=False, by="test:7")
    switched_off = (await web.client.get("/chats/test:group:-100")).text
    sections = re.findall(r'<section id="(\w+)">', group)
    messages = re.findall(r'<span class="text">([^<]*)</span>', group)

    assert glance(group) == {
        "Reply mode": "smart: addressed, or when the gate finds a reason",
        "Interests": "猫, 火锅",
        "Override": "[[groups.override]] sets this group",
        "Unaddressed calls, this hour": "1 of 3",
        "Profile": "the base configuration",
        "The bot here": "on",
    }
    assert sections[:3] == ["glance", "messages", "stack"]
    assert messages == ["晚上吃什么", "猫好可爱", "我家的猫"]
    assert glance(private) == {
        "Reply mode": "a private chat: every batch is answered",
        "Profile": "书友",
        "The bot here": "on",
    }
    assert glance(switched_off)["The bot here"] == "off: the chat is switched off (/bot off)"


def group_messages(web: Web) -> list[str]:
    """Return the texts stored in the test group, oldest first."""
    with contextlib.closing(sqlite3.connect(web.config.database_path)) as db:
        rows = db.execute(
            "SELECT text FROM messages WHERE chat_key = ? ORDER BY id", (str(GROUP),)
        ).fetchall()
    return [text for (text,) in rows]


async def test_the_chat_page_switches_the_bot_off_and_on_here(web: Web) -> None:
    """The chat page's switch turns the bot off in a group, audited as the dashboard: the
    page says so and offers to switch it on, and the group's next @ is neither stored nor
    answered; switched on again, the next one is stored and answered."""
    page = "/chats/test:group:-100"
    web.bot.llm.reply_json(replies_json("在的"))
    await web.bot.say("你好")  # the login opens Alice's page
    await web.bot.say("我家的猫", chat=GROUP, sender_id="1", addresses_bot=False)
    await web.bot.settle()
    csrf = await web.login()
    calls = len(web.bot.llm.requests)
    offered = re.findall(
        r'<button type="submit" class="quiet">([^<]*)</button>', (await web.client.get(page)).text
    )

    switched = await web.client.post(f"{page}/access", data={"csrf": csrf, "on": "false"})
    off_page = (await web.client.get(page)).text
    await web.bot.say("小满 在吗", chat=GROUP, sender_id="2", addresses_bot=True)
    await web.bot.settle()
    while_off = (group_messages(web), len(web.bot.llm.requests) - calls)
    await web.client.post(f"{page}/access", data={"csrf": csrf, "on": "true"})
    await web.bot.say("小满 回来了吗", chat=GROUP, sender_id="2", addresses_bot=True)
    await web.bot.settle()

    notice = re.search(r'<p class="notice" role="status">([^<]*)</p>', off_page)
    assert "Switch off here" in offered
    assert (switched.status_code, switched.headers["location"]) == (303, page)
    assert notice is not None
    assert html.unescape(notice[1]) == (
        "Switched off here (audited as web): messages here are neither stored nor answered."
    )
    assert glance(off_page)["The bot here"] == "off: the chat is switched off (/bot off)"
    assert "Switch on here" in off_page
    assert while_off == (["我家的猫"], 0)
    assert (group_messages(web), len(web.bot.llm.requests) - calls) == (
        ["我家的猫", "小满 回来了吗", "好的"],  # the @ and the bot's answer
        1,
    )


@pytest.mark.parametrize("web", [{"access": {"deny": ["test:group:-100"]}}], indirect=True)
async def test_a_chat_refused_by_access_rules_says_the_switch_cannot_override_them(
    web: Web,
) -> None:
    """A group that ``[access] deny`` names (it spoke before the rule was written): its page
    says the rule refuses it and that the switch cannot override it; switching it on leaves
    it refused, and the notice says why."""
    page = "/chats/test:group:-100"
    await web.bot.say("你好")  # the login opens Alice's page
    earlier = web.bot.message("我家的猫", chat=GROUP, sender_id="1", addresses_bot=False)
    await web.store.add_message(earlier, received_at=web.bot.now())
    csrf = await web.login()

    shown = (await web.client.get(page)).text
    await web.client.post(f"{page}/access", data={"csrf": csrf, "on": "true"})
    after = (await web.client.get(page)).text

    rule = re.search(r'<p class="meta" id="access-rule">([^<]*)</p>', shown)
    notice = re.search(r'<p class="notice" role="status">([^<]*)</p>', after)
    assert rule is not None
    assert html.unescape(rule[1]) == (
        "config.toml's [access] refuses this chat (the chat is denied (access.deny)); the "
        "switch cannot override it: edit [access] instead."
    )
    assert notice is not None
    assert html.unescape(notice[1]) == (
        "Switched on here (audited as web). [access] still refuses it: the chat is denied "
        "(access.deny)."
    )
    assert glance(after)["The bot here"] == "off: the chat is denied (access.deny)"


@pytest.mark.parametrize("web", [{"voice": {"speak": True}, "platform": "telegram"}], indirect=True)
async def test_a_spoken_reply_shows_as_voice(web: Web) -> None:
    """A voice item the bot spoke shows as voice among the recent messages, and as a voice
    item in the trace."""
    chat = ChatKey.from_text("telegram:private:42")
    web.bot.llm.reply_json({"replies": [{"voice": "早点睡"}]})
    await web.bot.say("晚安", chat=chat)
    await web.bot.settle()
    await web.client.post("/login", data={"token": TOKEN})
    page = (await web.client.get("/chats/telegram:private:42")).text
    spoken = re.findall(r'<li class="bot voice">.*?<span class="text">([^<]*)</span></li>', page)

    assert spoken == ["早点睡"]
    assert '<span class="kind">🔊 voice</span>' in page
    assert "reply 1: sent · [voice] 早点睡" in first_trace(page)


LOG_LINES = [
    "2026-11-28 10:00:00.000 +08:00 | DEBUG   | a:1 | apple seen",
    "2026-11-28 10:00:01.000 +08:00 | INFO    | a:2 | apple eaten",
    "2026-11-28 10:00:02.000 +08:00 | WARNING | a:3 | banana left",
    "2026-11-28 10:00:03.000 +08:00 | ERROR   | a:4 | APPLE fell",
    "Traceback (most recent call last):",
    '  File "a.py", line 4, in fall',
]


async def test_the_log_page_filters_by_level_and_words(web: Web) -> None:
    """The log page keeps the lines at a level and above, and those holding some words (any
    case); a traceback goes with its line; nothing found says so."""
    log_file = web.config.log_dir / LOG_FILE
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.write_text("\n".join(LOG_LINES) + "\n", encoding="utf-8")
    await web.client.post("/login", data={"token": TOKEN})

    async def shown(query: str) -> list[str]:
        page = (await web.client.get(f"/logs?{query}")).text
        log = page.split('<pre class="log">', 1)[1].split("</pre>", 1)[0]
        return html.unescape(log).splitlines()

    assert await shown("level=WARNING") == LOG_LINES[2:]
    assert await shown("level=info&q=apple") == [LOG_LINES[1], *LOG_LINES[3:]]
    assert await shown("q=cherry") == ["No line of these matches."]
    assert await shown("") == LOG_LINES


CHINESE: dict[str, Any] = {"bot": {"language": "zh"}}


@pytest.mark.parametrize("web", [CHINESE], indirect=True)
async def test_every_page_speaks_the_bots_language(web: Web) -> None:
    """With bot.language = "zh" every page, the login form and an error page say
    <html lang="zh-CN"> and speak Chinese, the chat page's trace included."""
    web.bot.llm.reply_json(replies_json("你好呀"))
    await web.bot.say("你好")
    await web.bot.settle()
    async with httpx.AsyncClient(base_url=str(web.client.base_url)) as anonymous:
        login = (await anonymous.get("/login")).text
    await web.login()
    pages = {
        path: (await web.client.get(path)).text
        for path in ("/", "/chats", ALICE_PAGE, "/logs", "/chats/test:private:404")
    }
    langs = {path: re.findall(r'<html lang="([^"]+)">', page) for path, page in pages.items()}

    assert langs == {path: ["zh-CN"] for path in pages}
    assert re.findall(r'<html lang="([^"]+)">', login) == ["zh-CN"]
    assert "面板令牌" in login
    assert [("概览" in page, "聊天" in page) for page in list(pages.values())[:4]] == [
        (True, True)
    ] * 4
    assert "最近的消息" in pages[ALICE_PAGE]
    assert "消息：" in "\n".join(first_trace(pages[ALICE_PAGE]))
    assert "撤下最新的一条" in pages[ALICE_PAGE]
    assert TOKEN not in "".join(pages.values())
