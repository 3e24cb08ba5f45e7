"""The dashboard's config API over HTTP: read every key, change the file keeping its
comments, apply it live, and refuse a bad change naming the key with nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.config_dashboard import BEARER, TOKEN, dashboard
from fakes.harness import GROUP, PRIVATE, TEST_KEY, replies_json, user_prompt
from fakes.openai_api import FakeLLMServer


async def test_the_config_is_read_with_every_key_and_no_secret(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """GET /api/config gives each key's running value and nothing waiting for a restart;
    the secrets are named by their variables only."""
    async with dashboard(tmp_path, llm) as web:
        shown = (await web.client.get("/api/config", headers=BEARER)).json()
    values = shown["values"]
    assert (values["pacing.debounce_min_s"], values["bot.persona"]) == (
        0.05,
        "CANARY-OLD 你是小满。",
    )
    assert (values["llm.api_key_env"], shown["restart_needed"], shown["profiles"]) == (
        "PACEBOT_LLM_API_KEY",
        [],
        [],
    )
    assert (TEST_KEY in str(shown), TOKEN in str(shown)) == (False, False)


async def test_a_change_is_written_with_its_comments_and_used_by_the_next_answer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """PATCH sets the persona and a profile: the file keeps its comments and order, the old
    one is backed up, and the next answer's prompt holds the new persona at once."""
    llm.reply_json(replies_json("好的"))
    profile = {"name": "hikers", "chats": [str(GROUP)], "persona": "CANARY-HIKER 你爱爬山。"}
    change = {"set": {"bot.persona": "CANARY-NEW 你是阿福。", "profiles": [profile]}}
    async with dashboard(tmp_path, llm) as web:
        answer = await web.client.patch("/api/config", json=change, headers=BEARER)
        await web.bot.say("在吗", chat=PRIVATE)
        await web.bot.settle()
        text = web.path.read_text(encoding="utf-8")
    backups = sorted((tmp_path / "data" / "config-backups").iterdir())
    assert (answer.status_code, answer.json()) == (
        200,
        {"applied": ["bot.persona", "profiles"], "restart_needed": []},
    )
    assert text.startswith("# pacebot for the hiking group: the operator's own notes stay\n")
    assert 'persona = "CANARY-NEW 你是阿福。"   # who it is' in text
    assert "debounce_min_s = 0.05  # quick, for the test" in text
    assert [b.read_text(encoding="utf-8") for b in backups] == [config_text_of(backups[0])]
    assert "CANARY-NEW" in str(llm.requests[0]["messages"][0]["content"])
    assert "在吗" in user_prompt(llm.requests[0])


def config_text_of(backup: Path) -> str:
    """The backup holds the file as it was before the change."""
    text = backup.read_text(encoding="utf-8")
    assert "CANARY-OLD" in text
    return text


@pytest.mark.parametrize(
    ("change", "key", "error"),
    [
        (
            {"set": {"pacing.debounce_min_s": -1}},
            "pacing.debounce_min_s",
            "pacing.debounce_min_s = -1: must be at least 0.0",
        ),
        (
            {"set": {"pacing.debounce_mn_s": 1}},
            "pacing.debounce_mn_s",
            "pacing.debounce_mn_s: unknown key; check its spelling against config.toml",
        ),
        (
            {"set": {"groups.reply_mode": "sometimes"}},
            "groups.reply_mode",
            'groups.reply_mode = "sometimes": must be one of "mention", "always", "smart"',
        ),
    ],
)
async def test_a_bad_change_is_refused_naming_the_key_and_changes_nothing(
    tmp_path: Path, llm: FakeLLMServer, change: dict[str, object], key: str, error: str
) -> None:
    """A value that breaks the config's rules, or an unknown key: 400 with the key, the
    value and the form expected; the file and the running settings stay as they were."""
    async with dashboard(tmp_path, llm) as web:
        before = web.path.read_text(encoding="utf-8")
        answer = await web.client.patch("/api/config", json=change, headers=BEARER)
        after = web.path.read_text(encoding="utf-8")
        shown = (await web.client.get("/api/config", headers=BEARER)).json()
    assert (answer.status_code, answer.json()) == (400, {"error": error, "key": key})
    assert (after, shown["values"]["pacing.debounce_min_s"]) == (before, 0.05)
    assert not (tmp_path / "data" / "config-backups").exists()


async def test_a_key_read_at_start_up_waits_for_a_restart(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Changing the LLM's retries is written and named as needing a restart; the running
    value stays, and GET /api/config says it waits."""
    async with dashboard(tmp_path, llm) as web:
        answer = await web.client.patch(
            "/api/config", json={"set": {"llm.max_retries": 3}}, headers=BEARER
        )
        shown = (await web.client.get("/api/config", headers=BEARER)).json()
    assert answer.json() == {"applied": [], "restart_needed": ["llm.max_retries"]}
    assert (shown["values"]["llm.max_retries"], shown["restart_needed"]) == (
        0,
        ["llm.max_retries"],
    )


async def test_the_prompt_a_chat_would_get_names_its_profile(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """GET /api/chats/{chat}/prompt gives the system prompt with the profile's persona, the
    profile's name and the prompt's size in tokens."""
    profile = {"name": "hikers", "chats": [str(GROUP)], "persona": "CANARY-HIKER 你爱爬山。"}
    async with dashboard(tmp_path, llm) as web:
        await web.client.patch("/api/config", json={"set": {"profiles": [profile]}}, headers=BEARER)
        shown = (await web.client.get(f"/api/chats/{GROUP}/prompt", headers=BEARER)).json()
    assert (shown["chat"], shown["profile"], shown["prompt"].startswith("CANARY-HIKER")) == (
        str(GROUP),
        "hikers",
        True,
    )
    assert shown["tokens"] > 0


async def test_the_dashboard_switches_a_chat_off(tmp_path: Path, llm: FakeLLMServer) -> None:
    """POST /api/chats/{chat}/access switches a chat off: its next message is not stored
    and costs nothing; anonymous, the switch is refused."""
    async with dashboard(tmp_path, llm) as web:
        anonymous = await web.client.post(f"/api/chats/{GROUP}/access", json={"on": False})
        off = await web.client.post(
            f"/api/chats/{GROUP}/access", json={"on": False}, headers=BEARER
        )
        await web.bot.say("小满 在吗", chat=GROUP, sender_id="8", addresses_bot=True)
        await web.bot.settle()
        waiting = await web.bot.ops.status.waiting_messages(GROUP)
    assert anonymous.status_code == 401
    assert off.json() == {
        "chat": str(GROUP),
        "served": False,
        "refusal": "the chat is switched off (/bot off)",
    }
    assert (waiting, llm.requests) == (0, [])
