"""What the running bot is doing: what waits, what is queued, what failed, each chat's phase.

One definition of each figure, read by ``/status``, ``/prompt``, the dashboard's overview
and its JSON API alike:

- **waiting messages**: stored messages no batch has taken yet (the store says, not a
  timer: after a restart, or for a platform that is off this run, they wait all the same);
- **queued replies**: outbox items still scheduled;
- **LLM errors in the last hour**: batches that failed in the hour before now;
- **what today cost**: :class:`~bot.ops.cost.CostOps` says, for ``/status``, the dashboard
  and ``pacebot cost`` alike;
- **unaddressed calls this hour**: the gate's count for the chat's group (``bot/gate.py``);
- **paused**: a chat where a bot loop was found, until when (``bot/company.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from bot.company import Company
from bot.config.settings import Settings
from bot.conversation import Phase
from bot.gate import CallGate
from bot.models import ChatActivity, ChatKey, StoredMessage
from bot.ops.cost import CostOps, Today
from bot.ports import Platform
from bot.prompt import estimate_tokens

OVERVIEW_CHATS = 20  # the most recently active chats the overview shows
ERROR_WINDOW = timedelta(hours=1)  # "LLM errors in the last hour"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ChatStates(Protocol):
    """Where each live chat's conversation stands (``bot.conversation.Conversations``)."""

    def phase(self, chat: ChatKey) -> Phase:
        """Return where ``chat``'s conversation stands."""
        ...

    def live_chats(self) -> dict[ChatKey, Phase]:
        """Return every chat that is not idle, with its phase."""
        ...

    def title(self, chat: ChatKey) -> str | None:
        """Return the title a live chat's latest message gave, if any."""
        ...


class PromptSource(Protocol):
    """Builds the system prompt a chat's next batch would get."""

    async def system_prompt_for(self, chat: ChatKey, *, chat_title: str | None) -> str:
        """Return the system prompt a batch of ``chat`` would get now (without recall)."""
        ...


class StatusStore(Protocol):
    """What the status reads of the store: what waits, what was sent, what failed, which
    chats were active and under which names."""

    async def waiting_counts(self, chat: ChatKey | None = None) -> dict[ChatKey, int]:
        """Count, per chat (or for ``chat`` only), the messages no batch has taken yet."""
        ...

    async def scheduled_count(self, chat: ChatKey | None = None) -> int:
        """Count scheduled replies, of one chat or of all."""
        ...

    async def sent_counts(self, chat: ChatKey | None = None, *, since: datetime) -> dict[str, int]:
        """Count the items sent since ``since`` by kind, of one chat or of all."""
        ...

    async def failed_batches_since(self, since: datetime) -> int:
        """Count batches that failed since ``since``."""
        ...

    async def chat_activity(self, *, search: str = "", limit: int) -> list[ChatActivity]:
        """Return up to ``limit`` chats, the most recently active first.

        With ``search``, only chats whose key, title or one of whose senders' names holds
        it (ASCII letters in any case).
        """
        ...

    async def chat_names(self, chats: Sequence[ChatKey]) -> dict[ChatKey, str]:
        """Return the name to show beside each chat's key, for those that have one: a
        group's newest title, a private chat's newest sender name."""
        ...

    async def messages_between(
        self, chat: ChatKey, start: datetime, end: datetime, *, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` messages (chatters' and the bot's) sent in ``[start, end)``."""
        ...


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
    """A chat in a list: its live phase, its latest activity, if any is stored, and the
    name to show beside its key (a group's title, a private chatter's name), if known."""

    chat: ChatKey
    phase: Phase
    message_count: int
    last_message_at: datetime | None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ChatStatus:
    """One chat as ``/status`` shows it."""

    chat: ChatKey
    phase: Phase
    waiting_messages: int
    queued_replies: int
    llm_errors_last_hour: int  # the whole bot's: a failing LLM fails every chat
    sent_today: Mapping[str, int]  # items sent this chat day, by kind
    today: Today  # what the LLM calls cost today, the chat's and the bot's
    reply_mode: str  # the chat's group's (an override applied)
    unaddressed_calls: int | None  # in the last hour, for the chat's group; None: private
    unaddressed_budget: int  # the group's unaddressed_calls_per_hour
    paused_until: datetime | None  # a bot loop paused the chat until then
    profile: str = ""  # the profile the chat runs with; "" = none
    interests: tuple[str, ...] = ()  # the chat's group's (an override applied)
    overridden: bool = False  # a [[groups.override]] names the chat's group


@dataclass(frozen=True, slots=True)
class Status:
    """The overview: platforms, what waits, what failed lately, and each chat's phase."""

    platforms: tuple[PlatformState, ...]
    waiting_messages: int
    queued_replies: int
    llm_errors_last_hour: int
    sent_today: Mapping[str, int]  # items sent this chat day, by kind, in every chat
    chats: tuple[ChatState, ...]
    today: Today  # what the LLM calls cost today


@dataclass(frozen=True, slots=True)
class PromptView:
    """The system prompt a chat's next batch would get, the profile it runs with, and the
    prompt's size."""

    chat: ChatKey
    profile: str  # "" = none
    prompt: str
    tokens: int  # estimated offline, as the budget counts a prompt before the call


class StatusOps:
    """Answer what the running bot is doing, for every face."""

    def __init__(
        self,
        config: Settings,
        store: StatusStore,
        *,
        chats: ChatStates,
        prompts: PromptSource,
        platforms: Mapping[str, Platform],
        cost: CostOps,
        gate: CallGate,
        company: Company,
        now: Callable[[], datetime],
    ) -> None:
        self._config = config
        self._cost = cost
        self._gate = gate
        self._company = company
        self._store = store
        self._chats = chats
        self._prompts = prompts
        self._platforms = platforms
        self._now = now

    async def waiting_messages(self, chat: ChatKey | None = None) -> int:
        """Count the stored messages no batch has taken yet, of ``chat`` or of every chat."""
        return sum((await self._store.waiting_counts(chat)).values())

    async def queued_replies(self, chat: ChatKey | None = None) -> int:
        """Count the replies still scheduled in the outbox, of ``chat`` or of every chat."""
        return await self._store.scheduled_count(chat)

    async def llm_errors_last_hour(self) -> int:
        """Count the batches that failed in the last hour."""
        return await self._store.failed_batches_since(self._now() - ERROR_WINDOW)

    async def sent_today(self, chat: ChatKey | None = None) -> dict[str, int]:
        """Count the items sent this chat day, by kind, in ``chat`` or in every chat."""
        since = self._config.chat_days(self._now).start_of_today()
        return await self._store.sent_counts(chat, since=since)

    async def chat(self, chat: ChatKey) -> ChatStatus:
        """Return one chat's status."""
        chat_settings = self._config.for_chat(chat)
        settings = chat_settings.groups
        return ChatStatus(
            chat,
            self._chats.phase(chat),
            await self.waiting_messages(chat),
            await self.queued_replies(chat),
            await self.llm_errors_last_hour(),
            await self.sent_today(chat),
            await self._cost.today(chat),
            settings.reply_mode,
            await self._gate.calls_this_hour(chat) if chat.is_group else None,
            settings.unaddressed_calls_per_hour,
            self._company.paused_until(chat, now=self._now()),
            chat_settings.profile,
            settings.interests,
            any(o.chat == str(chat.room) for o in self._config.groups.override),
        )

    async def overview(self) -> Status:
        """Return the whole bot's status, with the most recently active chats."""
        recent = await self._store.chat_activity(limit=OVERVIEW_CHATS)
        live = self._chats.live_chats()
        chats = [
            ChatState(a.chat, live.get(a.chat, Phase.IDLE), a.message_count, a.last_message_at)
            for a in recent
        ]
        shown = {a.chat for a in recent}
        chats += [ChatState(c, phase, 0, None) for c, phase in live.items() if c not in shown]
        return Status(
            platforms=tuple(
                PlatformState(name, p.is_connected if isinstance(p, Connects) else None)
                for name, p in self._platforms.items()
            ),
            waiting_messages=await self.waiting_messages(),
            queued_replies=await self.queued_replies(),
            llm_errors_last_hour=await self.llm_errors_last_hour(),
            sent_today=await self.sent_today(),
            chats=tuple(await self._named(chats)),
            today=await self._cost.today(),
        )

    async def chats(self, *, search: str, limit: int) -> list[ChatState]:
        """Return up to ``limit`` chats matching ``search``, the most recently active first."""
        found = await self._store.chat_activity(search=search, limit=limit)
        return await self._named(
            [
                ChatState(a.chat, self._chats.phase(a.chat), a.message_count, a.last_message_at)
                for a in found
            ]
        )

    async def name(self, chat: ChatKey) -> str | None:
        """Return the name to show beside ``chat``'s key: a group's newest title, a private
        chat's newest sender name; ``None`` if none is stored."""
        return (await self._store.chat_names([chat])).get(chat)

    async def _named(self, chats: list[ChatState]) -> list[ChatState]:
        """Give each listed chat the name to show beside its key."""
        names = await self._store.chat_names([state.chat for state in chats])
        return [replace(state, name=names.get(state.chat)) for state in chats]

    def phase(self, chat: ChatKey) -> Phase:
        """Return where ``chat``'s conversation stands."""
        return self._chats.phase(chat)

    def live_chats(self) -> dict[ChatKey, Phase]:
        """Return every chat that is not idle, with its phase."""
        return self._chats.live_chats()

    async def knows(self, chat: ChatKey) -> bool:
        """Tell whether ``chat`` has a stored message or a live conversation."""
        live = self._chats.phase(chat) is not Phase.IDLE
        return live or bool(await self.messages(chat, limit=1))

    async def messages(self, chat: ChatKey, *, limit: int) -> list[StoredMessage]:
        """Return the chat's ``limit`` newest messages, chatters' and the bot's, oldest first."""
        end = self._now() + timedelta(days=1)  # a platform's clock may run a little ahead
        return await self._store.messages_between(chat, _EPOCH, end, limit=limit)

    def profile(self, chat: ChatKey) -> str:
        """Return the name of the profile ``chat`` runs with; "" when none names it."""
        return self._config.for_chat(chat).profile

    async def system_prompt(self, chat: ChatKey, *, title: str | None = None) -> str:
        """Return the system prompt ``chat``'s next batch would get.

        ``title`` is the chat's title when the asker is in it; otherwise the live
        conversation's, if any.
        """
        title = title or self._chats.title(chat)
        return await self._prompts.system_prompt_for(chat, chat_title=title)

    async def prompt_view(self, chat: ChatKey) -> PromptView:
        """Return the system prompt ``chat``'s next batch would get, its profile and size."""
        prompt = await self.system_prompt(chat)
        return PromptView(chat, self.profile(chat), prompt, estimate_tokens(prompt))
