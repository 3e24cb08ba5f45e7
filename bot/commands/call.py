"""One command as it is run: who asked, the chat it acts on, its arguments, what it may use."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from bot.config.settings import Settings
from bot.models import ChatKey
from bot.ops import Ops
from bot.texts import Texts


@dataclass(frozen=True, slots=True)
class Call:
    """A command being run, with everything its handler may read or change."""

    chat: ChatKey  # the chat it acts on: where it was sent, or one an admin named
    args: tuple[str, ...]
    who: str  # "platform:sender id", as audits record it
    sender_id: str
    title: str | None  # the chat's title, when the command was sent in it
    admin: bool
    ops: Ops
    config: Settings
    say: Texts

    def shifted(self) -> Call:
        """Return the call without its first argument (a sub-command's name)."""
        return replace(self, args=self.args[1:])


Handler = Callable[[Call], Awaitable[str]]
"""A command's body: it reads its arguments, asks :mod:`bot.ops`, and returns the answer."""


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the menu: its name, its body, its arguments, whether anyone may use it.

    Its one-line description is the message ``help_<name>`` of :mod:`bot.texts`.
    """

    name: str
    handler: Handler
    usage: str = ""
    anyone: bool = False
    admins_in_groups: bool = False  # anyone in a private chat, only admins in a group

    def allowed(self, *, admin: bool, group: bool) -> bool:
        """Tell whether a sender, admin or not, may use the command in a group or a private
        chat (``/help`` offers only those)."""
        return admin or (self.anyone and not (group and self.admins_in_groups))
