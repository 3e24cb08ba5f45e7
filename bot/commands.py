"""Slash commands: answered directly, never sent to the LLM, never reset a timer.

Only known command names are taken as commands; any other ``/word`` (Telegram's
``/start``, say) is ordinary chat text. Most commands are for admins, named by numeric
platform id in ``bot.admins`` (a display name can be forged, an id cannot); ``MENU``
marks the ones anyone may use, which act only on their sender in the chat they are sent
in (``/help``, ``/forgetme``). Answers are in ``bot.language`` (:mod:`bot.texts`). The
people commands live in ``people_commands.py``, ``/trace`` in ``trace_commands.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol

from bot import people_commands, trace_commands
from bot.config import Config
from bot.errors import ConfigError, LLMError
from bot.memory.stack import Memory, SummaryResult
from bot.models import ChatKey, IncomingMessage, SummaryRecord
from bot.prompt import estimate_tokens
from bot.texts import Texts
from bot.trace import ShownTrace

LIST_MAX = 30  # summaries /summary list names one by one, newest first
_FIRST_LINE_CHARS = 40


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the menu: its name, its arguments, and whether anyone may use it.

    Its one-line description is the message ``help_<name>`` of :mod:`bot.texts`.
    """

    name: str
    usage: str = ""
    anyone: bool = False


MENU: tuple[Command, ...] = (
    Command("help", anyone=True),
    Command("summary", "list | show [N] | pop | restore | run [YYYY-MM-DD]"),
    Command("pop"),
    Command("prompt"),
    Command("recall", "<question>"),
    Command("status"),
    Command("people"),
    Command("facts", "<user id>"),
    Command("forget", "<fact id>"),
    Command("forgetme", anyone=True),
    Command("trace", "[N]"),
)
"""Every command, in the order ``/help`` and a platform's menu show them."""


def menu(texts: Texts, *, admin: bool) -> tuple[tuple[str, str], ...]:
    """Return the ``(name, description)`` of each command an admin (or anyone) may use."""
    return tuple(
        (command.name, texts(f"help_{command.name}")) for command in MENU if admin or command.anyone
    )


class CommandHost(Protocol):
    """What commands read from the running pipeline."""

    def waiting_messages(self, chat: ChatKey) -> int: ...

    async def queued_replies(self, chat: ChatKey) -> int: ...

    async def llm_errors_since(self, since: datetime) -> int: ...

    async def system_prompt(self, chat: ChatKey, *, title: str | None) -> str: ...

    async def recent_traces(self, chat: ChatKey, *, count: int) -> list[ShownTrace]: ...


class CommandRunner:
    """Check who may run a command, pick the chat it acts on, and run it."""

    def __init__(
        self,
        config: Config,
        host: CommandHost,
        memory: Memory,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.config = config
        self.host = host
        self.memory = memory
        self.now = now
        self.texts = Texts(config.bot.language)

    def is_admin(self, message: IncomingMessage) -> bool:
        """Admins are named by numeric platform id; the console user always is one."""
        platform = message.chat.platform
        return platform == "console" or f"{platform}:{message.sender_id}" in self.config.bot.admins

    async def run(self, message: IncomingMessage, name: str, args: list[str]) -> str:
        """Run command ``name`` for ``message``'s sender and return the answer text."""
        admin = self.is_admin(message)
        anyone = _ANYONE_MAY[name]
        if not admin and not anyone:
            return self.texts("refusal")
        chat = message.chat
        if args and not anyone and not chat.is_group and args[-1].count(":") == 2:
            try:
                chat = ChatKey.parse(args[-1])
            except ConfigError as exc:
                return str(exc)
            args = args[:-1]
        who = f"{message.chat.platform}:{message.sender_id}"
        title = message.chat_title if chat == message.chat else None
        call = _Call(chat, args, who, title, admin, sender_id=message.sender_id)
        return await _HANDLERS[name](self, call)


class _Call:
    __slots__ = ("admin", "args", "chat", "sender_id", "title", "who")

    def __init__(
        self,
        chat: ChatKey,
        args: list[str],
        who: str,
        title: str | None,
        admin: bool,
        *,
        sender_id: str,
    ) -> None:
        self.chat = chat
        self.args = args
        self.who = who  # "platform:sender id", as audits record it
        self.title = title  # the chat's title, when the command was sent in it
        self.admin = admin  # whether the sender is an admin
        self.sender_id = sender_id


Handler = Callable[[CommandRunner, _Call], Awaitable[str]]


def parse_command(text: str) -> tuple[str, list[str]] | None:
    """Return ``(name, args)`` if ``text`` is a known command, else ``None``."""
    if not text.startswith("/"):
        return None
    words = text[1:].split()
    if not words:
        return None
    name = words[0].lower()
    if name not in _HANDLERS:
        return None
    return name, words[1:]


def _first_line(record: SummaryRecord) -> str:
    line = record.content.summary.strip().splitlines()[0]
    return line if len(line) <= _FIRST_LINE_CHARS else line[: _FIRST_LINE_CHARS - 1] + "…"


async def _help(runner: CommandRunner, call: _Call) -> str:
    lines = [runner.texts("help_header")]
    for command in MENU:
        if call.admin or command.anyone:
            usage = f" {command.usage}" if command.usage else ""
            lines.append(f"/{command.name}{usage} — {runner.texts(f'help_{command.name}')}")
    return "\n".join(lines)


async def _status(runner: CommandRunner, call: _Call) -> str:
    pacing = runner.config.pacing
    host = runner.host
    return runner.texts(
        "status",
        chat=call.chat,
        debounce_min_s=pacing.debounce_min_s,
        debounce_max_s=pacing.debounce_max_s,
        max_wait_s=pacing.max_wait_s,
        max_batch=pacing.max_batch,
        max_delay_s=pacing.max_delay_s,
        on_new_message=pacing.on_new_message,
        reply_mode=runner.config.groups.reply_mode,
        waiting=host.waiting_messages(call.chat),
        queued=await host.queued_replies(call.chat),
        errors=await host.llm_errors_since(runner.now() - timedelta(hours=1)),
    )


async def _prompt(runner: CommandRunner, call: _Call) -> str:
    prompt = await runner.host.system_prompt(call.chat, title=call.title)
    return runner.texts("prompt", chat=call.chat, tokens=estimate_tokens(prompt), prompt=prompt)


async def _summary_list(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    persona = await runner.memory.persona(call.chat)
    stack = await runner.memory.stack(call.chat)
    if not stack:
        return say("summary_list_empty", chat=call.chat, tokens=persona.tokens)
    in_prompt = {r.id for r in persona.kept}
    # Totals first: a year of summaries does not fit one message, the newest do.
    lines = [
        say(
            "summary_list_header",
            chat=call.chat,
            count=len(stack),
            kept=len(persona.kept),
            tokens=persona.tokens,
        )
    ]
    newest = stack[::-1][:LIST_MAX]
    for number, record in enumerate(newest, start=1):
        item = say(
            "summary_list_item",
            number=number,
            day=record.day,
            first_line=_first_line(record),
            tokens=estimate_tokens(record.added_prompt),
        )
        lines.append(item if record.id in in_prompt else item + say("summary_list_recall_only"))
    if len(stack) > len(newest):
        lines.append(say("summary_list_more", count=len(stack) - len(newest), day=stack[0].day))
    return "\n".join(lines)


async def _summary_show(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    stack = await runner.memory.stack(call.chat)
    if not stack:
        return say("summary_none", chat=call.chat)
    try:
        number = int(call.args[0]) if call.args else 1
    except ValueError:
        return say("summary_show_usage")
    if not 1 <= number <= len(stack):
        return say("summary_show_range", count=len(stack))
    record = stack[-number]
    content = record.content
    parts = [say("summary_show_head", day=record.day, count=record.message_count), content.summary]
    if content.key_points:
        points = "\n".join(f"- {p}" for p in content.key_points)
        parts.append(f"{say('summary_show_key_points')}\n{points}")
    if content.topics:
        parts.append(say("summary_show_topics", topics=", ".join(content.topics)))
    if content.keywords:
        parts.append(say("summary_show_keywords", keywords=", ".join(content.keywords)))
    return "\n\n".join(parts)


async def _summary_pop(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    popped = await runner.memory.pop(call.chat, by=call.who)
    if popped is None:
        return say("pop_nothing")
    remaining = await runner.memory.stack(call.chat)
    newest = say("pop_newest", day=remaining[-1].day) if remaining else ""
    return say("pop_done", day=popped.day, count=len(remaining), newest=newest)


async def _summary_restore(runner: CommandRunner, call: _Call) -> str:
    restored = await runner.memory.restore(call.chat)
    if restored is None:
        return runner.texts("restore_nothing")
    return runner.texts("restore_done", day=restored.day)


async def _summary_run(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    today = runner.memory.today()
    if call.args:
        try:
            day = date.fromisoformat(call.args[0])
        except ValueError:
            return say("run_usage")
    else:
        day = today - timedelta(days=1)
    if day > today:
        return say("run_future", day=day)
    try:
        result = await runner.memory.summarise(call.chat, day, on_purpose=True)
    except LLMError:
        return say("run_failed", day=day)
    if result is SummaryResult.ALREADY:
        return say("run_already", day=day)
    if result is SummaryResult.NOTHING:
        return say("run_nothing", chat=call.chat, day=day)
    return say("run_done", day=day)


_SUMMARY_ACTIONS: dict[str, Handler] = {
    "list": _summary_list,
    "show": _summary_show,
    "pop": _summary_pop,
    "restore": _summary_restore,
    "run": _summary_run,
}


async def _summary(runner: CommandRunner, call: _Call) -> str:
    action = call.args[0].lower() if call.args else "list"
    handler = _SUMMARY_ACTIONS.get(action)
    if handler is None:
        return runner.texts("summary_usage")
    rest = _Call(
        call.chat, call.args[1:], call.who, call.title, call.admin, sender_id=call.sender_id
    )
    return await handler(runner, rest)


async def _recall(runner: CommandRunner, call: _Call) -> str:
    say = runner.texts
    question = " ".join(call.args).strip()
    if not question:
        return say("recall_usage")
    # What a batch asking this would get: summaries already in the persona are not repeated.
    persona = await runner.memory.persona(call.chat)
    recalled = await runner.memory.recall(call.chat, [question], persona=persona)
    in_prompt = _in_prompt(say, recalled.days, [r.day for r in persona.kept])
    if not recalled.records:
        days = say("recall_days", days=", ".join(map(str, recalled.days))) if recalled.days else ""
        return say("recall_nothing", days=days) + "\n" + in_prompt
    return say("recall_found", how=recalled.how, records=recalled.render()) + "\n\n" + in_prompt


def _in_prompt(say: Texts, asked: Sequence[date], kept: Sequence[date]) -> str:
    """Say which days the persona already holds, the ones asked about first."""
    if not kept:
        return say("recall_no_summary")
    held = [day for day in asked if day in kept]
    lead = say("recall_already", days=", ".join(map(str, held))) if held else ""
    span = f"{kept[0]} … {kept[-1]}" if len(kept) > 1 else str(kept[0])
    return lead + say("recall_prompt_holds", count=len(kept), span=span)


_HANDLERS: dict[str, Handler] = {
    "help": _help,
    "summary": _summary,
    "pop": _summary_pop,
    "prompt": _prompt,
    "recall": _recall,
    "status": _status,
    "people": people_commands.people,
    "facts": people_commands.facts,
    "forget": people_commands.forget,
    "forgetme": people_commands.forgetme,
    "trace": trace_commands.trace,
}
_ANYONE_MAY = {command.name: command.anyone for command in MENU}
