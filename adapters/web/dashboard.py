"""What the dashboard shows and changes, read through the core's ports and the pipeline.

The web layer holds no SQL and no state of its own: each page and API route asks a
:class:`Dashboard`, which asks the running :class:`~bot.pipeline.Pipeline` (each chat's
phase, what waits), the store's ports (chats, messages, failed batches, people's facts,
traces) and the :class:`~bot.memory.Memory` (the prompt stack, forgetting). Every change
it makes is audited: the store records who popped a summary or forgot a fact, and a log
line names who did it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable

from loguru import logger

from bot.conversation import Phase
from bot.memory.stack import Memory
from bot.models import ChatKey, Fact, StoredMessage, SummaryRecord
from bot.pipeline import Pipeline
from bot.ports import MemoryStore, Platform, Store, TraceLog
from bot.prompt import estimate_tokens
from bot.trace import ShownTrace

WHO = "web"
"""Who the audit names for a change made on the dashboard."""
OVERVIEW_CHATS = 20  # the most recently active chats the overview shows
LOG_TAIL_BYTES_MAX = 256 * 1024  # read at most this much of the log's end
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class DashboardStore(Store, MemoryStore, TraceLog, Protocol):
    """The store the dashboard reads: the message ports, the memory's and the traces."""


@runtime_checkable
class Connects(Protocol):
    """A platform that can tell whether it is connected right now."""

    @property
    def is_connected(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class PlatformState:
    """A platform and whether it is connected (``None``: it cannot tell)."""

    name: str
    connected: bool | None


@dataclass(frozen=True, slots=True)
class ChatState:
    """A chat in the overview: its live phase and its latest activity, if any is stored."""

    chat: ChatKey
    phase: Phase
    message_count: int
    last_message_at: datetime | None


@dataclass(frozen=True, slots=True)
class Status:
    """The overview: platforms, what waits, what failed lately, and each chat's phase."""

    platforms: tuple[PlatformState, ...]
    waiting_messages: int
    queued_replies: int
    llm_errors_last_hour: int
    chats: tuple[ChatState, ...]


@dataclass(frozen=True, slots=True)
class StackEntry:
    """One summary on a chat's prompt stack, and whether the prompt still holds it."""

    record: SummaryRecord
    tokens: int
    in_prompt: bool


@dataclass(frozen=True, slots=True)
class PromptStack:
    """A chat's prompt stack, newest first, over the initial persona."""

    chat: ChatKey
    entries: tuple[StackEntry, ...]
    initial_persona: str
    prompt_tokens: int  # the persona with the summaries it holds


@dataclass(frozen=True, slots=True)
class PersonFacts:
    """A person of a chat with their live facts there, newest first."""

    user_id: str
    name: str  # the name under their newest fact
    facts: tuple[Fact, ...]


class Dashboard:
    """Answer the dashboard's questions and carry out its changes."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        store: DashboardStore,
        memory: Memory,
        platforms: Mapping[str, Platform],
        log_file: Path,
        now: Callable[[], datetime],
    ) -> None:
        self._pipeline = pipeline
        self._store = store
        self._memory = memory
        self._platforms = platforms
        self.log_file = log_file
        self._now = now

    async def status(self) -> Status:
        """Return the overview as it is right now."""
        waiting = await self._store.waiting_counts()
        recent = await self._store.chat_activity(limit=OVERVIEW_CHATS)
        live = self._pipeline.live_chats()
        chats = [
            ChatState(a.chat, live.get(a.chat, Phase.IDLE), a.message_count, a.last_message_at)
            for a in recent
        ]
        shown = {a.chat for a in recent}
        chats += [
            ChatState(chat, phase, 0, None) for chat, phase in live.items() if chat not in shown
        ]
        return Status(
            platforms=tuple(
                PlatformState(name, p.is_connected if isinstance(p, Connects) else None)
                for name, p in self._platforms.items()
            ),
            waiting_messages=sum(waiting.values()),
            queued_replies=await self._store.scheduled_count(),
            llm_errors_last_hour=await self._store.failed_batches_since(
                self._now() - timedelta(hours=1)
            ),
            chats=tuple(chats),
        )

    async def chats(self, *, search: str, limit: int) -> list[ChatState]:
        """Return up to ``limit`` chats matching ``search``, the most recently active first."""
        found = await self._store.chat_activity(search=search, limit=limit)
        return [
            ChatState(a.chat, self._pipeline.phase(a.chat), a.message_count, a.last_message_at)
            for a in found
        ]

    def phase(self, chat: ChatKey) -> Phase:
        """Return where ``chat``'s conversation stands."""
        return self._pipeline.phase(chat)

    async def knows(self, chat: ChatKey) -> bool:
        """Tell whether ``chat`` has a stored message or a live conversation."""
        live = self._pipeline.phase(chat) is not Phase.IDLE
        return live or bool(await self.messages(chat, limit=1))

    async def messages(self, chat: ChatKey, *, limit: int) -> list[StoredMessage]:
        """Return the chat's ``limit`` newest messages, chatters' and the bot's, oldest first."""
        end = self._now() + timedelta(days=1)  # a platform's clock may run a little ahead
        return await self._store.messages_between(chat, _EPOCH, end, limit=limit)

    async def prompt_stack(self, chat: ChatKey) -> PromptStack:
        """Return the chat's live summaries, newest first, marking those the prompt holds."""
        persona = await self._memory.persona(chat)
        stack = await self._memory.stack(chat)
        in_prompt = {record.id for record in persona.kept}
        entries = tuple(
            StackEntry(record, estimate_tokens(record.added_prompt), record.id in in_prompt)
            for record in reversed(stack)
        )
        return PromptStack(chat, entries, self._memory.initial_persona, persona.tokens)

    async def pop(self, chat: ChatKey) -> SummaryRecord | None:
        """Pop the chat's newest summary as ``web``; ``None`` when none is left."""
        popped = await self._memory.pop(chat, by=WHO)
        if popped is not None:
            logger.bind(chat=str(chat)).info("summary of {} popped by {}", popped.day, WHO)
        return popped

    async def restore(self, chat: ChatKey) -> SummaryRecord | None:
        """Undo the chat's last pop; ``None`` when nothing can be restored."""
        restored = await self._memory.restore(chat)
        if restored is not None:
            logger.bind(chat=str(chat)).info("summary of {} restored by {}", restored.day, WHO)
        return restored

    async def people(self, chat: ChatKey) -> list[PersonFacts]:
        """Return the chat's people with live facts, most facts first, with those facts."""
        known = await self._store.known_people(chat)
        facts = await self._store.live_facts(chat, [person.user_id for person in known])
        return [PersonFacts(p.user_id, p.user_name, tuple(facts.get(p.user_id, ()))) for p in known]

    async def forget_fact(self, chat: ChatKey, fact_id: int) -> Fact | None:
        """Forget one live fact of the chat as ``web``; ``None`` if it has no such fact."""
        forgotten = await self._memory.people.forget_fact(chat, fact_id, by=WHO)
        if forgotten is not None:
            logger.bind(chat=str(chat)).info("fact {} forgotten by {}", fact_id, WHO)
        return forgotten

    async def forget_person(self, chat: ChatKey, user_id: str) -> int | None:
        """Forget a person in the chat as ``web``, as their ``/forgetme`` would; return how
        many live facts went (0 still records that nothing up to today is learned).

        ``None``, with nothing recorded, for a person never seen in the chat: a mistyped id
        should not leave a forgotten-people row behind.
        """
        people = self._memory.people
        if not await people.seen(chat, user_id):
            return None
        count = await people.forget_person(chat, user_id, by=WHO)
        if count:
            logger.bind(chat=str(chat)).info(
                "{} fact(s) about {} forgotten by {}", count, user_id, WHO
            )
        return count

    async def traces(self, chat: ChatKey, *, count: int) -> list[ShownTrace]:
        """Return the chat's ``count`` newest batch traces, newest first, with reply fates."""
        return await self._store.recent_traces(chat, count=count)

    async def log_tail(self, *, lines: int) -> list[str]:
        """Return the last ``lines`` lines of the log file (already scrubbed of secrets)."""
        return await asyncio.to_thread(tail, self.log_file, lines=lines)


def tail(path: Path, *, lines: int) -> list[str]:
    """Return the last ``lines`` lines of ``path``, reading at most its last 256 KiB."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - LOG_TAIL_BYTES_MAX))
            data = file.read()
    except FileNotFoundError:
        return []
    text = data.decode("utf-8", errors="replace")
    if size > LOG_TAIL_BYTES_MAX:
        text = text.partition("\n")[2]  # the first line is cut: leave it out
    return text.splitlines()[-lines:] if lines > 0 else []
