"""The dashboard's settings and personas pages over HTTP, on a running core whose
``config.toml`` they change: every key shown with no secret, a Save written with the file's
comments and used by the next answer, a refusal shown beside its key with nothing changed,
a persona edited and previewed, and the settings read only when there is no file."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from bot.config.keys import config_keys
from fakes.config_dashboard import BEARER, TOKEN, dashboard, log_in
from fakes.dashboard import Web as PlainWeb
from fakes.harness import GROUP, PRIVATE, TEST_KEY, replies_json
from fakes.openai_api import FakeLLMServer


def notice_of(page: str) -> str:
    """Return the page's notice, as text."""
    found = re.search(r'<p class="notice" role="status">([^<]*)</p>', page)
    assert found is not None, page
    return html.unescape(found[1])


def system_prompt(llm: FakeLLMServer, index: int) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


async def test_every_key_is_shown_with_its_description_and_no_secret(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The settings page has a row for every key of the config model, each with its
    description and default; a key naming a variable shows the name only, read only."""
    async with dashboard(tmp_path, llm) as web:
        await log_in(web)
        page = (await web.client.get("/settings")).text
    rows = re.findall(r'<div class="setting[^"]*" data-key="([^"]+)">', page)
    debounce = page.split('data-key="pacing.debounce_min_s"', 1)[1].split("</div>\n  \n", 1)[0]
    api_key = page.split('data-key="llm.api_key_env"', 1)[1].split("</div>\n  \n", 1)[0]

    shown = re.findall(
        r'data-key="([^"]+)">.*?<p class="description">(.*?)</p>.*?<code class="default">',
        page,
        flags=re.DOTALL,
    )
    described = {key: html.unescape(re.sub(r"<[^>]+>", "", text)) for key, text in shown}

    assert rows == [key.key for key in config_keys()]  # each once, as the model orders them
    assert described == {key.key: key.description.replace("``", "") for key in config_keys()}
    assert (
        "Shortest wait after the latest message before answering, in seconds." in debounce,
        '<code class="default">5.0</code>' in debounce,
        'name="pacing.debounce_min_s" value="0.05"' in debounce,
    ) == (True, True, True)
    assert '<code class="value" id="key-llm.api_key_env">PACEBOT_LLM_API_KEY</code>' in api_key
    assert ("<input" in api_key, TEST_KEY in page, TOKEN in page) == (False, False, False)


async def test_a_save_writes_only_what_changed_and_the_next_answer_uses_it(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Save with a new persona and a shorter debounce: the file keeps its comments, the old
    one is backed up, the page says what applied, and the next answer's prompt holds the
    new persona."""
    llm.reply_json(replies_json("好的"))
    async with dashboard(tmp_path, llm) as web:
        csrf = await log_in(web)
        saved = await web.client.post(
            "/settings",
            data={
                "csrf": csrf,
                "bot.persona": "CANARY-SETTINGS 你是阿福。",
                "pacing.debounce_min_s": "0.03",
                "pacing.debounce_max_s": "0.05",  # as it was: not written
            },
        )
        shown = (await web.client.get("/settings")).text
        await web.bot.say("在吗", chat=PRIVATE)
        await web.bot.settle()
        text = web.path.read_text(encoding="utf-8")
    backups = list((tmp_path / "data" / "config-backups").iterdir())

    assert (saved.status_code, saved.headers["location"]) == (303, "/settings")
    assert notice_of(shown) == (
        "Saved bot.persona, pacing.debounce_min_s (audited as web). Applied from the next "
        "batch: bot.persona, pacing.debounce_min_s."
    )
    assert 'persona = "CANARY-SETTINGS 你是阿福。"   # who it is' in text
    assert "debounce_min_s = 0.03  # quick, for the test" in text
    assert "debounce_max_s = 0.05\n" in text
    assert ["CANARY-OLD" in backup.read_text(encoding="utf-8") for backup in backups] == [True]
    assert system_prompt(llm, 0).startswith("CANARY-SETTINGS")


async def test_a_refused_value_is_shown_beside_its_key_and_nothing_changes(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A negative debounce: the page comes back (400) with the reason beside that key and
    the value as typed; the file is byte for byte as it was and no backup is made."""
    async with dashboard(tmp_path, llm) as web:
        csrf = await log_in(web)
        before = web.path.read_bytes()
        refused = await web.client.post(
            "/settings", data={"csrf": csrf, "pacing.debounce_min_s": "-1"}
        )
        after = web.path.read_bytes()
        running = (await web.client.get("/api/config", headers=BEARER)).json()
    error = re.search(r'id="error-pacing.debounce_min_s" role="alert">([^<]*)<', refused.text)

    assert refused.status_code == 400
    assert error is not None
    assert error[1] == "pacing.debounce_min_s = -1.0: must be at least 0.0"
    assert 'name="pacing.debounce_min_s" value="-1"' in refused.text
    assert (after == before, running["values"]["pacing.debounce_min_s"]) == (True, 0.05)
    assert not (tmp_path / "data" / "config-backups").exists()


async def test_a_persona_is_edited_and_a_chats_prompt_previewed(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The personas page saves the base persona (the next answer starts with it) and
    previews the group's prompt: its profile, that profile's persona and its size."""
    llm.reply_json(replies_json("好的"))
    profile = {"name": "hikers", "chats": [str(GROUP)], "persona": "CANARY-HIKER 你爱爬山。"}
    async with dashboard(tmp_path, llm) as web:
        csrf = await log_in(web)
        await web.client.patch("/api/config", json={"set": {"profiles": [profile]}}, headers=BEARER)
        saved = await web.client.post(
            "/personas", data={"csrf": csrf, "profile": "", "persona": "CANARY-BASE 你是小满。"}
        )
        await web.bot.say("在吗", chat=PRIVATE)
        await web.bot.say("今天爬山吗", chat=GROUP, sender_id="8", addresses_bot=False)
        await web.bot.settle()
        preview = (await web.client.get("/personas", params={"chat": str(GROUP)})).text
    shown = {
        name: html.unescape(value)
        for name, value in re.findall(r'<dd id="preview-(\w+)">([^<]*)</dd>', preview)
    }
    prompt = re.search(r'<pre class="prompt" id="preview-prompt">([^<]*)</pre>', preview)

    assert (saved.status_code, saved.headers["location"]) == (303, "/personas")
    assert system_prompt(llm, 0).startswith("CANARY-BASE")
    assert (shown["key"], shown["profile"]) == (str(GROUP), "hikers")
    assert re.fullmatch(r"[1-9][0-9]* tokens", shown["tokens"])
    assert prompt is not None
    assert html.unescape(prompt[1]).startswith("CANARY-HIKER")
    assert ("CANARY-BASE" in preview, "CANARY-BASE" in prompt[1]) == (True, False)


@pytest.mark.parametrize("web", [{}], indirect=True)
async def test_with_no_config_file_the_settings_are_read_only(web: PlainWeb) -> None:
    """A bot started from no file: the settings page says so and shows the running values
    without an input or a Save."""
    await web.bot.say("你好")
    await web.login()
    page = (await web.client.get("/settings")).text
    assert "This bot runs from no config file: its settings are shown read only." in page
    assert '<code class="value" id="key-pacing.debounce_min_s">30.0</code>' in page
    assert ("<textarea" in page, 'id="settings-form"' in page) == (False, False)
