"""Where adapters deliver what chatters write: commands to the runner, the rest to the story.

A command is never stored, never sent to the LLM and never resets a debounce timer: it
runs in a task of its own (``/summary run`` waits for the LLM, and the adapter must go on
storing messages meanwhile) and its answer goes straight to the platform, quoting the
command. Everything else goes to the :class:`~bot.pipeline.Pipeline`. When a platform
connects, what it holds in its history and the store misses is fetched back
(:class:`~bot.backfill.Backfill`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

from loguru import logger

from bot.access import Access
from bot.backfill import Backfill
from bot.commands.call import Command
from bot.commands.menu import parse_command
from bot.commands.runner import CommandRunner
from bot.models import ChatKey, IncomingMessage
from bot.ports import MessageSink, Platform
from bot.replies.items import Text
from bot.tasks import start_task


class Story(MessageSink, Protocol):
    """What the inbox hands chat messages to (the pipeline): it also answers everything
    waiting on demand, and stops."""

    async def drain(self) -> None:
        """Answer everything waiting now and wait until all replies are sent."""
        ...

    async def stop(self) -> None:
        """Stop taking messages; unanswered batches wait for the next start."""
        ...


class Inbox:
    """Take what the platforms deliver (the ``MessageSink`` adapters talk to)."""

    def __init__(
        self,
        pipeline: Story,
        commands: CommandRunner,
        platforms: Mapping[str, Platform],
        *,
        access: Access,
        backfill: Backfill | None = None,
    ) -> None:
        self._access = access
        self._pipeline = pipeline
        self._commands = commands
        self._platforms = platforms
        self._backfill = backfill
        self._running: set[asyncio.Task[None]] = set()
        self._stopping = False

    async def receive_many(self, messages: Sequence[IncomingMessage]) -> None:
        """Start the commands among ``messages``; hand the rest to the pipeline in one go."""
        chat_messages: list[IncomingMessage] = []
        for message in messages:
            parsed = parse_command(message.text)
            if parsed is None:
                chat_messages.append(message)
            elif not self._stopping and self._access.refusal(message, command=True) is None:
                start_task(
                    self._answer(message, *parsed),
                    name=f"command:{message.chat}",
                    failure="command failed",
                    owner=self._running,
                    chat=str(message.chat),
                )
        await self._pipeline.receive_many(chat_messages)

    async def receive_edit(self, chat: ChatKey, message_id: str, text: str) -> None:
        """Keep the edited text; an edit never starts a second answer."""
        await self._pipeline.receive_edit(chat, message_id, text)

    def platform_ready(self, platform: str) -> None:
        """Send what waits for ``platform`` now, not after the retry back-off; fetch back
        what it holds that was missed meanwhile, if it keeps a history."""
        self._pipeline.platform_ready(platform)
        if self._backfill is not None and not self._stopping:
            self._backfill.connected(platform)

    async def _answer(self, message: IncomingMessage, command: Command, args: list[str]) -> None:
        """Run a command and post its answer (best-effort: a lost answer loses nothing)."""
        answer = await self._commands.run(message, command, args)
        platform = self._platforms.get(message.chat.platform)
        if platform is None:
            return
        if len(answer) > platform.text_limit:
            answer = answer[: platform.text_limit - 1] + "…"
        reply = Text(answer, reply_to=message.message_id)
        try:  # it answers the command: a passive reply where replies must name a message
            await platform.send(message.chat, reply, answers=message.message_id)
        except Exception as exc:  # a command answer is best-effort
            logger.bind(chat=str(message.chat)).warning("command answer not sent: {}", exc)

    async def drain(self) -> None:
        """Answer every command and everything waiting now; wait until all is sent."""
        while True:
            await asyncio.gather(*self._running, return_exceptions=True)
            await self._pipeline.drain()
            if not self._running:
                return

    async def stop(self) -> None:
        """Stop taking commands and messages; unanswered batches wait for the next start."""
        self._stopping = True
        if self._backfill is not None:
            await self._backfill.stop()
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self._pipeline.stop()
