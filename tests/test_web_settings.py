"""The dashboard's settings page over HTTP: every key with its description and default, a
Save written with the file's comments kept and applied live, a refusal shown beside its
key with nothing changed, a reset, no secret anywhere, and read only without a file.

They run the real core from a ``config.toml`` with the dashboard on its own uvicorn
server, as ``pacebot run`` wires them (:func:`fakes.dashboard.running_web_from_file`).
"""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config.keys import config_keys
from fakes.dashboard import BEARER, TOKEN, FileWeb, Web, running_web_from_file
from fakes.harness import GROUP, PRIVATE, TEST_KEY, free_port, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

LLM_CANARY = "sk-planted-llm-key-5f1e2d3c4b5a"
TELEGRAM_CANARY = "123456:planted-telegram-token-AAbbCC"
PLUGIN_CANARY = "planted-plugin-secret-9z8y7x"


def config_text(llm: FakeLLMServer) -> str:
    return f"""# pacebot for the hiking group: the operator's own notes stay
[bot]
name = "小满"
data_dir = "data"
persona = "CANARY-OLD 你是小满。"   # who it is

[pacing]
debounce_min_s = 0.05  # quick, for the test
debounce_max_s = 0.05

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[web]
enabled = true
port = {free_port()}

[plugins.config]
weather_api_token = "{PLUGIN_CANARY}"
"""


@contextlib.asynccontextmanager
async def dashboard(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[FileWeb]:
    async with running_web_from_file(tmp_path, llm, config_text(llm)) as web:
        yield web


def text(fragment: str) -> str:
    """Return what a fragment of HTML reads as: its tags left out, its entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def rows(page: str) -> dict[str, str]:
    """Return each key's row of the settings page, as HTML, by its dotted key."""
    found: dict[str, str] = {}
    for block in re.split(r'(?=<div class="setting[ "])', page)[1:]:
        key = re.match(r'<div class="setting[^"]*" data-key="([^"]+)"', block)
        assert key is not None, block[:200]
        found[html.unescape(key[1])] = block
    return found


def first(pattern: str, block: str) -> str | None:
    found = re.search(pattern, block, flags=re.DOTALL)
    return None if found is None else text(found[1])


def shown(block: str) -> dict[str, str | None]:
    """Return what a key's row shows: description, default, the value its input holds (or
    the value shown, read only) and the error beside it."""
    value = (
        first(r'<input type="(?:text|number)"[^>]*value="([^"]*)"', block)
        or first(r"<textarea[^>]*>(.*?)</textarea>", block)
        or first(r"<option[^>]*selected>(.*?)</option>", block)
        or first(r'<code class="value"[^>]*>(.*?)</code>', block)
    )
    return {
        "description": first(r'<p class="description">(.*?)</p>', block),
        "default": first(r'<code class="default">(.*?)</code>', block),
        "value": value,
        "error": first(r'<p class="field-error"[^>]*>(.*?)</p>', block),
    }


async def test_every_key_is_shown_with_its_description_default_and_an_input(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Each key of the config model has its row, in the model's order, with its
    description and default; a float is a number input with any step, a bool a checkbox,
    a Literal a select, the persona a text area, and restart-only keys say so."""
    async with dashboard(tmp_path, llm) as web:
        page = (await web.client.get("/settings", headers=BEARER)).text
    found = rows(page)
    keys = config_keys()
    assert list(found) == [key.key for key in keys]
    described = {key: (shown(found[key])["description"]) for key in found}
    assert described == {key.key: key.description.replace("``", "") for key in keys}
    assert shown(found["pacing.debounce_min_s"])["default"] == "5.0"
    assert shown(found["groups.reply_mode"])["default"] == "mention"
    assert shown(found["pacing.debounce_min_s"])["value"] == "0.05"  # as the file has it
    assert 'type="number" step="any"' in found["pacing.debounce_min_s"]
    assert 'type="number" step="1"' in found["pacing.max_batch"]
    assert 'type="checkbox"' in found["llm.json_mode"]
    assert "<select" in found["groups.reply_mode"]
    assert "<textarea" in found["bot.persona"]
    restart = {key for key, block in found.items() if 'class="restart"' in block}
    assert ("web.port" in restart, "pacing.debounce_min_s" in restart) == (True, False)


async def test_a_save_writes_only_the_changed_keys_and_applies_them_live(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Saving the form with three values changed writes those keys with the file's
    comments kept, backs the old file up, says what applied and logs who: the group's
    reply mode changes in /status at once and the next answer starts with the new persona."""
    llm.reply_json(replies_json("好的"))
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        page = (await web.client.get("/settings")).text
        before = web.path.read_text(encoding="utf-8")
        form = {
            "csrf": csrf,
            "pacing.debounce_min_s": "0.02",
            "pacing.debounce_max_s": "0.05",  # as it was: no change
            "groups.reply_mode": "always",
            "bot.persona": "CANARY-NEW 你是阿福。\r\n说话简短。",
            "llm.json_mode": "false",  # the hidden field, then the ticked checkbox
        }
        with captured_logs() as logs:
            saved = await web.client.post("/settings", data={**form, "llm.json_mode": "true"})
        after = (await web.client.get("/settings")).text
        mode = (await web.bot.ops.status.chat(GROUP)).reply_mode
        await web.bot.say("在吗", chat=PRIVATE)
        await web.bot.settle()
        written = web.path.read_text(encoding="utf-8")
    backups = list((tmp_path / "data" / "config-backups").iterdir())
    notice = first(r'<p class="notice"[^>]*>(.*?)</p>', after)
    assert 'name="pacing.debounce_min_s"' in page
    assert (saved.status_code, saved.headers["location"]) == (303, "/settings")
    assert notice == (
        "Saved bot.persona, pacing.debounce_min_s, groups.reply_mode (audited as web). "
        "Applied now: bot.persona, groups.reply_mode, pacing.debounce_min_s."
    )
    assert logs.about("config.toml changed by web") == [
        "INFO config.toml changed by web: bot.persona, pacing.debounce_min_s, groups.reply_mode"
    ]
    assert written.startswith("# pacebot for the hiking group: the operator's own notes stay\n")
    assert "debounce_min_s = 0.02  # quick, for the test\n" in written
    assert 'persona = """CANARY-NEW 你是阿福。\n说话简短。"""   # who it is' in written
    assert 'reply_mode = "always"' in written
    assert "json_mode" not in written  # as it was: left out of the file
    assert [backup.read_text(encoding="utf-8") for backup in backups] == [before]
    assert shown(rows(after)["pacing.debounce_min_s"])["value"] == "0.02"
    assert mode == "always"
    system = str(llm.requests[0]["messages"][0]["content"])
    assert system.startswith("CANARY-NEW 你是阿福。\n说话简短。")


async def test_a_refused_save_shows_the_error_beside_its_key_and_changes_nothing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A value the model refuses comes back beside its key in TOML's words, with every
    value as typed still in the inputs; the file is byte for byte as it was, and no
    backup is made; a value that is no number is refused the same way before any check."""
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        before = web.path.read_bytes()
        refused = await web.client.post(
            "/settings",
            data={"csrf": csrf, "pacing.debounce_min_s": "-1", "groups.reply_mode": "always"},
        )
        unread = await web.client.post(
            "/settings", data={"csrf": csrf, "pacing.max_batch": "many", "bot.name": "阿福"}
        )
        after = web.path.read_bytes()
        mode = (await web.bot.ops.status.chat(GROUP)).reply_mode
    shown_refused = rows(refused.text)
    shown_unread = rows(unread.text)
    assert refused.status_code == 400
    assert shown(shown_refused["pacing.debounce_min_s"]) == {
        "description": next(
            k.description for k in config_keys() if k.key == "pacing.debounce_min_s"
        ),
        "default": "5.0",
        "value": "-1",
        "error": "pacing.debounce_min_s = -1.0: must be at least 0.0",
    }
    assert shown(shown_refused["groups.reply_mode"])["value"] == "always"  # kept as typed
    errors = [key for key, block in shown_refused.items() if shown(block)["error"]]
    assert errors == ["pacing.debounce_min_s"]
    assert unread.status_code == 400
    assert shown(shown_unread["pacing.max_batch"])["error"] == "expected a whole number, such as 3"
    assert shown(shown_unread["bot.name"])["value"] == "阿福"
    assert (after, mode) == (before, "mention")
    assert not (tmp_path / "data" / "config-backups").exists()


async def test_a_key_is_reset_to_its_default(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Reset takes the key out of the file (its comment line goes with it): it runs with
    its default, and its row no longer offers a reset."""
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        page = (await web.client.get("/settings")).text
        reset = await web.client.post(
            "/settings/reset", data={"csrf": csrf, "key": "pacing.debounce_max_s"}
        )
        after = (await web.client.get("/settings")).text
        written = web.path.read_text(encoding="utf-8")
        running = (await web.client.get("/api/config", headers=BEARER)).json()["values"]
    offers_reset = 'value="pacing.debounce_max_s"'
    assert (offers_reset in page, offers_reset in after) == (True, False)
    assert reset.status_code == 303
    assert "debounce_max_s" not in written
    assert "debounce_min_s = 0.05  # quick, for the test" in written
    assert running["pacing.debounce_max_s"] == 15.0
    assert shown(rows(after)["pacing.debounce_max_s"])["value"] == "15.0"


async def test_no_secret_is_shown_and_none_can_be_typed_in(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With keys and tokens planted in the environment and a plugin's token in the file,
    neither page holds any of them: an ``*_env`` key shows its variable's name only, and
    a value posted for it is not written."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", LLM_CANARY)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TELEGRAM_CANARY)
    monkeypatch.setenv("PACEBOT_WEB_TOKEN", TOKEN)
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        pages = [(await web.client.get(path)).text for path in ("/settings", "/personas")]
        before = web.path.read_bytes()
        typed = await web.client.post(
            "/settings", data={"csrf": csrf, "llm.api_key_env": LLM_CANARY}
        )
        after = web.path.read_bytes()
    secrets = (LLM_CANARY, TELEGRAM_CANARY, TOKEN, TEST_KEY, PLUGIN_CANARY)
    leaked = [secret for page in pages for secret in secrets if secret in page]
    found = rows(pages[0])
    assert leaked == []
    assert shown(found["llm.api_key_env"])["value"] == "PACEBOT_LLM_API_KEY"
    assert 'name="llm.api_key_env"' not in pages[0]
    assert "weather_api_token" in str(shown(found["plugins.config"])["value"])
    assert (typed.status_code, after) == (303, before)


async def test_without_a_config_file_the_settings_are_read_only(web: Web) -> None:
    """A bot run from no file shows each running value with no input and says so; a
    Save is refused."""
    csrf = await web.login()
    page = (await web.client.get("/settings")).text
    posted = await web.client.post("/settings", data={"csrf": csrf, "bot.name": "阿福"})
    found = rows(page)
    assert "Read only: this bot runs from no config file" in page
    assert ('<input type="number"' in page, "<textarea" in page) == (False, False)
    assert shown(found["pacing.debounce_min_s"])["value"] == "30.0"
    assert len(found) == len(config_keys())
    assert posted.status_code == 404
