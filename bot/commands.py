"""Admin slash commands: answered directly, never sent to the LLM, never reset a timer.

Only known command names are taken as commands; any other ``/word`` (Telegram's
``/start``, say) is ordinary chat text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Protocol

from bot.config import Config
from bot.errors import ConfigError
from bot.models import ChatKey, IncomingMessage
from bot.prompt import estimate_tokens

REFUSAL = "Sorry, only admins can use that command."


class CommandHost(Protocol):
    """What commands read from the running bot."""

    def waiting_messages(self, chat: ChatKey) -> int: ...

    async def queued_replies(self, chat: ChatKey) -> int: ...

    async def llm_errors_since(self, since: datetime) -> int: ...

    async def system_prompt(self, chat: ChatKey) -> str: ...


Handler = Callable[["CommandRunner", ChatKey, list[str]], Awaitable[str]]


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


class CommandRunner:
    """Check who may run a command, pick the chat it acts on, and run it."""

    def __init__(self, config: Config, host: CommandHost, *, now: Callable[[], datetime]) -> None:
        self._config = config
        self.host = host
        self.now = now

    def is_admin(self, message: IncomingMessage) -> bool:
        """Admins are named by numeric platform id; the console user always is one."""
        platform = message.chat.platform
        return platform == "console" or f"{platform}:{message.sender_id}" in self._config.bot.admins

    async def run(self, message: IncomingMessage, name: str, args: list[str]) -> str:
        """Run command ``name`` for ``message``'s sender and return the answer text."""
        if not self.is_admin(message):
            return REFUSAL
        chat = message.chat
        if args and not chat.is_group and args[-1].count(":") == 2:
            try:
                chat = ChatKey.parse(args[-1])
            except ConfigError as exc:
                return str(exc)
            args = args[:-1]
        return await _HANDLERS[name](self, chat, args)

    @property
    def config(self) -> Config:
        return self._config


async def _status(runner: CommandRunner, chat: ChatKey, args: list[str]) -> str:
    pacing = runner.config.pacing
    host = runner.host
    errors = await host.llm_errors_since(runner.now() - timedelta(hours=1))
    return "\n".join(
        [
            f"chat: {chat}",
            f"debounce: {pacing.debounce_min_s:g}–{pacing.debounce_max_s:g} s, "
            f"max wait {pacing.max_wait_s:g} s, max batch {pacing.max_batch}",
            f"reply delays: up to {pacing.max_delay_s:g} s",
            f"on new message: {pacing.on_new_message}",
            f"group reply mode: {runner.config.groups.reply_mode}",
            f"waiting messages: {host.waiting_messages(chat)}",
            f"queued replies: {await host.queued_replies(chat)}",
            f"LLM errors in the last hour: {errors}",
        ]
    )


async def _prompt(runner: CommandRunner, chat: ChatKey, args: list[str]) -> str:
    prompt = await runner.host.system_prompt(chat)
    return f"system prompt of {chat}, ~{estimate_tokens(prompt)} tokens:\n\n{prompt}"


_HANDLERS: dict[str, Handler] = {
    "status": _status,
    "prompt": _prompt,
}
