"""Chat with the bot in the terminal, through the same pipeline as every platform.

The console user is ``console:private:local`` and always an admin. End the input
(Ctrl-D) to let the bot answer what is waiting and exit; Ctrl-C exits at once.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from typing import TextIO

from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import MessageSink, PacingLimits

CONSOLE_CHAT = ChatKey("console", ChatKind.PRIVATE, "local")
_DIM, _RESET, _CLEAR_LINE = "\x1b[2m", "\x1b[0m", "\r\x1b[K"


class ConsolePlatform:
    """A ``Platform`` that prints to a terminal and reads lines from it."""

    name = "console"
    text_limit = 4096
    typing_refresh_s: float | None = 4.0
    limits = PacingLimits(chat_interval_s=0.0, group_per_minute=1000, overall_per_s=1000.0)

    def __init__(self, *, bot_name: str, user_name: str = "you", out: TextIO | None = None) -> None:
        self._bot_name = bot_name
        self._user_name = user_name
        self._out = out or sys.stdout
        self._tty = self._out.isatty()
        self._typing_shown = False

    async def send_text(self, chat: ChatKey, text: str, *, reply_to: str | None = None) -> str:
        """Print the bot's message."""
        self._clear_typing()
        self._out.write(f"{self._bot_name}: {text}\n")
        self._out.flush()
        return f"bot-{time.time_ns()}"

    async def show_typing(self, chat: ChatKey) -> None:
        """Print a typing line once per wait (erased before the next message on a TTY)."""
        if self._typing_shown:
            return
        self._typing_shown = True
        line = f"{self._bot_name} is typing…"
        self._out.write(f"{_DIM}{line}{_RESET}" if self._tty else f"({line})\n")
        self._out.flush()

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

    async def read_input(self, sink: MessageSink, stream: asyncio.StreamReader) -> None:
        """Feed each non-empty input line to ``sink`` until the input ends."""
        while line := await stream.readline():
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                await sink.receive_many((self.message(text),))


async def stdin_reader() -> asyncio.StreamReader:
    """Return an asyncio reader over standard input (a TTY, a pipe or a file)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    if sys.stdin.isatty() or not _is_regular_file(sys.stdin):
        await loop.connect_read_pipe(lambda: protocol, sys.stdin)
    else:  # a redirected regular file cannot be watched by the loop: read it at once
        reader.feed_data(sys.stdin.buffer.read())
        reader.feed_eof()
    return reader


def _is_regular_file(stream: TextIO) -> bool:
    import os
    import stat

    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False
