"""The dashboard's personas page and a chat's access switch over HTTP: a persona saved
there starts the next answer, the preview shows the prompt a chosen chat would get, a
persona read from a file is shown and left to the file, and the switch turns a chat off
and on, saying when ``[access]`` refuses it whatever the switch says.

They run the real core from a ``config.toml`` with the dashboard on its own uvicorn
server, as ``pacebot run`` wires them (:func:`fakes.dashboard.running_web_from_file`).
"""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

from bot.prompt import estimate_tokens
from fakes.dashboard import BEARER, FileWeb, running_web_from_file
from fakes.harness import GROUP, PRIVATE, free_port, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

OTHER_GROUP = "test:group:-200"


def config_text(llm: FakeLLMServer) -> str:
    return f"""[bot]
name = "小满"
data_dir = "data"
persona = "CANARY-BASE 你是小满。"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[web]
enabled = true
port = {free_port()}

# the hiking group has its own voice
[[profiles]]
name = "hikers"
chats = ["{GROUP}"]
persona = "CANARY-HIKER 你爱爬山。"  # kept short

[[profiles]]
name = "readers"
chats = ["{OTHER_GROUP}"]
persona_file = "readers.txt"
"""


@contextlib.asynccontextmanager
async def dashboard(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[FileWeb]:
    (tmp_path / "readers.txt").write_text("CANARY-READER 你爱读书。", encoding="utf-8")
    async with running_web_from_file(tmp_path, llm, config_text(llm)) as web:
        yield web


def text_of(page: str, element_id: str) -> str:
    """Return the text of the element with ``element_id``."""
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</', page, flags=re.DOTALL)
    assert found is not None, element_id
    return html.unescape(found[1])


def notice_of(page: str) -> str:
    """Return what the page says was done."""
    found = re.search(r'<p class="notice" role="status">([^<]*)</p>', page)
    assert found is not None, page
    return html.unescape(found[1])


def cards(page: str) -> dict[str, str]:
    """Return each persona's card, as HTML, by its profile ("" for the base persona)."""
    found = re.findall(
        r'<section class="persona-card[^"]*" data-profile="([^"]*)">(.*?)</section>',
        page,
        flags=re.DOTALL,
    )
    return {html.unescape(profile): card for profile, card in found}


def system_prompt(llm: FakeLLMServer, request: int) -> str:
    return str(llm.requests[request]["messages"][0]["content"])


async def test_a_persona_saved_on_the_page_starts_the_next_answer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Saving the base persona and the hikers' persona writes config.toml (its comments
    kept, a backup per save) and says so; the next answer in a private chat starts with the new base
    persona, the next in the hikers' group with theirs."""
    llm.reply_json(replies_json("好的"))
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        original = web.path.read_text(encoding="utf-8")
        with captured_logs() as logs:
            base = await web.client.post(
                "/personas", data={"csrf": csrf, "profile": "", "persona": "CANARY-BASE2 阿福"}
            )
            hikers = await web.client.post(
                "/personas",
                data={"csrf": csrf, "profile": "hikers", "persona": "CANARY-HIKER2\r\n爱看山。"},
            )
        page = (await web.client.get(hikers.headers["location"])).text
        await web.bot.say("在吗", chat=PRIVATE)
        await web.bot.settle()
        await web.bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
        await web.bot.settle()
        written = web.path.read_text(encoding="utf-8")
    kept = (tmp_path / "data" / "config-backups").iterdir()
    backups = [backup.read_text(encoding="utf-8") for backup in kept]
    assert (base.status_code, hikers.status_code) == (303, 303)
    assert (len(backups), original in backups) == (2, True)  # one per save, the same second too
    assert notice_of(page) == (
        "Saved the persona of hikers (audited as web); the next answer starts with it."
    )
    assert logs.about("config.toml changed by web") == [
        "INFO config.toml changed by web: bot.persona",
        "INFO config.toml changed by web: profiles (hikers).persona",
    ]
    assert 'persona = "CANARY-BASE2 阿福"\n' in written
    assert 'persona = """CANARY-HIKER2\n爱看山。"""  # kept short\n' in written
    assert "# the hiking group has its own voice\n[[profiles]]" in written
    assert system_prompt(llm, 0).startswith("CANARY-BASE2 阿福")
    assert system_prompt(llm, 1).startswith("CANARY-HIKER2\n爱看山。")


async def test_a_persona_read_from_a_file_is_shown_and_left_to_the_file(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The readers' persona shows its file's path and text with no text area; a Save
    posted for it anyway is refused beside it and the config file stays as it was; an
    empty base persona is refused the same way."""
    async with dashboard(tmp_path, llm) as web:
        csrf = await web.login()
        page = (await web.client.get("/personas")).text
        before = web.path.read_bytes()
        refused = await web.client.post(
            "/personas", data={"csrf": csrf, "profile": "readers", "persona": "x"}
        )
        blank = await web.client.post(
            "/personas", data={"csrf": csrf, "profile": "", "persona": "  "}
        )
        after = web.path.read_bytes()
    readers = cards(page)["readers"]
    assert list(cards(page)) == ["", "hikers", "readers"]
    assert f"Read from {tmp_path / 'readers.txt'}" in html.unescape(readers)
    assert ("CANARY-READER 你爱读书。" in readers, "<textarea" in readers) == (True, False)
    assert refused.status_code == 400
    assert re.findall(r'class="field-error"[^>]*>([^<]*)<', cards(refused.text)["readers"]) == [
        f"This persona is read from {tmp_path / 'readers.txt'}: edit it in that file."
    ]
    assert blank.status_code == 400
    assert re.findall(r'class="field-error"[^>]*>([^<]*)<', cards(blank.text)[""]) == [
        "The base persona cannot be empty."
    ]
    assert after == before


async def test_the_preview_shows_the_chosen_chats_prompt_and_its_size(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Picking the hikers' group shows the prompt it would get now, their persona first,
    with its profile and token count, as GET /api/chats/{chat}/prompt gives them; a typed
    key of a chat never seen works too, and a key that is none is refused beside it."""
    async with dashboard(tmp_path, llm) as web:
        await web.bot.say("周六爬山吗", chat=GROUP, sender_id="8")
        await web.bot.say("你好", chat=PRIVATE)
        await web.login()
        picked = (await web.client.get("/personas", params={"chat": str(GROUP)})).text
        api = (await web.client.get(f"/api/chats/{GROUP}/prompt", headers=BEARER)).json()
        typed = (await web.client.get("/personas", params={"typed": OTHER_GROUP})).text
        wrong = await web.client.get("/personas", params={"typed": "nonsense"})
    prompt = text_of(picked, "preview-prompt")
    listed = re.findall(r'<option value="([^"]+)"', picked)
    assert sorted(listed) == sorted([str(GROUP), str(PRIVATE)])
    assert (text_of(picked, "preview-key"), text_of(picked, "preview-profile")) == (
        str(GROUP),
        "hikers",
    )
    assert prompt.startswith("CANARY-HIKER 你爱爬山。")
    assert text_of(picked, "preview-tokens") == f"~{estimate_tokens(prompt)} tokens"
    assert (api["prompt"], api["tokens"]) == (prompt, estimate_tokens(prompt))
    assert text_of(typed, "preview-profile") == "readers"
    assert text_of(typed, "preview-prompt").startswith("CANARY-READER 你爱读书。")
    assert wrong.status_code == 200
    assert "preview-prompt" not in wrong.text
    assert 'class="field-error"' in wrong.text


async def test_the_switch_turns_a_chat_off_and_on_again(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Switch off on the group's page: it says so, offers Switch on, and the next message
    there is neither stored nor answered; Switch on serves it again; both are logged as
    done by web."""
    llm.reply_json(replies_json("在的"))
    async with dashboard(tmp_path, llm) as web:
        await web.bot.say("大家好", chat=GROUP, sender_id="8")
        csrf = await web.login()
        page = f"/chats/{GROUP}"
        with captured_logs() as logs:
            off = await web.client.post(f"{page}/access", data={"csrf": csrf, "on": "false"})
            shown_off = (await web.client.get(page)).text
            await web.bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
            await web.bot.settle()
            stored_off = len(await web.bot.ops.status.messages(GROUP, limit=10))
            asked_off = len(llm.requests)
            on = await web.client.post(f"{page}/access", data={"csrf": csrf, "on": "true"})
            shown_on = (await web.client.get(page)).text
            await web.bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
            await web.bot.settle()
            stored_on = len(await web.bot.ops.status.messages(GROUP, limit=10))
    assert (off.status_code, on.status_code) == (303, 303)
    assert notice_of(shown_off) == (
        "Switched off here (audited as web): messages here are neither stored nor answered."
    )
    assert text_of(shown_off, "access") == "off: the chat is switched off (/bot off)"
    assert ">Switch on here<" in shown_off
    assert (stored_off, asked_off) == (1, 0)
    assert notice_of(shown_on) == "Switched on here (audited as web)."
    assert (text_of(shown_on, "access"), ">Switch off here<" in shown_on) == ("on", True)
    assert (stored_on, len(llm.requests)) == (3, 1)  # the message, and the bot's answer
    assert logs.about("switched") == [
        "INFO switched off by web",
        "INFO messages here are neither stored nor answered: the chat is switched off (/bot off)",
        "INFO switched on by web",
    ]


async def test_a_chat_refused_by_the_config_says_the_switch_cannot_serve_it(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Once [access] denies the group (changed live), its page says why and that the
    switch cannot override the rule, and switching it on still says it is refused."""
    async with dashboard(tmp_path, llm) as web:
        await web.bot.say("大家好", chat=GROUP, sender_id="8")
        csrf = await web.login()
        await web.client.patch(
            "/api/config", json={"set": {"access.deny": [str(GROUP)]}}, headers=BEARER
        )
        page = (await web.client.get(f"/chats/{GROUP}")).text
        await web.client.post(f"/chats/{GROUP}/access", data={"csrf": csrf, "on": "true"})
        after = (await web.client.get(f"/chats/{GROUP}")).text
    assert text_of(page, "access") == "off: the chat is denied (access.deny)"
    assert text_of(page, "access-rule") == (
        "Refused by config.toml: the chat is denied (access.deny). The switch cannot "
        "override the [access] rules."
    )
    assert notice_of(after) == (
        "Switched on here (audited as web). Still refused: the chat is denied "
        "(access.deny). No switch overrides the [access] rules of config.toml."
    )
