"""Run a command: check who may, pick the chat it acts on, call its handler.

Admins are named by numeric platform id in ``bot.admins`` (a display name can be forged,
an id cannot); the console user always is one. From a private chat an admin may name
another chat key as the last argument (a forum topic's too), read by :meth:`ChatKey.named`
as the dashboard and the command line read one. Answers are in ``bot.language`` (:mod:`bot.texts`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.commands.call import Call, Command
from bot.commands.menu import parse_command
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.models import ChatKey, IncomingMessage
from bot.ops import Ops
from bot.texts import Texts


class CommandRunner:
    """Check who may run a command, pick the chat it acts on, and run it."""

    def __init__(self, config: Settings, ops: Ops) -> None:
        self._config = config
        self._ops = ops

    @staticmethod
    def is_command(text: str) -> bool:
        """Tell whether ``text`` runs a command (a known ``/name``), not chat text."""
        return parse_command(text) is not None

    def is_admin(self, message: IncomingMessage) -> bool:
        """Admins are named by numeric platform id; the console user always is one."""
        return self._config.is_admin(message.chat, message.sender_id)

    async def run(self, message: IncomingMessage, command: Command, args: Sequence[str]) -> str:
        """Run ``command`` for ``message``'s sender and return the answer text."""
        admin = self.is_admin(message)
        say = Texts(self._config.for_chat(message.chat).language)
        if not command.allowed(admin=admin, group=message.chat.is_group):
            if command.anyone:  # only in a group
                return say("refusal_in_group", name=command.name)
            return say("refusal")
        chat = message.chat
        if args and not command.anyone and not chat.is_group:
            try:
                named = ChatKey.named(args[-1])
            except ConfigError as exc:
                return str(exc)
            if named is not None:
                chat, args = named, args[:-1]
        call = Call(
            chat=chat,
            args=tuple(args),
            who=f"{message.chat.platform}:{message.sender_id}",
            sender_id=message.sender_id,
            title=message.chat_title if chat == message.chat else None,
            admin=admin,
            ops=self._ops,
            config=self._config,
            say=say,
        )
        return await command.handler(call)
