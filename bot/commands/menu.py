"""Every command, in the order ``/help`` and a platform's menu show them, and ``/help``.

Only known command names are taken as commands; any other ``/word`` (Telegram's
``/start``, say) is ordinary chat text. Most commands are for admins; ``anyone`` marks
those anyone may use, which act only on their sender in the chat they are sent in (or,
with ``admins_in_groups``, on the whole chat: anyone in a private chat, admins in a group).
"""

from __future__ import annotations

from bot.commands import (
    access,
    initiative,
    people,
    recall,
    status,
    stickers,
    summary,
    tools,
    trace,
)
from bot.commands.call import Call, Command
from bot.texts import Texts


async def help_(call: Call) -> str:
    """List the commands the sender may use, one line each."""
    lines = [call.say("help_header")]
    for command in MENU:
        if command.allowed(admin=call.admin, group=call.chat.is_group):
            usage = f" {command.usage}" if command.usage else ""
            lines.append(f"/{command.name}{usage} — {call.say(f'help_{command.name}')}")
    return "\n".join(lines)


MENU: tuple[Command, ...] = (
    Command("help", help_, anyone=True),
    Command("summary", summary.summary, summary.USAGE),
    Command("pop", summary.pop),
    Command("prompt", status.prompt),
    Command("recall", recall.recall, "<question>"),
    Command("status", status.status),
    Command("people", people.people),
    Command("facts", people.facts, "<user id>"),
    Command("forget", people.forget, "<fact id>"),
    Command("forgetme", people.forgetme, anyone=True),
    Command("trace", trace.trace, "[N]"),
    Command("stickers", stickers.stickers),
    Command("sticker", stickers.sticker, "ban <id>"),
    Command("later", initiative.later, "[cancel <id>]", anyone=True),
    Command("quiet", initiative.quiet, "[hours | off]", anyone=True, admins_in_groups=True),
    Command("bot", access.bot, "[off | on]"),
    Command("tools", tools.tools),
    Command("whoami", access.whoami, anyone=True),
)
_BY_NAME = {command.name: command for command in MENU}


def menu(texts: Texts, *, admin: bool) -> tuple[tuple[str, str], ...]:
    """Return the ``(name, description)`` of each command an admin (or anyone) may use."""
    return tuple(
        (command.name, texts(f"help_{command.name}")) for command in MENU if admin or command.anyone
    )


def find(name: str) -> Command | None:
    """Return the command called ``name``, if there is one."""
    return _BY_NAME.get(name)


def parse_command(text: str) -> tuple[Command, list[str]] | None:
    """Return the command ``text`` runs and its arguments, or ``None`` for chat text."""
    if not text.startswith("/"):
        return None
    words = text[1:].split()
    if not words:
        return None
    command = find(words[0].lower())
    return None if command is None else (command, words[1:])
