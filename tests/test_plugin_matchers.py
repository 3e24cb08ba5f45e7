"""Whether a blocking matcher might take a message, read from nonebot's own matchers and
rules (:func:`adapters.plugins.matchers.may_be_taken`): the plugin host waits for the
plugins' verdict only then, and stores everything else at once."""

from __future__ import annotations

import pytest
from nonebot.adapters.onebot.v11 import Message, PrivateMessageEvent
from nonebot.compat import type_validate_python
from nonebot.matcher import Matcher, matchers
from nonebot.rule import CommandRule, Rule, keyword, regex

from adapters.plugins.matchers import may_be_taken

SLASH = {"/"}


@pytest.fixture(autouse=True)
def no_other_matchers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the matchers a test makes count (plugins other tests load stay in nonebot)."""
    monkeypatch.setattr(matchers, "provider", type(matchers.provider)({}))


def command(name: str) -> Rule:
    """``on_command(name)``'s rule (``nonebot.rule.command`` also files the name in the
    command trie of an initialised nonebot, which the host reads nothing from)."""
    return Rule(CommandRule([(name,)]))


def make(rule: Rule | None = None, *, block: bool = True, kind: str = "message") -> None:
    Matcher.new(kind, rule, block=block, priority=5)


def said(text: str) -> PrivateMessageEvent:
    """A private OneBot v11 message event with ``text``, as the adapter reads one."""
    return type_validate_python(
        PrivateMessageEvent,
        {
            "time": 1_700_000_000,
            "self_id": 10001,
            "post_type": "message",
            "sub_type": "friend",
            "user_id": 42,
            "message_type": "private",
            "message_id": 1,
            "message": Message(text),
            "original_message": Message(text),
            "raw_message": text,
            "font": 0,
            "sender": {"user_id": 42, "nickname": "路人甲"},
            "to_me": True,
        },
    )


def test_a_blocking_command_contests_only_text_holding_a_start_and_its_name() -> None:
    make(command("天气"))
    verdicts = [may_be_taken(said(t), command_start=SLASH) for t in ("今天真热", "/天气 杭州")]
    assert verdicts == [False, True]


def test_an_empty_command_start_makes_the_name_alone_enough() -> None:
    make(command("天气"))
    verdicts = [may_be_taken(said(t), command_start={"", "/"}) for t in ("今天真热", "天气怎么样")]
    assert verdicts == [False, True]


def test_a_blocking_keyword_contests_only_text_holding_it() -> None:
    make(keyword("抽签"))
    verdicts = [may_be_taken(said(t), command_start=SLASH) for t in ("你好", "帮我抽签")]
    assert verdicts == [False, True]


def test_a_rule_it_cannot_read_contests_everything() -> None:
    """A regex (or an Alconna command, a plugin's own rule) might match any text."""
    make(regex(r"^\d+$"))
    assert may_be_taken(said("你好"), command_start=SLASH)


def test_a_blocking_catch_all_contests_everything() -> None:
    """A matcher with no rule (a session waiting for its user's next line is one)."""
    make()
    assert may_be_taken(said("你好"), command_start=SLASH)


def test_matchers_that_cannot_block_a_message_contest_nothing() -> None:
    """Non-blocking matchers run beside the answer; a notice matcher never sees a message."""
    make(block=False)
    make(kind="notice")
    assert not may_be_taken(said("/天气 你好"), command_start=SLASH)
