"""The dashboard's personas page over HTTP with profiles: a profile's persona saved in
its own ``[[profiles]]`` table, a backup per save, and a persona read from a file shown
and left to that file.

They run the real core from a ``config.toml`` with the dashboard on its own uvicorn
server, as ``pacebot run`` wires them (:func:`fakes.config_dashboard.dashboard`).
"""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

from fakes.config_dashboard import BEARER, Web, dashboard, log_in
from fakes.harness import GROUP, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

OTHER_GROUP = "test:group:-200"
PROFILES = [
    {"name": "hikers", "chats": [str(GROUP)], "persona": "CANARY-HIKER 你爱爬山。"},
    {"name": "readers", "chats": [OTHER_GROUP], "persona_file": "readers.txt"},
]


@contextlib.asynccontextmanager
async def with_profiles(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[Web]:
    """The config dashboard, with a profile whose persona is written in config.toml and
    one whose persona is read from a file."""
    (tmp_path / "readers.txt").write_text("CANARY-READER 你爱读书。", encoding="utf-8")
    async with dashboard(tmp_path, llm) as web:
        change = {"set": {"profiles": PROFILES}}
        answer = await web.client.patch("/api/config", json=change, headers=BEARER)
        assert answer.status_code == 200, answer.text
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


def errors_in(card: str) -> list[str]:
    """Return the errors shown in a persona's card."""
    return [html.unescape(e) for e in re.findall(r'class="field-error"[^>]*>([^<]*)<', card)]


def system_prompt(llm: FakeLLMServer, request: int) -> str:
    return str(llm.requests[request]["messages"][0]["content"])


async def test_a_profiles_persona_is_saved_in_its_own_table_with_a_backup_per_save(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Saving the hikers' persona, then the base one, writes each in its place (the file's
    comments kept) with a backup per save, even two in one second, and logs who changed
    which; the next answer in the hikers' group starts with their new persona."""
    llm.reply_json(replies_json("好的"))
    async with with_profiles(tmp_path, llm) as web:
        csrf = await log_in(web)
        before = web.path.read_text(encoding="utf-8")
        with captured_logs() as logs:
            hikers = await web.client.post(
                "/personas",
                data={"csrf": csrf, "profile": "hikers", "persona": "CANARY-HIKER2\r\n爱看山。"},
            )
            base = await web.client.post(
                "/personas", data={"csrf": csrf, "profile": "", "persona": "CANARY-BASE2 阿福"}
            )
        page = (await web.client.get(base.headers["location"])).text
        await web.bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
        await web.bot.settle()
        written = web.path.read_text(encoding="utf-8")
    kept = (tmp_path / "data" / "config-backups").iterdir()
    backups = [backup.read_text(encoding="utf-8") for backup in kept]
    assert (hikers.status_code, base.status_code) == (303, 303)
    assert notice_of(page) == (
        "Saved the persona of The base persona (audited as web); it applies from the next batch."
    )
    assert logs.about("config.toml changed by web") == [
        "INFO config.toml changed by web: profiles (hikers).persona",
        "INFO config.toml changed by web: bot.persona",
    ]
    assert written.startswith("# pacebot for the hiking group: the operator's own notes stay\n")
    assert 'persona = "CANARY-BASE2 阿福"   # who it is\n' in written
    assert '"""CANARY-HIKER2\n爱看山。"""' in written
    assert (len(backups), before in backups) == (3, True)  # the PATCH's, then one per save
    assert system_prompt(llm, 0).startswith("CANARY-HIKER2\n爱看山。")


async def test_a_persona_read_from_a_file_is_shown_and_left_to_the_file(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The readers' persona shows its file's path and text with no text area; a Save
    posted for it anyway is refused beside it, and so is an empty base persona; the
    config file stays byte for byte as it was."""
    async with with_profiles(tmp_path, llm) as web:
        csrf = await log_in(web)
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
    assert str(tmp_path / "readers.txt") in html.unescape(readers)
    assert ("CANARY-READER 你爱读书。" in readers, "<textarea" in readers) == (True, False)
    assert refused.status_code == 400
    assert errors_in(cards(refused.text)["readers"]) == [
        f"{tmp_path / 'readers.txt'} holds this persona: edit that file."
    ]
    assert blank.status_code == 400
    assert errors_in(cards(blank.text)[""]) == ["A persona cannot be blank."]
    assert after == before
