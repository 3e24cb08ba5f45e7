"""What the LLM sees for one batch: the system prompt, the history, the batch, the contract.

The system prompt is the effective persona (the initial one and the summaries it holds),
the date and the chat, what recall found for the batch's questions, the "people here"
facts, and the output contract for the kinds of item this chat can be answered with;
then the recent history and the new batch, all within ``memory.context_budget_tokens``
(``bot/prompt.py`` counts and trims). Recall runs once per batch, its finding noted for
the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from bot.config.settings import Settings
from bot.initiative.occasion import Occasion, reason_block
from bot.memory.recall import Recalled
from bot.memory.stack import Memory, Persona
from bot.models import Batch, ChatKey, ChatMessage, ImageInput, StoredMessage
from bot.ports import Platform
from bot.prompt import PromptInput, assemble_prompt, estimate_tokens, history_limit, system_prompt
from bot.replies.contract import contract
from bot.replies.guards import REPEATS_REMEMBERED
from bot.replies.items import ItemKind
from bot.stickers import Stickers
from bot.trace import RecallFound, TraceNotes


@dataclass(frozen=True, slots=True)
class Request:
    """One batch's request, what recall put into it, and the messages it shows by id."""

    messages: list[ChatMessage]
    recalled: Recalled
    message_ids: frozenset[str]  # the batch's and the recent history's
    kinds: frozenset[ItemKind]  # the kinds of item the contract offered
    bot_said: tuple[str, ...] = ()  # the bot's latest words in the chat, newest last


def recall_found(recalled: Recalled, persona: Persona) -> RecallFound:
    """Say what recall found, and which days the persona already holds, for a trace.

    Keyword and vector hits are the two ranked lists before fusion, as recall saw them.
    """
    days = tuple(record.day for record in recalled.records)
    return RecallFound(
        how=recalled.how,
        asked_dates=recalled.days,
        date_hits=days if recalled.how == "dates" else (),
        keyword_hits=tuple(record.day for record in recalled.keyword_hits),
        vector_hits=tuple(record.day for record in recalled.vector_hits),
        fact_hits=tuple(fact.id for fact in recalled.facts),
        in_prompt=tuple(record.day for record in persona.kept),
    )


class ChatHistory(Protocol):
    """What a prompt shows of a chat's past: its recent messages and what went unsaid."""

    async def recent_history(
        self, chat: ChatKey, *, exclude_batch: int, limit: int
    ) -> list[StoredMessage]:
        """Return up to ``limit`` newest answered-or-sent messages, oldest first."""
        ...

    async def unsaid_replies(self, chat: ChatKey, *, before_batch: int) -> list[str]:
        """Return the cancelled replies of the chat's last answered batch before this one."""
        ...


def offered_kinds(
    config: Settings, chat: ChatKey, delivered: frozenset[ItemKind]
) -> frozenset[ItemKind]:
    """Return the kinds of item a chat's answer may hold: a text always, each other kind
    that is on in the config and that the chat's platform delivers there, and a later item
    (kept, never delivered) when ``initiative.later`` is on.

    Any other kind the model writes is dropped (a voice note is said as text).
    """
    settings = config.for_chat(chat)
    on = {ItemKind.CONTENT}
    if config.reactions.enabled:
        on.add(ItemKind.REACT)
    if config.stickers.enabled:
        on.add(ItemKind.STICKER)
    if settings.speak:
        on.add(ItemKind.VOICE)
    kept = {ItemKind.LATER} if settings.initiative.later else set()
    return frozenset(on & delivered) | {ItemKind.CONTENT} | kept


class Prompter:
    """Build the request for a batch, or the system prompt a chat's next batch would get."""

    def __init__(
        self,
        config: Settings,
        store: ChatHistory,
        memory: Memory,
        platforms: Mapping[str, Platform],
        *,
        now: Callable[[], datetime],
        stickers: Stickers | None = None,
    ) -> None:
        self._config = config
        self._store = store
        self._memory = memory
        self._platforms = platforms
        self._now = now
        self._stickers = stickers

    def offered(self, chat: ChatKey) -> frozenset[ItemKind]:
        """Return the kinds of item an answer in ``chat`` may hold (see ``offered_kinds``)."""
        platform = self._platforms.get(chat.platform)
        delivered = platform.kinds(chat) if platform is not None else frozenset()
        return offered_kinds(self._config, chat, delivered)

    def _prompt_input(
        self,
        chat: ChatKey,
        *,
        chat_title: str | None,
        persona: str,
        kinds: frozenset[ItemKind],
        images: bool = False,
        recalled: str = "",
        tools: bool = False,
    ) -> PromptInput:
        return PromptInput(
            persona=persona,
            recalled=recalled,
            contract=contract(
                kinds,
                images=images,
                later_days=self._config.for_chat(chat).initiative.max_days_ahead,
                tools=tools,
            ),
            bot_name=self._config.bot.name,
            chat=chat,
            chat_title=chat_title,
            now=self._now(),
            zone=self._config.bot.zone,
            budget_tokens=self._config.memory.context_budget_tokens,
            batch=(),
        )

    async def system_prompt_for(self, chat: ChatKey, *, chat_title: str | None) -> str:
        """Return the system prompt a batch of ``chat`` would get now (without recall)."""
        persona = await self._memory.persona(chat)
        kinds, stickers = await self._stickers_offered(chat)
        spec = self._prompt_input(chat, chat_title=chat_title, persona=persona.text, kinds=kinds)
        return system_prompt(replace(spec, stickers=stickers))

    async def request(
        self,
        batch: Batch,
        *,
        chat_title: str | None,
        images: tuple[ImageInput, ...] = (),
        notes: TraceNotes | None = None,
        recalled: Recalled | None = None,
        occasion: Occasion | None = None,
        tools: bool = False,
    ) -> Request:
        """Build the request for ``batch`` (noting what it holds in ``notes``); with
        ``tools``, its contract says how to read what a tool returns.

        ``recalled`` given, recall is not run again (nor embedded). An initiative batch
        (``occasion``) holds no messages: its reason stands in their place, its note is
        what recall looks for, and it promises nothing further (no later item is offered).
        """
        chat = batch.chat
        persona = await self._memory.persona(chat)
        if recalled is None:
            asked = [m.text for m in batch.messages if not m.from_bot]
            if occasion is not None and occasion.note:
                asked = [occasion.note]
            recalled = await self._memory.recall(chat, asked, persona=persona)
        budget = self._config.memory.context_budget_tokens
        history = await self._store.recent_history(
            chat, exclude_batch=batch.id, limit=history_limit(budget)
        )
        unsaid = await self._store.unsaid_replies(chat, before_batch=batch.id)
        people = await self._memory.people.prompt_part(chat, batch.messages, history)
        kinds, stickers = await self._stickers_offered(chat)
        reason = ""
        if occasion is not None:
            kinds -= {ItemKind.LATER}
            reason = reason_block(occasion, zone=self._config.bot.zone)
        spec = replace(
            self._prompt_input(
                chat,
                chat_title=chat_title,
                persona=persona.text,
                kinds=kinds,
                images=bool(images),
                recalled=recalled.render(),
                tools=tools,
            ),
            batch=batch.messages,
            history=history,
            unsaid=unsaid,
            images=images,
            people=people,
            stickers=stickers,
            reason=reason,
        )
        assembled = assemble_prompt(spec)
        if notes is not None:
            notes.recall = recall_found(recalled, persona)
            initial = estimate_tokens(self._memory.initial_persona(batch.chat).strip())
            notes.prompt_tokens = {
                "persona": initial,
                "summaries": sum(estimate_tokens(r.added_prompt) + 1 for r in persona.kept),
                "people": estimate_tokens(people),
                "stickers": estimate_tokens(stickers),
                "recalled": estimate_tokens(spec.recalled),
                "history": assembled.history_tokens,
                "batch": assembled.batch_tokens,
                "contract": estimate_tokens(spec.contract),
            }
        shown = frozenset(m.message_id for m in (*batch.messages, *history))
        bot_said = tuple(m.text for m in history if m.from_bot)[-REPEATS_REMEMBERED:]
        return Request(assembled.messages, recalled, shown, kinds, bot_said)

    async def _stickers_offered(self, chat: ChatKey) -> tuple[frozenset[ItemKind], str]:
        """Return the kinds offered in ``chat`` and its "stickers you can send" part:
        stickers are offered only when the collection has some to show."""
        kinds = self.offered(chat)
        if ItemKind.STICKER not in kinds or self._stickers is None:
            return kinds - {ItemKind.STICKER}, ""
        part = await self._stickers.prompt_part(chat)
        return (kinds if part else kinds - {ItemKind.STICKER}), part
