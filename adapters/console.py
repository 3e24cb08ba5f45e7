"""Chat with the bot in the terminal, through the same pipeline as every platform.

The console user is ``console:private:local`` and always an admin. End the input
(Ctrl-D) to let the bot answer what is waiting and exit; Ctrl-C exits at once, saying
what is left for the next start. At a terminal, lines are edited as in a shell
(prompt_toolkit: arrow keys, history, wide characters and an input method's cursor), the
bot's lines and "is typing…" are shown above and beside the line being typed, never in
it, and the prompt is in ``bot.language``. Standard input need not be a terminal: a
pipe, a file or ``/dev/null`` is read to its end, then what waits is answered. Lines
that do not come from a terminal are printed as the user's (``you: …``), so the
transcript reads as a conversation, and answered in their order: a command waits until
what was written before it is answered, and is answered before the next line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import sys
import time
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Protocol, TextIO
from zoneinfo import ZoneInfo

from bot.commands.menu import parse_command
from bot.errors import MessageRefused
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ops.status import StatusOps
from bot.ports import MessageSink, PacingLimits
from bot.replies.items import ItemKind, Outgoing, Text
from bot.tasks import start_task
from bot.texts import Texts

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

CONSOLE_CHAT = ChatKey("console", ChatKind.PRIVATE, "local")
_DIM, _RESET, _CLEAR_LINE = "\x1b[2m", "\x1b[0m", "\r\x1b[K"


class ConsoleInbox(MessageSink, Protocol):
    """Where the console hands what is typed: the inbox, which can also answer all that
    waits now (a piped command waits for that)."""

    async def drain(self) -> None:
        """Answer every command and everything waiting now; wait until all is sent."""
        ...


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
        user_name: str | None = None,
        out: TextIO | None = None,
        echo_input: bool = False,
        zone: ZoneInfo | None = None,
    ) -> None:
        self._bot_name = bot_name
        self._texts = texts
        self._user_name = user_name or texts("console_you")
        self._echo_input = echo_input  # the terminal shows what is typed; a file does not
        self._given_out = out
        self._tty = self._out.isatty()
        self._zone = zone
        self._typing_shown = False
        self._waiting_shown = False  # the "waiting for you to finish" line of this wait
        self._silent_on: date | None = None  # the chat day the hard cap was last told
        self._prompt: PromptSession[str] | None = None  # while lines are edited

    @property
    def _out(self) -> TextIO:
        # Looked up on each write: while a line is edited, prompt_toolkit puts a proxy in
        # sys.stdout that prints above that line.
        return self._given_out or sys.stdout

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
        self._silent_on = None  # it speaks again: the next hard cap is told again
        self._out.write(f"{self._bot_name}: {item.content}\n")
        self._out.flush()
        return f"bot-{time.time_ns()}"

    async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
        """Show that the bot is typing once per wait: beside the line being edited, or as
        a line (erased before the next message on a TTY)."""
        self._waiting_shown = False
        if self._typing_shown or self._silent_on is not None:  # over the hard cap: no answer
            return
        self._typing_shown = True
        if self._prompt is not None:
            self._prompt.app.invalidate()  # redraws the right prompt: "… is typing"
            return
        line = self._texts("console_typing", bot=self._bot_name)
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
        if self._prompt is not None:
            if self._typing_shown:
                self._prompt.app.invalidate()
        elif self._typing_shown and self._tty:
            self._out.write(_CLEAR_LINE)
        self._typing_shown = False

    def _typing_beside(self) -> str:
        """What stands right of the line being edited: that the bot is typing, or nothing."""
        return self._texts("console_typing", bot=self._bot_name) if self._typing_shown else ""

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
        self,
        inbox: ConsoleInbox,
        status: StatusOps,
        stream: asyncio.StreamReader | None = None,
    ) -> None:
        """Feed each non-empty input line to ``inbox`` until the input ends.

        From a terminal (both ends), lines are edited with prompt_toolkit; otherwise
        ``stream`` (standard input by default) is read line by line. Once the bot starts
        waiting for more, say so, once per wait.
        """
        if stream is None and stdin_is_terminal() and self._out.isatty():
            await self._edit_lines(inbox, status)
            return
        stream = stream or await stdin_reader()
        while line := await stream.readline():
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                await self._take(text, inbox, status)

    async def _edit_lines(self, inbox: ConsoleInbox, status: StatusOps) -> None:
        """Read lines at a terminal, edited as in a shell, until Ctrl-D; Ctrl-C leaves."""
        from prompt_toolkit import PromptSession  # only a terminal needs it
        from prompt_toolkit.patch_stdout import patch_stdout

        self._prompt = session = PromptSession[str](rprompt=self._typing_beside)
        # Lines are handed over beside the prompt, in their order, so that the prompt is
        # back at once: a key typed meanwhile would meet a terminal in cooked mode.
        typed: asyncio.Queue[str | None] = asyncio.Queue()
        taking = start_task(
            self._take_each(typed, inbox, status),
            name="console:lines",
            failure="a typed line was not taken",
        )
        try:
            with patch_stdout(raw=True):  # the bot's lines go above the one being typed
                while True:
                    try:
                        text = await session.prompt_async(
                            self._texts("console_prompt"), handle_sigint=False
                        )
                    except EOFError:  # Ctrl-D: answer what waits, then leave
                        typed.put_nowait(None)
                        await taking  # the lines typed before it are taken first
                        return
                    except KeyboardInterrupt:  # Ctrl-C at the prompt: as a SIGINT, leave now
                        signal.raise_signal(signal.SIGINT)
                        await asyncio.Event().wait()  # until the console stops this task
                    if text.strip():
                        typed.put_nowait(text.strip())
        finally:
            taking.cancel()
            self._prompt = None

    async def _take_each(
        self, typed: asyncio.Queue[str | None], inbox: ConsoleInbox, status: StatusOps
    ) -> None:
        """Take each typed line in its order, until the end of the input (``None``)."""
        while (text := await typed.get()) is not None:
            await self._take(text, inbox, status)

    async def _take(self, text: str, inbox: ConsoleInbox, status: StatusOps) -> None:
        """Hand one line to ``inbox``; from a file or a pipe, a command in its turn."""
        in_order = self._echo_input and parse_command(text) is not None
        if in_order:
            await inbox.drain()  # what was written before the command is answered first
        if self._echo_input:
            self._clear_typing()
            self._out.write(f"{self._user_name}: {text}\n")
            self._out.flush()
        await inbox.receive_many((self.message(text),))
        if in_order:
            await inbox.drain()  # the command is answered before the next line
            return
        if not self._waiting_shown and await status.waiting_messages(CONSOLE_CHAT):
            self._waiting_shown = True
            self.say("console_waiting")
        await self._tell_if_silent(status)

    async def _tell_if_silent(self, status: StatusOps) -> None:
        """Over the hard cap, say once a chat day that the bot stays silent, and why."""
        today = (await status.chat(CONSOLE_CHAT)).today
        if not today.standing.hard or self._silent_on == today.standing.day:
            return
        self._silent_on = today.standing.day
        until = today.next_day_at.astimezone(self._zone) if self._zone else today.next_day_at
        self.say("console_silent", cap=today.budget.hard_daily_tokens, until=f"{until:%H:%M}")


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
