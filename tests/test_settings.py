"""The running settings: profiles per chat, and a reload that swaps the config whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config.model import parse_config
from bot.config.personas import read_profile_personas
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.models import ChatKey, ChatKind

KIDS = ChatKey("qq", ChatKind.GROUP, "123")
FORUM_TOPIC = ChatKey("telegram", ChatKind.GROUP, "-100", "7")
FRIEND = ChatKey("telegram", ChatKind.PRIVATE, "42")
STRANGER = ChatKey("qq", ChatKind.GROUP, "999")

PROFILES: list[dict[str, Any]] = [
    {
        "name": "kids",
        "chats": ["qq:group:123"],
        "persona": "你是温柔的老师。",
        "language": "zh",
        "pacing": {"debounce_min_s": 1.0, "debounce_max_s": 2.0},
        "groups": {"reply_mode": "always", "talk_value": 0.9},
        "budget": {"chat_daily_tokens": 5000},
    },
    {"name": "forums", "chats": ["telegram:group:-100"], "voice": {"speak": True}},
    {"name": "everyone", "chats": ["*:*:*"], "initiative": {"later": False}},
]


def settings(tmp_path: Path, **sections: Any) -> Settings:
    config = parse_config(sections, base_dir=tmp_path)
    return Settings(config, persona="你是小满。", personas=read_profile_personas(config))


def test_a_chat_runs_with_the_first_profile_that_names_it(tmp_path: Path) -> None:
    """The kids' group takes its profile's persona, language, pacing, groups and cap; a
    forum topic takes the profile naming its group; any other chat the catch-all."""
    running = settings(tmp_path, profiles=PROFILES)
    kids, topic, stranger = (running.for_chat(chat) for chat in (KIDS, FORUM_TOPIC, STRANGER))
    assert (kids.profile, kids.persona, kids.language) == ("kids", "你是温柔的老师。", "zh")
    assert (kids.pacing.debounce_min_s, kids.pacing.max_wait_s) == (1.0, 60.0)
    assert (kids.groups.reply_mode, kids.groups.talk_value, kids.chat_daily_tokens) == (
        "always",
        0.9,
        5000,
    )
    assert (topic.profile, topic.speak, topic.persona) == ("forums", True, "你是小满。")
    assert (stranger.profile, stranger.initiative.later, stranger.groups.reply_mode) == (
        "everyone",
        False,
        "mention",
    )


def test_without_profiles_a_chat_runs_with_the_base_config(tmp_path: Path) -> None:
    """No profile: the base persona, language, pacing and groups."""
    chat = settings(tmp_path, groups={"reply_mode": "smart"}).for_chat(FRIEND)
    assert (chat.profile, chat.persona, chat.language, chat.groups.reply_mode) == (
        "",
        "你是小满。",
        "en",
        "smart",
    )


def test_a_groups_override_applies_on_top_of_its_profile(tmp_path: Path) -> None:
    """A profile sets the kids' groups; the group's own override wins where it speaks."""
    running = settings(
        tmp_path,
        profiles=PROFILES,
        groups={"override": [{"chat": "qq:group:123", "talk_value": 0.1}]},
    )
    groups = running.for_chat(KIDS).groups
    assert (groups.reply_mode, groups.talk_value) == ("always", 0.1)


def test_a_profile_reads_its_persona_from_a_file(tmp_path: Path) -> None:
    """``persona_file`` is read beside the config, and its text is the chats' persona."""
    (tmp_path / "teacher.txt").write_text("你是耐心的数学老师。\n", encoding="utf-8")
    profile = {"name": "math", "chats": ["qq:group:*"], "persona_file": "teacher.txt"}
    assert settings(tmp_path, profiles=[profile]).for_chat(KIDS).persona == "你是耐心的数学老师。"


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            {"name": "x", "chats": ["qq:group:1"], "pacing": {"debounce_min_s": 30.0}},
            'profiles (item 1, name "x"): pacing: pacing.debounce_min_s = 30.0: must not'
            " exceed pacing.debounce_max_s (15.0)",
        ),
        (
            {"name": "x", "chats": ["qq:group:1"], "groups": {"reply_mod": "smart"}},
            'profiles (item 1, name "x"): groups.reply_mod: unknown key (value "smart"); check'
            " its spelling against config.toml",
        ),
        (
            {"name": "x", "chats": ["qq:group:1"], "groups": {"talk_value": 3}},
            'profiles (item 1, name "x"): groups.talk_value = 3: must be at most 1.0',
        ),
    ],
)
def test_a_bad_profile_table_is_named_by_its_item_name_and_key(
    tmp_path: Path, profile: dict[str, Any], expected: str
) -> None:
    """A profile's table is checked with the base values filled in; the error names the
    profile by its place and name, and the key as written."""
    with pytest.raises(ConfigError) as caught:
        settings(tmp_path, profiles=[profile])
    assert str(caught.value).splitlines() == ["invalid configuration:", f"  - {expected}"]


@pytest.mark.parametrize(
    ("profiles", "expected"),
    [
        (
            [{"name": "x", "chats": ["qq:*"]}],
            'profiles (item 1, name "x"): chats: "qq:*" must be a chat key pattern,'
            ' platform:kind:id, "*" a wildcard, e.g. "telegram:group:*" or "qq:group:123456"',
        ),
        (
            [{"name": "x", "chats": ["qq:group:1"]}, {"name": "x", "chats": ["qq:group:2"]}],
            'name = "x" is taken',
        ),
    ],
)
def test_patterns_and_names_are_checked_when_the_file_is_read(
    tmp_path: Path, profiles: list[dict[str, Any]], expected: str
) -> None:
    """A pattern that is no chat key and a name used twice are refused with the config."""
    with pytest.raises(ConfigError) as caught:
        parse_config({"profiles": profiles}, base_dir=tmp_path)
    [problem] = str(caught.value).splitlines()[1:]
    assert expected in problem


def test_a_reload_applies_live_keys_and_keeps_what_needs_a_restart(tmp_path: Path) -> None:
    """A reload that changes the reply mode, a persona and Telegram's switch applies the
    first two at once and keeps Telegram as it runs, naming it as needing a restart."""
    running = settings(tmp_path)
    changed = parse_config(
        {"groups": {"reply_mode": "smart"}, "telegram": {"enabled": True}}, base_dir=tmp_path
    )
    reloaded = running.reload(changed, persona="你是阿福。")
    assert (reloaded.applied, reloaded.restart_needed) == (
        ("groups.reply_mode", "bot.persona"),
        ("telegram.enabled",),
    )
    assert (running.groups.reply_mode, running.telegram.enabled, running.persona) == (
        "smart",
        False,
        "你是阿福。",
    )


def test_a_reload_keeps_the_official_qq_bots_keys_as_they_run(tmp_path: Path) -> None:
    """A reload that changes [qq_official]'s switch, quota and group stream applies none of
    them and names each as needing a restart; a persona changed with them applies."""
    running = settings(tmp_path)
    official = {"enabled": True, "app_id": "1024", "proactive_per_month": 9}
    changed = parse_config(
        {"qq_official": {**official, "group_all_messages": False}}, base_dir=tmp_path
    )
    reloaded = running.reload(changed, persona="你是阿福。")
    assert (reloaded.applied, reloaded.restart_needed) == (
        ("bot.persona",),
        (
            "qq_official.app_id",
            "qq_official.enabled",
            "qq_official.group_all_messages",
            "qq_official.proactive_per_month",
        ),
    )
    kept = running.current.qq_official
    assert (kept.enabled, kept.proactive_per_month, kept.group_all_messages) == (False, 4, True)


def test_a_reload_with_a_bad_profile_changes_nothing(tmp_path: Path) -> None:
    """A profile that breaks its table's rules refuses the reload; the running settings
    stay as they were."""
    running = settings(tmp_path, profiles=PROFILES)
    bad = parse_config(
        {"profiles": [{"name": "x", "chats": ["*:*:*"], "groups": {"talk_value": 9}}]},
        base_dir=tmp_path,
    )
    with pytest.raises(ConfigError):
        running.reload(bad, persona="你是阿福。")
    assert (running.for_chat(KIDS).profile, running.persona) == ("kids", "你是小满。")
