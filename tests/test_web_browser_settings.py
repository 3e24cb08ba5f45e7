"""The settings and personas pages in a real browser against a real ``pacebot run``
(:mod:`fakes.browser`): edit, save, a refusal beside its field, on a desk and at a
phone's 390 px; a persona saved there answers the next message, and the preview follows
the chat picked without a reload.

With ``PACEBOT_SCREENSHOT=1`` they also write the README's screenshots of the two pages,
``docs/dashboard-settings.png`` and ``docs/dashboard-personas.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

import httpx
import pytest

from fakes.browser import (
    ALICE,
    ALICE_KEY,
    DOCS,
    WEB_TOKEN,
    Running,
    browser_tests,
    fits,
    log_in,
    screenshots_wanted,
)
from fakes.harness import replies_json, wait_until

if TYPE_CHECKING:
    from playwright.async_api import Browser

SCREENSHOT_SETTINGS = DOCS / "dashboard-settings.png"
SCREENSHOT_PERSONAS = DOCS / "dashboard-personas.png"
DEBOUNCE = '.setting[data-key="pacing.debounce_min_s"]'
pytestmark = browser_tests()


@pytest.mark.parametrize(("width", "phone"), [(1100, False), (390, True)], ids=["desk", "phone"])
async def test_a_setting_is_saved_and_a_refusal_shows_beside_its_field(
    running: Running, browser: Browser, width: int, phone: bool
) -> None:
    """Typing a new quiet wait and pressing Save sends that key alone, writes it and says
    so; typing -1 shows the reason beside the field with -1 still typed and the file as
    it was; the page never scrolls sideways."""
    context = await browser.new_context(viewport={"width": width, "height": 900}, is_mobile=phone)
    page = await context.new_page()
    await log_in(page, running.url)
    await page.goto(f"{running.url}/settings")
    fits_at_first = await fits(page)
    await page.fill(f"{DEBOUNCE} input", "0.1")
    async with page.expect_request(f"{running.url}/settings") as posted:
        await page.click(".save-bar button[type=submit]")
    sent = [name for name, _ in parse_qsl((await posted.value).post_data or "")]
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    written = running.config.read_text(encoding="utf-8")

    await page.fill(f"{DEBOUNCE} input", "-1")
    await page.click(".save-bar button[type=submit]")
    await page.locator(f"{DEBOUNCE} .field-error").wait_for()
    error = await page.inner_text(f"{DEBOUNCE} .field-error")
    typed = await page.input_value(f"{DEBOUNCE} input")
    errors = await page.locator(".field-error").count()
    field = await page.locator(f"{DEBOUNCE} input").bounding_box()
    beside = await page.locator(f"{DEBOUNCE} .field-error").bounding_box()
    row = await page.locator(DEBOUNCE).bounding_box()
    fits_refused = await fits(page)
    if screenshots_wanted() and not phone:
        await page.evaluate("document.getElementById('table-pacing').scrollIntoView()")
        await page.screenshot(path=str(SCREENSHOT_SETTINGS))
    await page.goto(f"{running.url}/personas")
    fits_personas = await fits(page)
    await context.close()

    assert sent == ["csrf", "pacing.debounce_min_s"]
    assert notice == (
        "Saved pacing.debounce_min_s (audited as web). Applied now: pacing.debounce_min_s."
    )
    assert "debounce_min_s = 0.1\n" in written
    assert (error, typed, errors) == ("pacing.debounce_min_s = -1.0: must be at least 0.0", "-1", 1)
    assert running.config.read_text(encoding="utf-8") == written
    assert field is not None
    assert beside is not None
    assert row is not None
    assert field["y"] + field["height"] <= beside["y"]  # under its field,
    assert beside["y"] + beside["height"] <= row["y"] + row["height"]  # in the key's own row
    assert (fits_at_first, fits_refused, fits_personas) == (True, True, True)


async def test_a_persona_saved_in_the_browser_answers_and_the_preview_follows_the_pick(
    running: Running, browser: Browser, tmp_path: Path
) -> None:
    """The profile's persona edited and saved on the personas page starts the next answer
    to Alice; picking her chat in the preview redraws its prompt, profile and size from
    the API without leaving the page."""
    profile = {"name": "friends", "chats": ["telegram:private:*"], "persona": "CANARY-FRIEND"}
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    running.llm.reply_json(replies_json("你好呀！"))
    running.api.push_message(ALICE, "你好")
    running.api.push_message(-100123, "大家好", chat_type="supergroup", title="周末爬山群")
    await running.api.wait_for(lambda: len(running.api.sent_messages(ALICE)) == 1, timeout=10)
    async with httpx.AsyncClient(base_url=running.url, headers=bearer) as client:
        await client.patch("/api/config", json={"set": {"profiles": [profile]}})
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await log_in(page, running.url)
    await page.goto(f"{running.url}/personas?chat=telegram:group:-100123")
    shown_first = await page.inner_text("#preview-profile")
    await page.fill('[data-profile="friends"] textarea', "CANARY-FRIEND2 你是老朋友。")
    await page.click('[data-profile="friends"] button[type=submit]')
    await page.locator(".notice").wait_for()
    notice = await page.inner_text(".notice")
    await page.evaluate("window.stayed = true")
    await page.select_option("#preview-chat", ALICE_KEY)
    await page.locator("#preview-profile:text-is('friends')").wait_for()
    stayed = await page.evaluate("window.stayed === true")
    prompt = await page.inner_text("#preview-prompt")
    tokens = await page.inner_text("#preview-tokens")
    address = page.url
    if screenshots_wanted():
        await page.screenshot(path=str(SCREENSHOT_PERSONAS), full_page=True)
    asked = len(running.llm.requests)
    running.llm.reply_json(replies_json("在的"))
    running.api.push_message(ALICE, "在吗")
    await wait_until(lambda: len(running.llm.requests) > asked, within_s=10)
    system = str(running.llm.requests[-1]["messages"][0]["content"])

    assert shown_first == "the base configuration"
    assert notice.startswith("Saved the persona of friends (audited as web)")
    assert stayed
    assert prompt.startswith("CANARY-FRIEND2 你是老朋友。")
    assert tokens.startswith("~")
    assert address == f"{running.url}/personas?chat=telegram%3Aprivate%3A{ALICE}"
    assert system.startswith("CANARY-FRIEND2 你是老朋友。")
