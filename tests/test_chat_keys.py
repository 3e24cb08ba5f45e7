"""The one grammar of a chat key as a person writes it: what names a chat, what is only an
argument, and what is a chat key written wrong, the same for the commands, the dashboard
and the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import HTTPException

from adapters.cli import main
from adapters.web.depends import chat_key
from bot.errors import ConfigError
from bot.models import ChatKey, ChatKind

FORM = "is not of the form platform:kind:id"


def refusal(text: str) -> str:
    """Return the words a chat key written wrong is refused with."""
    return (
        f"chat key {text!r} {FORM} "
        "(e.g. telegram:private:123, qq:group:456, telegram:group:-100123:7 for a topic)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("telegram:private:123", ChatKey("telegram", ChatKind.PRIVATE, "123")),
        ("telegram:group:-100123", ChatKey("telegram", ChatKind.GROUP, "-100123")),
        ("telegram:group:-100123:7", ChatKey("telegram", ChatKind.GROUP, "-100123", "7")),
        ("qq:group:456", ChatKey("qq", ChatKind.GROUP, "456")),
        ("console:private:local", ChatKey("console", ChatKind.PRIVATE, "local")),
    ],
)
def test_a_chat_key_names_its_chat(text: str, expected: ChatKey) -> None:
    """A chat key, a forum topic's too, names the chat it is the text of."""
    assert (ChatKey.named(text), str(expected)) == (expected, text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-05-01",
        "3",
        "pop",
        "昨天聊了什么",
        "10:30",
        "10:30:00",
        "https://example.com:8080/x",
        "telegram:channel:1",
        "",
    ],
)
def test_an_argument_names_no_chat(text: str) -> None:
    """A date, a number, a word, a time or a URL is an argument, not a chat key."""
    assert ChatKey.named(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "qq:group:",
        "qq:group",
        "QQ:group:456",
        "qq:Group:456",
        "telegram:group:-100123:7:8",
        "telegram:group:-100123:general",
        "test:private:42' OR '1'='1",
        "test:private:../../etc/passwd",
        ":private:1",
    ],
)
def test_a_chat_key_written_wrong_is_an_error_naming_the_form(text: str) -> None:
    """Text meant as a chat key (its second part private or group) that breaks the grammar
    is refused with the expected form, never taken as an argument."""
    with pytest.raises(ConfigError) as caught:
        ChatKey.named(text)
    assert str(caught.value) == refusal(text)


def test_an_error_shows_only_the_start_of_a_long_text() -> None:
    """A kilobyte-long bad key is shown by its first 80 characters, not echoed whole."""
    text = "qq:group:" + "x" * 5000
    with pytest.raises(ConfigError) as caught:
        ChatKey.from_text(text)
    assert str(caught.value).startswith(f"chat key {text[:80] + '…'!r} {FORM}")


def test_where_a_chat_key_is_required_an_argument_is_refused() -> None:
    """``from_text`` returns the chat a key names and refuses text that names none."""
    with pytest.raises(ConfigError, match=FORM):
        ChatKey.from_text("telegram:channel:1")
    assert ChatKey.from_text("qq:private:789") == ChatKey("qq", ChatKind.PRIVATE, "789")


def dashboard_reads(text: str) -> str:
    """Return the chat the dashboard's ``{chat}`` reads from ``text``, or its refusal."""
    try:
        return str(chat_key(text))
    except HTTPException as exc:
        return f"{exc.status_code} {exc.detail}"


def cli_reads(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``pacebot trace --chat text``; return the chat it answered for, or its refusal."""
    config = tmp_path / "config.toml"
    config.write_text('[bot]\ndata_dir = "data"\n', encoding="utf-8")
    try:
        main(["trace", "-c", str(config), "--chat", text])
    except SystemExit as exit_:
        return f"exit {exit_.code}: {capsys.readouterr().err.splitlines()[-1]}"
    return capsys.readouterr().out.strip().removeprefix("No batch of ").split(" has ")[0]


@pytest.mark.parametrize(
    ("text", "names_a_chat"),
    [
        ("telegram:group:-100123:7", True),
        ("qq:group:456", True),
        ("telegram:group:-100123:x", False),
        ("2026", False),
    ],
)
def test_the_dashboard_and_the_command_line_read_a_chat_key_alike(
    text: str, names_a_chat: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dashboard and ``pacebot trace --chat`` take the chats the grammar names, and
    refuse, with the same words, any text it does not take for a chat key."""
    seen = (dashboard_reads(text), cli_reads(text, tmp_path, capsys))
    refused = (
        f"400 {refusal(text)}",
        f"exit 2: pacebot trace: error: argument --chat: {refusal(text)}",
    )
    assert seen == ((text, text) if names_a_chat else refused)
