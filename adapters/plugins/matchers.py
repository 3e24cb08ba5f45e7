"""Say what sets off each matcher of a plugin, and whether a blocking one might take an event.

Read from the rule checkers nonebot keeps on each matcher class (``on_command``'s
``CommandRule``, ``on_regex``'s ``RegexRule``, an Alconna command's ``AlconnaRule``…):
:func:`matchers_of` for ``pacebot plugin list`` and the dashboard (a plugin's own rule
function is named; a matcher with no rule is "any message", or any event of its type),
and :func:`may_be_taken` for the host, which waits for the plugins' verdict on a message
only when one of them might take it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from nonebot.adapters import Event
from nonebot.matcher import Matcher, matchers
from nonebot.plugin import Plugin
from nonebot.rule import (
    CommandRule,
    EndswithRule,
    FullmatchRule,
    IsTypeRule,
    KeywordsRule,
    RegexRule,
    ShellCommandRule,
    StartswithRule,
    ToMeRule,
)


@dataclass(frozen=True, slots=True)
class MatcherInfo:
    """One matcher of a plugin: what sets it off, its priority, whether it blocks."""

    triggers: tuple[str, ...]  # e.g. ("/status", "/状态"), ("any message",)
    priority: int
    blocks: bool

    def __str__(self) -> str:
        blocking = ", blocks" if self.blocks else ""
        return f"{', '.join(self.triggers)} (priority {self.priority}{blocking})"


def matchers_of(plugin: Plugin, *, command_start: str = "/") -> tuple[MatcherInfo, ...]:
    """Return what sets off each matcher of ``plugin`` and its sub-plugins, by priority."""
    found = [
        MatcherInfo(_triggers(matcher, command_start), matcher.priority, matcher.block)
        for matcher in _matchers(plugin)
    ]
    return tuple(sorted(found, key=lambda info: (info.priority, info.triggers)))


def _matchers(plugin: Plugin) -> Iterable[type[Matcher]]:
    yield from plugin.matcher
    for sub in plugin.sub_plugins:
        yield from _matchers(sub)


def _triggers(matcher: type[Matcher], command_start: str) -> tuple[str, ...]:
    found: list[str] = []
    for checker in matcher.rule.checkers:
        found += _described(checker.call, command_start)
    if found:
        return tuple(found)
    return ("any message",) if matcher.type == "message" else (f"any {matcher.type} event",)


def _described(rule: object, command_start: str) -> list[str]:
    """Describe one rule checker in a few words; nothing for one this module does not know."""
    if isinstance(rule, CommandRule | ShellCommandRule):
        # sorted: a command's aliases are a set, so its order says nothing
        return sorted(command_start + " ".join(command) for command in rule.cmds)
    if isinstance(rule, RegexRule):
        return [f"regex {rule.regex}"]
    if isinstance(rule, StartswithRule):
        return [f"starts with {text!r}" for text in rule.msg]
    if isinstance(rule, EndswithRule):
        return [f"ends with {text!r}" for text in rule.msg]
    if isinstance(rule, FullmatchRule):
        return [repr(text) for text in rule.msg]
    if isinstance(rule, KeywordsRule):
        return [f"keyword {word!r}" for word in rule.keywords]
    if isinstance(rule, IsTypeRule):
        return [" or ".join(kind.__name__ for kind in rule.types)]
    if type(rule).__name__ == "AlconnaRule":
        return [_alconna(rule)]
    if isinstance(rule, ToMeRule):
        return []  # said with the rest: "to the bot" adds nothing to what sets it off
    name = getattr(rule, "__name__", None)
    return [f"rule {name}"] if isinstance(name, str) else []


def _alconna(rule: object) -> str:
    """Name nonebot-plugin-alconna's command, read without importing the plugin."""
    command = getattr(rule, "command", None)
    alconna = command() if callable(command) else None
    name = getattr(alconna, "name", None)
    return f"alconna {name}" if isinstance(name, str) and name else "alconna command"


def may_be_taken(event: Event, *, command_start: Collection[str]) -> bool:
    """Tell whether a blocking matcher might take ``event`` (its rule and permission pass).

    ``False`` only when each blocking matcher for events of its type has a command or
    keyword rule its text cannot meet: no command start followed by the command's first
    word (nonebot reads a command at the start of the text once the bot's @ and name are
    stripped, so it holds that string), no keyword. Any other blocking matcher (a regex,
    an Alconna command, a plugin's own rule, a session waiting for its user's next line)
    might; so might any blocking one when the event has no text.
    """
    kind = event.get_type()
    try:
        text: str | None = event.get_plaintext()
    except Exception:  # an event without a message: only a rule with no text can tell
        text = None
    return any(
        matcher.block
        and matcher.type in ("", kind)
        and not _rules_out(matcher, text, command_start)
        for by_priority in matchers.values()
        for matcher in by_priority
    )


def _rules_out(matcher: type[Matcher], text: str | None, command_start: Collection[str]) -> bool:
    """Whether one of ``matcher``'s rule checkers (all must pass) cannot pass on ``text``."""
    if text is None:
        return False
    for checker in matcher.rule.checkers:
        rule = checker.call
        if isinstance(rule, CommandRule | ShellCommandRule):
            if not any(
                start + command[0] in text
                for command in rule.cmds
                if command
                for start in command_start
            ):
                return True
        elif isinstance(rule, KeywordsRule) and not any(word in text for word in rule.keywords):
            return True
    return False
