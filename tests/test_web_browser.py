"""The dashboard in a real browser against a real ``pacebot run``.

Debian's headless Chromium, driven by Playwright (``executable_path``; Playwright's own
browser download is never used), talks to a ``pacebot run`` process with Telegram on
the fake Bot API and the dashboard on. Without Chromium or Playwright these tests skip
and say so loudly; the API tests of ``test_web_api.py`` still run.

With ``PACEBOT_SCREENSHOT=1`` the test also writes the README's screenshots,
``docs/dashboard.png`` and ``docs/dashboard-chat.png`` (install a CJK font first, e.g.
Debian's ``fonts-wqy-microhei``, or the Chinese text shows as boxes).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import httpx
import pytest

from bot.models import PersonNote
from bot.prompt import estimate_tokens
from fakes.bot_api import DEFAULT_USER_ID, FakeBotAPI, sticker
from fakes.harness import (
    dashboard_up,
    free_port,
    push_day_summary,
    replies_json,
    start_run,
    wait_until,
)
from fakes.images import webp_sticker
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore

if TYPE_CHECKING:
    from playwright.async_api import Browser, Dialog, Page

CHROMIUM = os.environ.get("PACEBOT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LLM_KEY = "sk-browser-test-key-0123456789"
WEB_TOKEN = "browser-test-web-token-abcdef0123456789"
ALICE = DEFAULT_USER_ID  # an admin in the config below
ALICE_KEY = f"telegram:private:{ALICE}"
CLUB = -100123  # a supergroup
CLUB_KEY = f"telegram:group:{CLUB}"
DOCS = Path(__file__).resolve().parent.parent / "docs"
SCREENSHOT = DOCS / "dashboard.png"
SCREENSHOT_CHAT = DOCS / "dashboard-chat.png"
SCREENSHOT_SETTINGS = DOCS / "dashboard-settings.png"
SCREENSHOT_PERSONAS = DOCS / "dashboard-personas.png"


def _why_no_browser() -> str | None:
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


NO_BROWSER = _why_no_browser()
if NO_BROWSER is not None:
    if os.environ.get("CI", "").casefold() == "true":  # CI must run them: never skip there
        pytest.fail(f"CI=true but the browser tests cannot run: {NO_BROWSER}", pytrace=False)
    # Loud on purpose: a local run must show that the browser tests did not run, and why.
    print(f"\n!!! BROWSER TESTS SKIPPED: {NO_BROWSER} !!!\n", file=sys.stderr)
pytestmark = pytest.mark.skipif(
    NO_BROWSER is not None, reason=f"BROWSER TESTS SKIPPED: {NO_BROWSER}"
)


@dataclass
class Running:
    """A ``pacebot run`` process, its fakes, and where its dashboard listens."""

    process: asyncio.subprocess.Process
    api: FakeBotAPI
    llm: FakeLLMServer
    url: str
    data_dir: Path


def write_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, web_port: int, *, language: str = "en"
) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"
timezone = "Asia/Shanghai"
admins = ["telegram:{ALICE}"]
language = "{language}"

[pacing]
debounce_min_s = 0.3
debounce_max_s = 0.3
max_delay_s = 1.0

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[web]
enabled = true
port = {web_port}

[stickers]
enabled = true
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
async def running(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, request: pytest.FixtureRequest
) -> AsyncIterator[Running]:
    """Start ``pacebot run`` with the dashboard on (in the language an indirect parameter
    names, English by default); stop it with SIGTERM and check the stop."""
    port = free_port()
    config = write_config(tmp_path, llm, api, port, language=getattr(request, "param", "en"))
    env = {
        "PACEBOT_LLM_API_KEY": LLM_KEY,
        "TELEGRAM_BOT_TOKEN": api.token,
        "PACEBOT_WEB_TOKEN": WEB_TOKEN,
    }
    process = await start_run(config, env)
    url = f"http://127.0.0.1:{port}"
    try:
        await api.wait_for("getUpdates", timeout=20)
        await dashboard_up(url)
        yield Running(process, api, llm, url, tmp_path / "data")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 20)
    stderr = err.decode()
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "dashboard stopped" in log
    for secret in (WEB_TOKEN, LLM_KEY, api.token):
        assert secret not in stderr
        assert secret not in log


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's headless Chromium under Playwright."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


async def log_in(page: Page, url: str) -> None:
    await page.goto(f"{url}/login")
    await page.fill("#token", WEB_TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{url}/")


class Dialogs(list[str]):
    """The messages of the dialogs a page opened (a confirm() before a pop or a forget),
    each answered as told."""

    def __init__(self, *, accept: bool) -> None:
        super().__init__()
        self.accept = accept

    async def answer(self, dialog: Dialog) -> None:
        self.append(dialog.message)
        await (dialog.accept() if self.accept else dialog.dismiss())


async def answer_dialogs(page: Page, *, accept: bool) -> Dialogs:
    """Answer every dialog ``page`` opens from now on: yes (``accept``) or no."""
    dialogs = Dialogs(accept=accept)
    page.on("dialog", dialogs.answer)
    return dialogs


async def next_system_prompt(running: Running, words: str) -> str:
    """Say ``words`` as Alice; return the system prompt of the LLM call that answers them."""
    asked = len(running.llm.requests)
    running.llm.reply_json(replies_json("嗯"))
    running.api.push_message(ALICE, words)
    await wait_until(lambda: len(running.llm.requests) > asked, within_s=10)
    return str(running.llm.requests[-1]["messages"][0]["content"])


async def chat_stored(url: str, chat: str) -> None:
    """Wait until the dashboard's API lists ``chat``: its message is stored."""
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=bearer) as client, asyncio.timeout(10):
        listed: list[str] = []
        while chat not in listed:
            await asyncio.sleep(0.05)
            listed = [c["chat"] for c in (await client.get("/api/chats")).json()["chats"]]


def bot_texts(api: FakeBotAPI) -> list[str]:
    return [str(m["text"]) for m in api.sent_messages(ALICE)]


async def ask_prompt(api: FakeBotAPI) -> str:
    """Send /prompt as the admin and return the bot's answer."""
    before = len(bot_texts(api))
    api.push_message(ALICE, "/prompt")
    await api.wait_for(lambda: len(bot_texts(api)) > before, timeout=10)
    return bot_texts(api)[-1]


async def test_a_stickers_thumbnail_is_drawn_and_it_is_banned_from_the_chat_page(
    running: Running, browser: Browser
) -> None:
    """A sticker sent in the chat shows on its page as a picture the dashboard serves
    itself (never a Telegram file URL, which holds the token); Ban bans it for good."""
    running.api.add_file("sticker-1", webp_sticker(512))
    running.api.push_message(ALICE, extra=sticker("😹", set_name="Cats"))
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    api_path = f"/api/chats/{ALICE_KEY}/stickers"
    async with httpx.AsyncClient(base_url=running.url, headers=bearer) as client:
        async with asyncio.timeout(10):
            while not (await client.get(api_path)).json().get("stickers"):  # noqa: ASYNC110 - polls the API
                await asyncio.sleep(0.05)
        page = await browser.new_page(viewport={"width": 1100, "height": 720})
        await log_in(page, running.url)
        await page.goto(f"{running.url}/chats/{ALICE_KEY}")
        picture = page.locator('li[data-sticker="s1"] img')
        src = await picture.get_attribute("src")
        drawn = await page.wait_for_function(
            "() => document.querySelector('li[data-sticker=\"s1\"] img').naturalWidth",
            timeout=10_000,
        )
        width = await drawn.json_value()
        await page.get_by_role("button", name="Ban sticker s1").click()
        await page.locator(".notice").wait_for()
        notice = await page.inner_text(".notice")
        banned_shown = await page.locator('li[data-sticker="s1"].banned').count()
        ban_buttons_left = await page.get_by_role("button", name="Ban sticker s1").count()
        listed = (await client.get(api_path)).json()["stickers"]

    assert src == f"/chats/{ALICE_KEY}/stickers/s1/thumbnail"
    assert width == 128
    assert notice.startswith("Banned the sticker")
    assert (banned_shown, ban_buttons_left) == (1, 0)
    assert [(s["id"], s["caption"], s["banned"]) for s in listed] == [("s1", "😹 Cats", True)]


async def test_a_chat_appears_live_and_pop_restore_change_the_prompt(
    running: Running, browser: Browser
) -> None:
    """Log in, see a new chat appear without reloading, pop and restore, see it in /prompt."""
    page = await browser.new_page(viewport={"width": 1100, "height": 720})
    await log_in(page, running.url)
    assert await page.locator(f'tr[data-chat="{ALICE_KEY}"]').count() == 0

    running.llm.reply_json(replies_json("你好呀！", "今天过得怎么样？"))
    running.api.push_message(ALICE, "你好")
    row = page.locator(f'tr[data-chat="{ALICE_KEY}"]')
    await row.wait_for(timeout=10_000)  # drawn by the live poll: the page was not reloaded
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 2, timeout=10)
    await page.locator(f'tr[data-chat="{ALICE_KEY}"] .phase.idle').wait_for(timeout=10_000)
    name_drawn_live = (await row.locator("a").inner_text(), await row.locator(".key").inner_text())
    if os.environ.get("PACEBOT_SCREENSHOT") == "1":
        await page.reload()  # the chart is drawn by the server: show today's bar
        await row.wait_for(timeout=10_000)
        await page.screenshot(path=str(SCREENSHOT), full_page=True)

    async with await SqliteStore.open(running.data_dir / "pacebot.sqlite3") as store:
        chat = (await store.chat_activity(limit=1))[0].chat
        await push_day_summary(store, chat, date(2026, 3, 5), "我们约好周六去西湖划船。")
    with_summary = await ask_prompt(running.api)

    await row.locator("a").click()
    await page.wait_for_url(f"{running.url}/chats/{ALICE_KEY}")
    assert "我们约好周六去西湖划船。" in await page.inner_text("#stack")
    restore = page.get_by_role("button", name="Restore the last pop")
    restorable_before_pop = await restore.is_enabled()
    asked = await answer_dialogs(page, accept=True)
    await page.click("text=Pop the newest")
    await page.locator(".notice").wait_for()
    notice_after_pop = await page.inner_text(".notice")
    stack_after_pop = await page.inner_text("#stack")
    restorable_after_pop = await restore.is_enabled()
    after_pop = await ask_prompt(running.api)
    await page.click("text=Restore the last pop")
    await page.locator(".notice").wait_for()
    notice_after_restore = await page.inner_text(".notice")
    after_restore = await ask_prompt(running.api)

    assert name_drawn_live == ("Alice", ALICE_KEY)  # the name first, the key second
    assert (restorable_before_pop, restorable_after_pop) == (False, True)
    assert "西湖" in with_summary
    assert asked == [
        "Pop the summary of 2026-03-05? The prompt no longer holds it; Restore brings it back."
    ]
    assert notice_after_pop.startswith("Popped the summary of 2026-03-05 (audited as web)")
    assert "西湖" not in stack_after_pop
    assert "西湖" not in after_pop
    assert notice_after_restore == "Restored the summary of 2026-03-05."
    assert "西湖" in after_restore
    log = (running.data_dir / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert "summary of 2026-03-05 popped by web" in log
    assert "summary of 2026-03-05 restored by web" in log


def fake_total(llm: FakeLLMServer) -> int:
    """Return every token the fake LLM reported so far (its ``usage``, summed)."""
    prompt, completion = llm.reported_tokens()
    return prompt + completion


async def test_the_overview_charts_the_days_and_keeps_todays_cost_live(
    running: Running, browser: Browser
) -> None:
    """The chart's seven bars are drawn on the server: today's carries the fake's tokens and
    stands, the others are flat; the "LLM today" card follows a new answer without a reload."""
    running.llm.reply_json(replies_json("早上好"))
    running.api.push_message(ALICE, "早")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    first = fake_total(running.llm)
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await log_in(page, running.url)
    days = page.locator("#cost-chart g.day")
    count = await days.count()
    drawn = [await days.nth(i).get_attribute("data-tokens") for i in range(count)]
    heights = [
        float(await days.nth(i).locator("rect").get_attribute("height") or "nan")
        for i in range(count)
    ]
    box = await days.nth(count - 1).locator("rect").bounding_box()
    hover = await days.nth(count - 1).locator("title").text_content()
    card = page.locator('[data-llm="total_tokens"]')
    shown_first = await card.inner_text()

    running.llm.reply_json(replies_json("今天也要加油"))
    running.api.push_message(ALICE, "嗯")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 2, timeout=10)
    second = fake_total(running.llm)
    await page.locator(f'[data-llm="total_tokens"]:text-is("{second:,}")').wait_for(
        timeout=10_000
    )  # redrawn by the live poll: the page was not reloaded
    assert drawn == ["0"] * 6 + [str(first)]
    assert heights[:6] == [0.0] * 6
    assert heights[6] == 100.0  # the tallest day fills the plot
    assert box is not None
    assert box["height"] > 20  # drawn for real, not only present in the markup
    assert hover is not None
    assert hover.endswith(f": {first:,} tokens, no prices set")
    assert (shown_first, second > first) == (f"{first:,}", True)


async def test_a_fact_forgotten_in_the_page_is_gone_and_leaves_the_prompt(
    running: Running, browser: Browser
) -> None:
    """The chat page shows facts and traces; Forget takes a fact off the page and the prompt."""
    running.llm.reply_json(replies_json("你好呀！", "周末有什么安排？"))
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 2, timeout=10)
    async with await SqliteStore.open(running.data_dir / "pacebot.sqlite3") as store:
        chat = (await store.chat_activity(limit=1))[0].chat
        await push_day_summary(store, chat, date(2026, 3, 5), "我们约好周六去西湖划船。")
        facts = await store.add_facts(
            chat,
            date(2026, 3, 5),
            [
                PersonNote(
                    str(ALICE), "Alice", ("对花生过敏", "在准备考研，12月底考试", "养了一只猫")
                )
            ],
            keep=20,
            now=datetime.now(UTC),
        )
    peanut = next(fact.id for fact in facts if fact.text == "对花生过敏")
    page = await browser.new_page(viewport={"width": 1100, "height": 720})
    await log_in(page, running.url)
    await page.goto(f"{running.url}/chats/{ALICE_KEY}")
    people_before = await page.inner_text("#people")
    traces = await page.inner_text("#traces")
    written = await page.locator("#traces .trace-lines .messages").first.inner_text()
    if os.environ.get("PACEBOT_SCREENSHOT") == "1":
        await page.screenshot(path=str(SCREENSHOT_CHAT), full_page=True)

    declined = await answer_dialogs(page, accept=False)
    await page.click(f'li[data-fact="{peanut}"] button')
    kept_when_declined = await page.locator(f'li[data-fact="{peanut}"]').count()
    page.remove_listener("dialog", declined.answer)
    confirmed = await answer_dialogs(page, accept=True)
    await page.click(f'li[data-fact="{peanut}"] button')
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    people_after = await page.inner_text("#people")
    prompt = await next_system_prompt(running, "你还记得我吗")

    assert "对花生过敏" in people_before
    assert "answered" in traces
    assert "你好呀！" in traces
    assert written.endswith("(Alice)")  # beside the message's id, who wrote it
    assert (declined, kept_when_declined) == (["Forget “对花生过敏” about Alice?"], 1)
    assert confirmed == ["Forget “对花生过敏” about Alice?"]
    assert notice.startswith("Forgot “对花生过敏” about Alice (audited as web)")
    assert "对花生过敏" not in people_after
    assert "养了一只猫" in people_after
    assert "养了一只猫" in prompt
    assert "对花生过敏" not in prompt
    log = (running.data_dir / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert f"fact {peanut} forgotten by web" in log


async def test_a_person_forgotten_in_the_page_is_asked_first_and_leaves_the_prompt(
    running: Running, browser: Browser
) -> None:
    """Forget this person asks first, keeps everything when declined, and once confirmed
    takes every fact about them off the page and the prompt, saying how many."""
    running.llm.reply_json(replies_json("你好呀！"))
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    async with await SqliteStore.open(running.data_dir / "pacebot.sqlite3") as store:
        chat = (await store.chat_activity(limit=1))[0].chat
        await store.add_facts(
            chat,
            date(2026, 3, 5),
            [PersonNote(str(ALICE), "Alice", ("对花生过敏", "养了一只猫"))],
            keep=20,
            now=datetime.now(UTC),
        )
    page = await browser.new_page(viewport={"width": 1100, "height": 720})
    await log_in(page, running.url)
    await page.goto(f"{running.url}/chats/{ALICE_KEY}")
    forget = page.locator(f'#people .person[data-user="{ALICE}"] .person-head button')

    declined = await answer_dialogs(page, accept=False)
    await forget.click()
    kept_when_declined = await page.inner_text("#people")
    page.remove_listener("dialog", declined.answer)
    confirmed = await answer_dialogs(page, accept=True)
    await forget.click()
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    people_after = await page.inner_text("#people")
    prompt = await next_system_prompt(running, "你还记得我吗")

    question = "Forget every fact about Alice here? Nothing they wrote up to today will be learned."
    assert (declined, "养了一只猫" in kept_when_declined) == ([question], True)
    assert confirmed == [question]
    assert notice.startswith("Forgot 2 fact(s) about Alice here (audited as web)")
    assert ("对花生过敏" in people_after, "养了一只猫" in people_after) == (False, False)
    assert ("对花生过敏" in prompt, "养了一只猫" in prompt) == (False, False)


async def test_on_a_phone_the_pages_fit_and_the_log_tail_shows(
    running: Running, browser: Browser
) -> None:
    """At a phone's width no page scrolls sideways, a chat with long facts and traces
    included; a pending reminder's note has a line of its own, not a sliver beside its due
    time; the log tail shows the run's lines, the long ones wrapped."""
    note = "提醒 Alice 带上周借的那本讲山的书、雨伞和充电宝"
    running.llm.reply_json(
        {
            "replies": [
                {"content": "好" * 300},
                {"later": {"in_seconds": 3600, "note": note, "kind": "remind"}},
            ]
        }
    )
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    async with await SqliteStore.open(running.data_dir / "pacebot.sqlite3") as store:
        chat = (await store.chat_activity(limit=1))[0].chat
        note = PersonNote(str(ALICE), "Alice" * 20, ("x" * 190, "喜欢" * 90))
        await store.add_facts(chat, date(2026, 3, 5), [note], keep=20, now=datetime.now(UTC))
    context = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = await context.new_page()
    await log_in(page, running.url)
    widths: dict[str, Any] = {}
    for path in ("/", "/chats", f"/chats/{ALICE_KEY}", "/logs"):
        await page.goto(f"{running.url}{path}")
        # innerWidth grows with what overflows on a phone; clientWidth is the layout's width.
        widths[path] = await page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        if path == f"/chats/{ALICE_KEY}":
            shown_note = await page.locator("li[data-later] .note").bounding_box()
            item = await page.locator("li[data-later]").bounding_box()
    log_text = await page.inner_text("pre.log")
    log_wrapped = await page.evaluate(
        "(() => { const pre = document.querySelector('pre.log');"
        " return pre.scrollWidth <= pre.clientWidth; })()"
    )
    await page.goto(f"{running.url}/login")
    await context.close()

    assert widths == {"/": True, "/chats": True, f"/chats/{ALICE_KEY}": True, "/logs": True}
    assert shown_note is not None
    assert item is not None
    assert shown_note["width"] > item["width"] * 0.9  # the whole row, not a 30 px column
    assert log_wrapped
    assert max(len(line) for line in log_text.splitlines()) > 60  # some line needed wrapping
    assert "dashboard running at" in log_text
    assert WEB_TOKEN not in log_text


async def test_a_page_opened_without_a_session_logs_in_and_comes_back(
    running: Running, browser: Browser
) -> None:
    """Opening a chat's page without a session shows the login form, and giving the token
    there lands on that page, named by the group's title; the API still answers 401 JSON."""
    running.api.push_message(CLUB, "周六去爬山吗", chat_type="supergroup", title="周末爬山群")
    await chat_stored(running.url, CLUB_KEY)
    async with httpx.AsyncClient(base_url=running.url) as anonymous:
        api = await anonymous.get("/api/status")
    page = await browser.new_page(viewport={"width": 1100, "height": 720})

    await page.goto(f"{running.url}/chats/{CLUB_KEY}")
    at_login = page.url
    await page.fill("#token", WEB_TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{running.url}/chats/{CLUB_KEY}")
    heading = await page.inner_text("h1")
    await page.goto(f"{running.url}/chats")
    listed = await page.inner_text(f'tr[data-chat="{CLUB_KEY}"]')

    assert at_login == f"{running.url}/login?next=%2Fchats%2Ftelegram%3Agroup%3A{CLUB}"
    assert (api.status_code, api.json()) == (401, {"error": "unauthorized"})
    assert heading.split() == ["周末爬山群", "idle"]  # named by its title; the key below
    assert listed.split()[:2] == ["周末爬山群", CLUB_KEY]


async def test_at_1280_px_the_header_and_the_content_start_at_one_edge(
    running: Running, browser: Browser, tmp_path: Path
) -> None:
    """On a desk-wide window the header's brand and each page's content line up on the left."""
    running.llm.reply_json(replies_json("你好呀！"))
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await log_in(page, running.url)
    edges: dict[str, tuple[float, float]] = {}
    for path in ("/", "/chats", f"/chats/{ALICE_KEY}", "/logs"):
        await page.goto(f"{running.url}{path}")
        brand = await page.locator("header .brand").bounding_box()
        content = await page.locator("main > :first-child").bounding_box()
        assert brand is not None
        assert content is not None
        edges[path] = (brand["x"], content["x"])
    await page.goto(f"{running.url}/")
    await page.screenshot(path=str(tmp_path / "overview-1280.png"))

    assert {path: brand for path, (brand, _) in edges.items()} == {
        path: content for path, (_, content) in edges.items()
    }
    assert edges["/"][1] == (1280 - 1100) / 2 + 16  # the page's column is centred


async def test_a_pending_reminder_is_cancelled_from_the_chat_page(
    running: Running, browser: Browser
) -> None:
    """A reminder Alice asked for shows on her chat's page; pressing its Cancel removes it,
    the notice says so, and the API no longer lists it."""
    running.llm.reply_json(
        {
            "replies": [
                {"content": "好，一小时后提醒你"},
                {"later": {"in_seconds": 3600, "note": "提醒喝水", "kind": "remind"}},
            ]
        }
    )
    running.api.push_message(ALICE, "一小时后提醒我喝水")
    await wait_until(lambda: "好，一小时后提醒你" in bot_texts(running.api), within_s=10)
    page = await browser.new_page()
    await log_in(page, running.url)
    await page.goto(f"{running.url}/chats/{ALICE_KEY}")
    shown = await page.inner_text('li[data-later="1"]')
    await page.click('li[data-later="1"] button')
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    left = await page.locator("li[data-later]").count()
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    async with httpx.AsyncClient(base_url=running.url, headers=bearer) as client:
        listed = (await client.get(f"/api/chats/{ALICE_KEY}/later")).json()

    assert ("提醒喝水" in shown, "remind" in shown) == (True, True)
    assert notice.startswith("Cancelled #1, 提醒喝水 (audited as web)")
    assert (left, listed["pending"]) == (0, [])


async def test_the_bot_is_switched_off_and_on_from_a_phone(
    running: Running, browser: Browser
) -> None:
    """At 390 px: the chat page's "Switch off here" asks first, then says what was done and
    offers "Switch on here", with nothing wider than the screen; what Alice writes while it
    is off is neither stored nor answered, and once it is on again she is answered."""
    running.llm.reply_json(replies_json("你好呀"))
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    context = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = await context.new_page()
    await log_in(page, running.url)
    asked = await answer_dialogs(page, accept=True)
    await page.goto(f"{running.url}/chats/{ALICE_KEY}")
    await page.click("#access-switch button")
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    offered = await page.inner_text("#access-switch button")
    fits = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    running.api.push_message(ALICE, "关掉的时候说的话")
    log = running.data_dir / "logs" / "pacebot.log"
    refused = "messages here are neither stored nor answered: the chat is switched off"
    await wait_until(lambda: refused in log.read_text(encoding="utf-8"), within_s=10)
    await page.click("#access-switch button")
    await page.locator(".notice:text-matches('Switched on')").wait_for()
    running.llm.reply_json(replies_json("我回来了"))
    running.api.push_message(ALICE, "开了吗")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 2, timeout=10)
    await context.close()
    prompt = str(running.llm.requests[-1]["messages"])

    assert asked == [
        "Switch the bot off in this chat? Its messages will be neither stored nor answered "
        "until it is switched on again.",
        "Switch the bot on in this chat again?",
    ]
    assert notice == (
        "Switched off here (audited as web): messages here are neither stored nor answered."
    )
    assert (offered, fits) == ("Switch on here", True)
    assert (bot_texts(running.api), len(running.llm.requests)) == (["你好呀", "我回来了"], 2)
    assert ("开了吗" in prompt, "关掉的时候说的话" in prompt) == (True, False)


@pytest.mark.parametrize("width", [1280, 390])
async def test_a_setting_is_saved_in_the_browser_and_a_refusal_shown_beside_it(
    running: Running, browser: Browser, width: int
) -> None:
    """On a desktop and at 390 px: a negative debounce typed on the settings page comes
    back with the reason beside that key and the value as typed; a good one is saved, the
    form sending that key alone, and the page says what applied; neither page is wider
    than the screen."""
    context = await browser.new_context(viewport={"width": width, "height": 900})
    page = await context.new_page()
    await log_in(page, running.url)
    await page.goto(f"{running.url}/settings")
    field = page.locator('[id="key-pacing.debounce_min_s"]')
    await field.fill("-1")
    await page.click(".save-bar button")
    error = page.locator('[id="error-pacing.debounce_min_s"]')
    await error.wait_for()
    refused = (await error.inner_text(), await field.input_value())
    beside = await page.locator('.setting.refused[data-key="pacing.debounce_min_s"]').count()
    fits = {"refused": await fits_the_screen(page)}
    await field.fill("0.2")
    async with page.expect_request(f"{running.url}/settings") as posted:
        await page.click(".save-bar button")
    sent = [name for name, _ in parse_qsl((await posted.value).post_data or "")]
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    fits["saved"] = await fits_the_screen(page)
    if os.environ.get("PACEBOT_SCREENSHOT") == "1" and width == 1280:
        await page.screenshot(path=str(SCREENSHOT_SETTINGS))
    await page.goto(f"{running.url}/personas")
    fits["personas"] = await fits_the_screen(page)
    if os.environ.get("PACEBOT_SCREENSHOT") == "1" and width == 1280:
        await page.screenshot(path=str(SCREENSHOT_PERSONAS))
    await context.close()
    written = (running.data_dir.parent / "config.toml").read_text(encoding="utf-8")

    assert refused == ("pacing.debounce_min_s = -1.0: must be at least 0.0", "-1")
    assert beside == 1
    assert notice == (
        "Saved pacing.debounce_min_s (audited as web). Applied from the next batch: "
        "pacing.debounce_min_s."
    )
    assert "debounce_min_s = 0.2\n" in written
    assert sent == ["csrf", "pacing.debounce_min_s"]  # the keys left as they were stay home
    assert fits == {"refused": True, "saved": True, "personas": True}


async def test_a_persona_saved_in_the_browser_answers_and_the_preview_follows_the_pick(
    running: Running, browser: Browser
) -> None:
    """A profile's persona edited and saved on the personas page starts the next answer to
    Alice; picking her chat in the preview redraws its prompt, profile and size from the
    API without leaving the page, and the address names the chat picked."""
    profile = {"name": "friends", "chats": ["telegram:private:*"], "persona": "CANARY-FRIEND"}
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    running.llm.reply_json(replies_json("你好呀！"))
    running.api.push_message(ALICE, "你好")
    running.api.push_message(CLUB, "大家好", chat_type="supergroup", title="周末爬山群")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    await chat_stored(running.url, CLUB_KEY)
    async with httpx.AsyncClient(base_url=running.url, headers=bearer) as client:
        await client.patch("/api/config", json={"set": {"profiles": [profile]}})
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await log_in(page, running.url)
    await page.goto(f"{running.url}/personas?chat={CLUB_KEY}")
    shown_first = await page.inner_text("#preview-profile")
    await page.fill('[data-profile="friends"] textarea', "CANARY-FRIEND2 你是老朋友。")
    await page.click('[data-profile="friends"] button[type=submit]')
    await page.locator(".notice").wait_for()
    await page.evaluate("window.stayed = true")
    await page.select_option("#preview-chat", ALICE_KEY)
    await page.locator("#preview-profile:text-is('friends')").wait_for()
    stayed = await page.evaluate("window.stayed === true")
    prompt = await page.inner_text("#preview-prompt")
    tokens = await page.inner_text("#preview-tokens")
    address = page.url
    system = await next_system_prompt(running, "在吗")

    assert shown_first == "the base configuration"
    assert stayed
    assert prompt.startswith("CANARY-FRIEND2 你是老朋友。")
    assert tokens == f"{estimate_tokens(prompt)} tokens"
    assert address == f"{running.url}/personas?chat=telegram%3Aprivate%3A{ALICE}"
    assert system.startswith("CANARY-FRIEND2 你是老朋友。")


async def fits_the_screen(page: Page) -> bool:
    """Tell whether nothing on the page is wider than the window."""
    fits: bool = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    return fits


@pytest.mark.parametrize("running", ["zh"], indirect=True)
async def test_with_bot_language_zh_every_page_speaks_chinese(
    running: Running, browser: Browser
) -> None:
    """bot.language = "zh": every page (settings and personas too) says <html lang="zh-CN">
    and speaks Chinese, the live overview draws its chats' states in Chinese, and a pop
    asks in Chinese."""
    running.llm.reply_json(replies_json("你好呀！"))
    running.api.push_message(ALICE, "你好")
    await running.api.wait_for(lambda: len(bot_texts(running.api)) == 1, timeout=10)
    async with await SqliteStore.open(running.data_dir / "pacebot.sqlite3") as store:
        chat = (await store.chat_activity(limit=1))[0].chat
        await push_day_summary(store, chat, date(2026, 3, 5), "我们约好周六去西湖划船。")
    page = await browser.new_page(viewport={"width": 1100, "height": 720})
    await page.goto(f"{running.url}/login")
    login = (await page.evaluate("document.documentElement.lang"), await page.inner_text("label"))
    await page.fill("#token", WEB_TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{running.url}/")
    live_state = page.locator(f'tr[data-chat="{ALICE_KEY}"] .phase')
    await page.locator("#live:text-matches('实时')").wait_for(timeout=10_000)  # polled
    drawn_live = await live_state.inner_text()
    save_buttons = {"/settings": ".save-bar button", "/personas": ".persona-card button"}
    titled: dict[str, tuple[str, str]] = {}  # the page's title and its save button
    shown: dict[str, tuple[str, str]] = {}
    for path in ("/", "/chats", f"/chats/{ALICE_KEY}", "/logs", "/settings", "/personas"):
        await page.goto(f"{running.url}{path}")
        lang = await page.evaluate("document.documentElement.lang")
        shown[path] = (lang, await page.inner_text("nav"))
        if button := save_buttons.get(path):
            titled[path] = (await page.inner_text("h1"), await page.inner_text(button))
    asked = await answer_dialogs(page, accept=False)
    await page.goto(f"{running.url}/chats/{ALICE_KEY}")
    headings = await page.locator("h2").all_inner_texts()
    await page.click("text=撤下最新的一条")

    assert login == ("zh-CN", "面板令牌")
    assert drawn_live == "空闲"
    assert {lang for lang, _ in shown.values()} == {"zh-CN"}
    assert [nav.split()[:5] for _, nav in shown.values()] == [
        ["概览", "聊天", "日志", "设置", "人设"]
    ] * 6
    assert titled == {"/settings": ("设置", "保存"), "/personas": ("人设", "保存")}
    assert [heading.split()[0] for heading in headings[:3]] == ["概况", "最近的消息", "提示词栈"]
    assert asked == ["撤下 2026-03-05 的摘要？提示词将不再包含它；可以用“恢复”找回。"]
