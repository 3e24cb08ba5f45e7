"""Admin slash commands: answered directly, never sent to the LLM, never reset a timer.

Only known command names are taken as commands; any other ``/word`` (Telegram's
``/start``, say) is ordinary chat text. Admins are named by numeric platform id in
``bot.admins``; a display name can be forged, an id cannot. ``/forgetme`` is the one
command anyone may use: it acts only on its sender, in the chat it is sent in. The
people commands live in ``people_commands.py``, ``/trace`` in ``trace_commands.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Protocol

from bot import people_commands, trace_commands
from bot.config import Config
from bot.errors import ConfigError, LLMError
from bot.memory import Memory, SummaryResult
from bot.models import ChatKey, IncomingMessage, SummaryRecord
from bot.prompt import estimate_tokens
from bot.trace import ShownTrace

REFUSAL = "Sorry, only admins can use that command."
LIST_MAX = 30  # summaries /summary list names one by one, newest first
_FIRST_LINE_CHARS = 40

MENU: tuple[tuple[str, str], ...] = (
    ("summary", "list | show [N] | pop | restore | run [YYYY-MM-DD]"),
    ("pop", "remove the newest memory summary"),
    ("prompt", "show the effective system prompt"),
    ("recall", "show what memory recall finds for a question"),
    ("status", "pacing, waiting messages, queued replies, LLM errors"),
    ("people", "the people of this chat with their fact counts"),
    ("facts", "one person's remembered facts: /facts <user id>"),
    ("forget", "forget one fact: /forget <fact id>"),
    ("forgetme", "forget every fact about you in this chat (anyone)"),
    ("trace", "how the bot answered a batch: /trace [N]"),
)
"""The command menu a platform may publish: (name, short description)."""


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

    def is_admin(self, message: IncomingMessage) -> bool:
        """Admins are named by numeric platform id; the console user always is one."""
        platform = message.chat.platform
        return platform == "console" or f"{platform}:{message.sender_id}" in self.config.bot.admins

    async def run(self, message: IncomingMessage, name: str, args: list[str]) -> str:
        """Run command ``name`` for ``message``'s sender and return the answer text."""
        anyone = name in ANYONE
        if not anyone and not self.is_admin(message):
            return REFUSAL
        chat = message.chat
        if args and not anyone and not chat.is_group and args[-1].count(":") == 2:
            try:
                chat = ChatKey.parse(args[-1])
            except ConfigError as exc:
                return str(exc)
            args = args[:-1]
        who = f"{message.chat.platform}:{message.sender_id}"
        title = message.chat_title if chat == message.chat else None
        call = _Call(chat, args, who, title, sender_id=message.sender_id)
        return await _HANDLERS[name](self, call)


class _Call:
    __slots__ = ("args", "chat", "sender_id", "title", "who")

    def __init__(
        self, chat: ChatKey, args: list[str], who: str, title: str | None, *, sender_id: str
    ) -> None:
        self.chat = chat
        self.args = args
        self.who = who  # "platform:sender id", as audits record it
        self.title = title  # the chat's title, when the command was sent in it
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


async def _status(runner: CommandRunner, call: _Call) -> str:
    pacing = runner.config.pacing
    host = runner.host
    errors = await host.llm_errors_since(runner.now() - timedelta(hours=1))
    return "\n".join(
        [
            f"chat: {call.chat}",
            f"debounce: {pacing.debounce_min_s:g}–{pacing.debounce_max_s:g} s, "
            f"max wait {pacing.max_wait_s:g} s, max batch {pacing.max_batch}",
            f"reply delays: up to {pacing.max_delay_s:g} s",
            f"on new message: {pacing.on_new_message}",
            f"group reply mode: {runner.config.groups.reply_mode}",
            f"waiting messages: {host.waiting_messages(call.chat)}",
            f"queued replies: {await host.queued_replies(call.chat)}",
            f"LLM errors in the last hour: {errors}",
        ]
    )


async def _prompt(runner: CommandRunner, call: _Call) -> str:
    prompt = await runner.host.system_prompt(call.chat, title=call.title)
    return f"system prompt of {call.chat}, ~{estimate_tokens(prompt)} tokens:\n\n{prompt}"


async def _summary_list(runner: CommandRunner, call: _Call) -> str:
    persona = await runner.memory.persona(call.chat)
    stack = await runner.memory.stack(call.chat)
    if not stack:
        return (
            f"{call.chat} has no summaries yet: the prompt is the initial persona "
            f"(~{persona.tokens} tokens)."
        )
    in_prompt = {r.id for r in persona.kept}
    # Totals first: a year of summaries does not fit one message, the newest do.
    lines = [
        f"memory of {call.chat}: {len(stack)} summaries, {len(persona.kept)} in the prompt "
        f"(persona with summaries ~{persona.tokens} tokens); newest first:"
    ]
    newest = stack[::-1][:LIST_MAX]
    for number, record in enumerate(newest, start=1):
        mark = "" if record.id in in_prompt else " (recall only)"
        tokens = estimate_tokens(record.added_prompt)
        lines.append(f"{number}. {record.day} · {_first_line(record)} · ~{tokens} tok{mark}")
    if len(stack) > len(newest):
        lines.append(
            f"… and {len(stack) - len(newest)} older, back to {stack[0].day}"
            " (/summary show N shows any of them)"
        )
    return "\n".join(lines)


async def _summary_show(runner: CommandRunner, call: _Call) -> str:
    stack = await runner.memory.stack(call.chat)
    if not stack:
        return f"{call.chat} has no summaries yet."
    try:
        number = int(call.args[0]) if call.args else 1
    except ValueError:
        return "usage: /summary show [N], N = 1 for the newest"
    if not 1 <= number <= len(stack):
        return f"there are {len(stack)} summaries: choose N from 1 (newest) to {len(stack)}"
    record = stack[-number]
    content = record.content
    parts = [f"{record.day} ({record.message_count} messages)", content.summary]
    if content.key_points:
        parts.append("key points:\n" + "\n".join(f"- {p}" for p in content.key_points))
    if content.topics:
        parts.append("topics: " + ", ".join(content.topics))
    if content.keywords:
        parts.append("keywords: " + ", ".join(content.keywords))
    return "\n\n".join(parts)


async def _summary_pop(runner: CommandRunner, call: _Call) -> str:
    popped = await runner.memory.pop(call.chat, by=call.who)
    if popped is None:
        return "Nothing to pop: only the initial persona is left."
    remaining = await runner.memory.stack(call.chat)
    newest = f", the newest from {remaining[-1].day}" if remaining else ""
    return (
        f"Popped the summary of {popped.day}. {len(remaining)} summaries remain{newest}. "
        "/summary restore undoes this."
    )


async def _summary_restore(runner: CommandRunner, call: _Call) -> str:
    restored = await runner.memory.restore(call.chat)
    if restored is None:
        return "Nothing to restore: nothing was popped, or a newer summary was pushed since."
    return f"Restored the summary of {restored.day}."


async def _summary_run(runner: CommandRunner, call: _Call) -> str:
    today = runner.memory.today()
    if call.args:
        try:
            day = date.fromisoformat(call.args[0])
        except ValueError:
            return "usage: /summary run [YYYY-MM-DD] (default: yesterday)"
    else:
        day = today - timedelta(days=1)
    if day > today:
        return f"{day} has not happened yet."
    try:
        result = await runner.memory.summarise(call.chat, day, on_purpose=True)
    except LLMError:
        return f"The summary of {day} failed (the LLM did not answer usably); try again later."
    if result is SummaryResult.ALREADY:
        return f"{day} already has a summary; /pop it first to write it again."
    if result is SummaryResult.NOTHING:
        return f"Nobody wrote in {call.chat} on {day}: nothing to summarise."
    return f"Summarised {day}; it is now the newest memory. /summary show to read it."


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
        return "usage: /summary list | show [N] | pop | restore | run [YYYY-MM-DD]"
    rest = _Call(call.chat, call.args[1:], call.who, call.title, sender_id=call.sender_id)
    return await handler(runner, rest)


async def _recall(runner: CommandRunner, call: _Call) -> str:
    question = " ".join(call.args).strip()
    if not question:
        return "usage: /recall <question>, e.g. /recall 昨天聊了什么"
    # What a batch asking this would get: summaries already in the persona are not repeated.
    persona = await runner.memory.persona(call.chat)
    recalled = await runner.memory.recall(call.chat, [question], persona=persona)
    in_prompt = _in_prompt(recalled.days, [r.day for r in persona.kept])
    if not recalled.records:
        days = (
            f" (dates asked about: {', '.join(map(str, recalled.days))})" if recalled.days else ""
        )
        return f"Nothing recalled for that question{days}.\n{in_prompt}"
    return f"Recalled by {recalled.how}:\n\n{recalled.render()}\n\n{in_prompt}"


def _in_prompt(asked: Sequence[date], kept: Sequence[date]) -> str:
    """Say which days the persona already holds, the ones asked about first."""
    if not kept:
        return "No summary is in the prompt yet."
    held = [day for day in asked if day in kept]
    lead = f"Already in the prompt, so not repeated: {', '.join(map(str, held))}. " if held else ""
    span = f"{kept[0]} … {kept[-1]}" if len(kept) > 1 else str(kept[0])
    return f"{lead}The prompt holds the summaries of {len(kept)} day(s): {span}."


_HANDLERS: dict[str, Handler] = {
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
ANYONE = frozenset({"forgetme"})
"""Commands anyone may use: they act only on the sender."""
