"""Chat with the bot in the terminal, through the same pipeline as every platform.

The console user is ``console:private:local`` and always an admin. End the input
(Ctrl-D) to let the bot answer what is waiting and exit; Ctrl-C exits at once, saying
what is left for the next start. Standard input need not be a terminal: a pipe, a file
or ``/dev/null`` is read to its end, then what waits is answered. Lines that do not come
from a terminal are printed as the user's (``you: …``), so the transcript reads as a
conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import time
from datetime import UTC, datetime
from typing import TextIO

from bot.errors import MessageRefused
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ops.status import StatusOps
from bot.ports import MessageSink, PacingLimits
from bot.replies.items import ItemKind, Outgoing, Text
from bot.texts import Texts

CONSOLE_CHAT = ChatKey("console", ChatKind.PRIVATE, "local")
_DIM, _RESET, _CLEAR_LINE = "\x1b[2m", "\x1b[0m", "\r\x1b[K"


class ConsolePlatform:
    """A ``Platform`` that prints to a terminal and reads lines from it."""

    name = "console"
    text_limit = 4096
    typing_refresh_s: float | None = 4.0
    limits = PacingLimits(chat_interval_s=0.0, group_per_minute=1000, overall_per_s=1000.0)

    def __init__(
        self,
        *,
        bot_name: str,
        texts: Texts,
        user_name: str = "you",
        out: TextIO | None = None,
        echo_input: bool = False,
    ) -> None:
        self._bot_name = bot_name
        self._texts = texts
        self._user_name = user_name
        self._echo_input = echo_input  # the terminal shows what is typed; a file does not
        self._out = out or sys.stdout
        self._tty = self._out.isatty()
        self._typing_shown = False
        self._waiting_shown = False  # the "waiting for you to finish" line of this wait

    def kinds(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Texts: a terminal shows nothing else."""
        return frozenset({ItemKind.CONTENT})

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        """Print the bot's message (a terminal shows only texts)."""
        if not isinstance(item, Text):
            msg = f"a {item.kind} item cannot be shown in the console"
            raise MessageRefused(msg)
        self._clear_typing()
        self._waiting_shown = False
        self._out.write(f"{self._bot_name}: {item.content}\n")
        self._out.flush()
        return f"bot-{time.time_ns()}"

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Print a typing line once per wait (erased before the next message on a TTY)."""
        self._waiting_shown = False
        if self._typing_shown:
            return
        self._typing_shown = True
        line = f"{self._bot_name} is typing…"
        self._out.write(f"{_DIM}{line}{_RESET}" if self._tty else f"({line})\n")
        self._out.flush()

    def say(self, name: str, **fields: object) -> None:
        """Print one of the console's own lines (dim on a terminal)."""
        self._clear_typing()
        line = self._texts(name, bot=self._bot_name, **fields)
        self._out.write(f"{_DIM}{line}{_RESET}\n" if self._tty else f"{line}\n")
        self._out.flush()

    def show_banner(self) -> None:
        """Say who you are and how to leave."""
        self.say("console_banner", chat=CONSOLE_CHAT)

    def show_no_dashboard(self, url: str) -> None:
        """Say that ``[web] enabled`` serves nothing here: only ``pacebot run`` serves it."""
        self.say("console_no_dashboard", url=url)

    async def show_left_waiting(self, status: StatusOps) -> None:
        """On leaving early, say how many messages are left for the next start, if any."""
        count = await status.waiting_messages(CONSOLE_CHAT)
        if count:
            self.say("console_left_waiting", count=count)

    def _clear_typing(self) -> None:
        if self._typing_shown and self._tty:
            self._out.write(_CLEAR_LINE)
        self._typing_shown = False

    def message(self, text: str) -> IncomingMessage:
        """Wrap one typed line as a message from the console user."""
        return IncomingMessage(
            chat=CONSOLE_CHAT,
            message_id=str(time.time_ns()),  # unique across restarts, as ids must be
            sender_id="local",
            sender_name=self._user_name,
            text=text,
            sent_at=datetime.now(UTC),
            addresses_bot=True,
        )

    async def read_input(
        self, inbox: MessageSink, status: StatusOps, stream: asyncio.StreamReader
    ) -> None:
        """Feed each non-empty input line to ``inbox`` until the input ends.

        Once the bot starts waiting for more, say so, once per wait.
        """
        while line := await stream.readline():
            text = line.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            if self._echo_input:
                self._clear_typing()
                self._out.write(f"{self._user_name}: {text}\n")
                self._out.flush()
            await inbox.receive_many((self.message(text),))
            if not self._waiting_shown and await status.waiting_messages(CONSOLE_CHAT):
                self._waiting_shown = True
                self.say("console_waiting")


async def stdin_reader() -> asyncio.StreamReader:
    """Return an asyncio reader over standard input: a terminal, a pipe, a file, /dev/null.

    The loop can watch a terminal, a pipe or a socket. Anything else (a regular file,
    ``/dev/null``, which epoll refuses with EPERM) is read to its end at once.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    if _is_watchable(sys.stdin):
        protocol = asyncio.StreamReaderProtocol(reader)
        await loop.connect_read_pipe(lambda: protocol, sys.stdin)
        return reader
    with contextlib.suppress(OSError, ValueError, AttributeError):  # closed: no input at all
        reader.feed_data(sys.stdin.buffer.read())
    reader.feed_eof()
    return reader


def stdin_is_terminal() -> bool:
    """Tell whether standard input is a terminal (which shows what is typed itself)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


def _is_watchable(stream: TextIO | None) -> bool:
    if stream is None:  # started with standard input closed
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stream.isatty() or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
