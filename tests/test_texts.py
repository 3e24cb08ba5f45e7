"""pacebot's own words: both languages say the same messages, /help lists what a sender may use."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from bot.commands.menu import MENU, menu
from bot.config.model import parse_config
from bot.errors import ConfigError
from bot.texts import CATALOGUES, EN, Texts
from fakes.harness import GROUP, PRIVATE, harness
from fakes.openai_api import FakeLLMServer


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@pytest.mark.parametrize("language", sorted(CATALOGUES))
def test_every_language_has_the_same_messages_with_the_same_fields(language: str) -> None:
    """A message missing in one language, or with another field, fails here, not in a chat."""
    catalogue = CATALOGUES[language]  # type: ignore[index]
    assert sorted(catalogue) == sorted(EN)
    assert {name: fields(t) for name, t in catalogue.items()} == {
        name: fields(t) for name, t in EN.items()
    }


def test_every_command_has_a_description() -> None:
    """Each command of the menu has its one-line help message."""
    assert [f"help_{c.name}" for c in MENU if f"help_{c.name}" not in EN] == []


def test_a_chatters_braces_do_not_break_a_template() -> None:
    """A field value with {, } or % is shown as it is."""
    assert Texts("en")("run_future", day="{x} 100%") == "{x} 100% has not happened yet."


def test_the_language_is_checked_with_the_config() -> None:
    """An unknown bot.language is a config error naming the key and the choices."""
    assert parse_config({"bot": {"language": "zh"}}, base_dir=Path()).bot.language == "zh"
    with pytest.raises(ConfigError, match=r'bot.language = "fr": must be one of "en", "zh"'):
        parse_config({"bot": {"language": "fr"}}, base_dir=Path())


def test_the_admin_menu_holds_every_command_and_the_open_menu_only_open_ones() -> None:
    """A platform's menu lists every command for admins; everyone else sees the open ones."""
    texts = Texts("zh")
    assert [name for name, _ in menu(texts, admin=True)] == [c.name for c in MENU]
    assert menu(texts, admin=False) == (
        ("help", "列出你可以用的命令"),
        ("forgetme", "忘掉这个聊天里关于你的所有事实"),
        ("later", "这里待办的提醒和回访；按编号取消一个"),
        ("quiet", "N 小时内（默认 24）这里不主动开口、不回访；/quiet off 结束"),
        ("whoami", "你在这里的 id，即 bot.admins 里写管理员的方式"),
    )


async def test_help_lists_what_the_sender_may_use(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/help shows admins every command, one line each, and others only what they may use."""
    async with harness(tmp_path, llm, bot={"admins": ["test:7"]}) as bot:
        admin = await bot.command("/help")
        member = await bot.command("/help", chat=GROUP, sender_id="8")
        who = await bot.command("/whoami", chat=GROUP, sender_id="8")
    assert who == 'You are test:8 (to make you an admin: admins = ["test:8"] under [bot]).'
    assert admin.splitlines() == [
        "Commands you can use here:",
        "/help — the commands you can use",
        "/summary list | show [N] | pop | restore | run [YYYY-MM-DD] — the memory summaries: "
        "list, show one, pop, restore, write one now",
        "/pop — remove the newest memory summary",
        "/prompt — show the effective system prompt",
        "/recall <question> — show what memory recall finds for a question",
        "/status — pacing, waiting messages, queued replies, LLM errors, what today cost",
        "/people — the people of this chat with their fact counts",
        "/facts <user id> — one person's remembered facts, each with its id",
        "/forget <fact id> — forget one fact by its id",
        "/forgetme — forget every fact about you in this chat",
        "/trace [N] — how the bot answered a batch (1 = the newest)",
        "/stickers — the stickers this chat's collection holds",
        "/sticker ban <id> — ban a sticker: never offered or sent again",
        "/later [cancel <id>] — the reminders and follow-ups pending here; cancel one by its id",
        "/quiet [hours | off] — no openers or follow-ups here for N hours (default 24); /quiet off",
        "/bot [off | on] — stop serving this chat (nothing stored or answered), or start again",
        "/tools — the tools this chat is offered, and each tool server's state",
        "/whoami — your id here, as bot.admins names an admin",
    ]
    assert member.splitlines() == [
        "Commands you can use here:",
        "/help — the commands you can use",
        "/forgetme — forget every fact about you in this chat",
        "/later [cancel <id>] — the reminders and follow-ups pending here; cancel one by its id",
        "/whoami — your id here, as bot.admins names an admin",
    ]
    assert llm.requests == []


async def test_answers_and_refusals_follow_bot_language(tmp_path: Path, llm: FakeLLMServer) -> None:
    """With bot.language = "zh" a refusal, a usage line and /help are in Chinese."""
    async with harness(tmp_path, llm, bot={"admins": ["test:7"], "language": "zh"}) as bot:
        refusal = await bot.command("/status", chat=GROUP, sender_id="8")
        usage = await bot.command("/recall", chat=PRIVATE)
        listing = await bot.command("/help", chat=GROUP, sender_id="8")
    assert refusal == "抱歉，只有管理员可以使用这个命令。"
    assert usage == "用法：/recall <问题>，例如 /recall 昨天聊了什么"
    assert listing.splitlines() == [
        "你在这里可以用的命令：",
        "/help — 列出你可以用的命令",
        "/forgetme — 忘掉这个聊天里关于你的所有事实",
        "/later [cancel <id>] — 这里待办的提醒和回访；按编号取消一个",
        "/whoami — 你在这里的 id，即 bot.admins 里写管理员的方式",
    ]


def test_every_command_is_in_the_commands_doc() -> None:
    """docs/commands.md's admin command table has a row for every command of the menu."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "commands.md").read_text("utf-8")
    table = text.split("## Admin commands", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `/")]
    names = {span[1:].split()[0] for row in rows for span in row.split("`")[1::2]}
    assert sorted(names) == sorted(command.name for command in MENU)
