"""What the bot remembers of a chat: its diary of day summaries on a poppable stack.

The effective persona is the initial persona followed by the chat's live summaries in
push order. When that grows past its share of the context budget, the oldest summaries
leave the prompt (they stay recallable). Only the newest summary can be popped, one at
a time, down to the initial persona; memory never crosses chats.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from loguru import logger
from pydantic import BaseModel, ValidationError, field_validator

from bot.budget import Spending, usage_of
from bot.config.settings import Settings
from bot.errors import BadLLMReply, OverBudget, StorageError, SummaryExists
from bot.memory.people import PEOPLE_INSTRUCTIONS, People, read_people, speakers_of
from bot.memory.ports import MemoryStore
from bot.memory.recall import Recalled, recall
from bot.memory.semantic import SemanticMemory
from bot.models import (
    ChatKey,
    ChatMessage,
    Completion,
    DaySummary,
    StoredMessage,
    SummaryRecord,
)
from bot.ports import LLM
from bot.prompt import clip, estimate_tokens
from bot.replies.parse import find_json_object, json_body

FIRST_CHAT_DAY = date(1970, 1, 2)  # no message can belong to an earlier chat day
PERSONA_SHARE = 0.4  # of memory.context_budget_tokens, for the persona and its summaries
RECALL_SHARE = 0.2  # of memory.context_budget_tokens, for recalled summaries
SUMMARY_CHARS_MAX = 800  # one day's summary; no day may crowd the others out of the persona
POINT_CHARS_MAX = 150  # one key point
SUMMARY_MESSAGES_MAX = 2000  # messages of one chat day shown to the summariser
_LINE_CHARS_MAX = 500

_SUMMARY_INSTRUCTIONS = (
    """\
You keep the diary of a chat you take part in. Summarise the chat day below for your \
future self, in the language the chat is mostly written in.

Answer with JSON only, exactly these fields:
{"summary": "...", "topics": ["..."], "key_points": ["..."], "keywords": ["..."], \
"people": [{"user_id": "...", "name": "...", "facts": ["..."]}]}

- summary: 3-8 sentences: who talked about what, what was decided or promised, moods, \
anything worth remembering about the people. Write absolute dates (for example \
2026-03-05 or 3月5日); never "today", "tomorrow", "yesterday" or "this week".
- topics: up to 5 short topic names.
- key_points: up to 5 facts or plans worth remembering, each one short line, with \
absolute dates.
- keywords: up to 10 words someone might later use to ask about this day.
"""
    + PEOPLE_INSTRUCTIONS
)


class _SummaryShape(BaseModel):
    summary: str
    topics: list[str] = []
    key_points: list[str] = []
    keywords: list[str] = []

    @field_validator("summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            msg = "the summary is empty"
            raise ValueError(msg)
        return value.strip()

    @field_validator("topics", "key_points", "keywords", mode="before")
    @classmethod
    def _listify(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.replace("，", ",").split(",") if part.strip()]
        return value


def parse_summary(text: str, *, finish_reason: str | None) -> DaySummary:
    """Read a day summary out of an LLM answer; raise ``BadLLMReply`` if there is none."""
    data = find_json_object(json_body(text, finish_reason=finish_reason), key="summary")
    try:
        shape = _SummaryShape.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "summary"
        msg = f"not a valid summary: {where}: {first['msg']}"
        raise BadLLMReply(msg) from None

    def clean(items: list[str], most: int) -> tuple[str, ...]:
        kept = [clip(item.strip(), POINT_CHARS_MAX) for item in items if item.strip()]
        return tuple(kept[:most])

    return DaySummary(
        summary=clip(shape.summary, SUMMARY_CHARS_MAX),
        topics=clean(shape.topics, 5),
        key_points=clean(shape.key_points, 5),
        keywords=clean(shape.keywords, 10),
    )


def render_summary(day: date, content: DaySummary, *, until: datetime | None = None) -> str:
    """Return the text a summary adds to the persona; ``until``: the local time a partial
    summary of an unfinished day was written."""
    so_far = "" if until is None else f", until {until:%H:%M}"
    lines = [f"[Memory of {day.isoformat()} ({day:%A}){so_far}] {content.summary}"]
    if content.key_points:
        lines.append("Key points: " + "; ".join(content.key_points))
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Persona:
    """The effective persona of a chat and which summaries made it in."""

    text: str
    kept: tuple[SummaryRecord, ...]
    dropped: tuple[SummaryRecord, ...]  # oldest ones, over budget: recallable only

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def effective_persona(
    initial: str, stack: Sequence[SummaryRecord], *, budget_tokens: int
) -> Persona:
    """Stack the live summaries on the initial persona, newest kept first within budget."""
    share = int(budget_tokens * PERSONA_SHARE) - estimate_tokens(initial)
    kept: list[SummaryRecord] = []
    for record in reversed(stack):
        cost = estimate_tokens(record.added_prompt) + 1
        if cost > share:
            break
        kept.append(record)
        share -= cost
    kept.reverse()
    dropped = tuple(stack[: len(stack) - len(kept)])
    text = "\n\n".join([initial.strip(), *(r.added_prompt for r in kept)])
    return Persona(text, tuple(kept), dropped)


def full_stack_text(initial: str, stack: Sequence[SummaryRecord]) -> str:
    """Return the whole prompt stack, untrimmed, as the history rows record it."""
    return "\n\n".join([initial.strip(), *(r.added_prompt for r in stack)])


def _transcript_line(message: StoredMessage, *, bot_name: str, config: Settings) -> str:
    local = message.sent_at.astimezone(config.bot.zone)
    # People are named with their id, so that facts about them find the right person.
    who = (
        f"{bot_name} (you)"
        if message.from_bot
        else f"{message.sender_name} (id {message.sender_id})"
    )
    text = message.shown_text
    if len(text) > _LINE_CHARS_MAX:
        text = text[:_LINE_CHARS_MAX] + "…"
    return f"[{local:%H:%M}] {who}: {text}"


def summary_request(
    chat: ChatKey, day: date, messages: Sequence[StoredMessage], *, config: Settings
) -> list[ChatMessage]:
    """Build the summary call for one chat day."""
    kind = "group chat" if chat.is_group else "private chat"
    lines = [_transcript_line(m, bot_name=config.bot.name, config=config) for m in messages]
    header = f"Chat day {day.isoformat()} ({day:%A}), a {kind}, times in {config.bot.timezone}:"
    return [
        ChatMessage("system", _SUMMARY_INSTRUCTIONS),
        ChatMessage("user", header + "\n" + "\n".join(lines)),
    ]


class SummaryResult(enum.Enum):
    """How an attempt to summarise one chat day ended."""

    PUSHED = enum.auto()
    ALREADY = enum.auto()  # a live summary exists (or, for the nightly job, a popped one)
    NOTHING = enum.auto()  # no chatter wrote that day
    FUTURE = enum.auto()  # the day has not begun yet


class Memory:
    """Each chat's prompt stack: build the persona, summarise days, pop and restore."""

    def __init__(
        self,
        config: Settings,
        store: MemoryStore,
        llm: LLM,
        *,
        now: Callable[[], datetime],
        semantic: SemanticMemory | None = None,
        spending: Spending | None = None,
    ) -> None:
        self._config = config
        self._store = store
        self._llm = llm
        self._spending = spending
        self._now = now
        self.days = config.chat_days(now)
        """The chat days summaries are written for."""
        self.people = People(config, store, now=now, today=self.today)
        self.semantic = semantic
        """Semantic recall, when ``[memory.embeddings]`` is on; ``None`` otherwise."""

    def today(self) -> date:
        """Return the current chat day."""
        return self.days.today()

    def initial_persona(self, chat: ChatKey) -> str:
        """Return the persona ``chat``'s summary stack sits on: its profile's, else the
        base persona."""
        return self._config.for_chat(chat).persona

    async def persona(self, chat: ChatKey) -> Persona:
        """Return the chat's effective persona."""
        stack = await self._store.live_summaries(chat)
        budget = self._config.memory.context_budget_tokens
        return effective_persona(self.initial_persona(chat), stack, budget_tokens=budget)

    async def summarise(self, chat: ChatKey, day: date, *, on_purpose: bool) -> SummaryResult:
        """Summarise one chat day and push it; raise ``LLMError`` if the LLM fails.

        The nightly job (``on_purpose=False``) never re-creates a popped day; an admin's
        ``/summary run`` may. Either way a day has at most one live summary. The current
        day may be summarised on purpose: its summary is partial, and the next run for
        that day (the nightly one once it has ended) writes over it, in its place.
        """
        if day < FIRST_CHAT_DAY:  # nothing is stored that early; near year 1 bounds overflow
            return SummaryResult.NOTHING
        if day > self.today():
            return SummaryResult.FUTURE
        live = await self._store.summaries_on(chat, [day])
        partial = live[0] if live and live[0].partial else None
        if live and partial is None:
            return SummaryResult.ALREADY
        if (
            not live
            and not on_purpose
            and await self._store.has_summary(chat, day, include_popped=True)
        ):
            return SummaryResult.ALREADY
        start, end = self.days.bounds(day)
        messages = await self._store.messages_between(chat, start, end, limit=SUMMARY_MESSAGES_MAX)
        if not any(not m.from_bot for m in messages):
            return SummaryResult.NOTHING
        request = summary_request(chat, day, messages, config=self._config)
        completion = await self._ask(chat, request)
        content = parse_summary(completion.text, finish_reason=completion.finish_reason)
        if not await self._keep(chat, day, content, messages, replacing=partial):
            return SummaryResult.ALREADY
        # Read only now: a bad people field never costs the summary, which is already kept.
        notes = read_people(
            completion.text,
            finish_reason=completion.finish_reason,
            speakers=speakers_of(messages),
            chat=chat,
        )
        try:
            await self.people.learn(chat, day, notes)
        except StorageError as exc:
            logger.bind(chat=str(chat)).error("facts of {} not stored: {}", day, exc)
        if on_purpose:  # the nightly job embeds its whole run at once, after it
            await self.embed_pending()
        return SummaryResult.PUSHED

    async def _keep(
        self,
        chat: ChatKey,
        day: date,
        content: DaySummary,
        messages: Sequence[StoredMessage],
        *,
        replacing: SummaryRecord | None,
    ) -> bool:
        """Push the day's summary, or write it over the partial one; ``False`` if a
        concurrent run (or a pop) got there first."""
        now = self._now()
        unfinished = now < self.days.bounds(day)[1]
        added = render_summary(
            day, content, until=now.astimezone(self._config.bot.zone) if unfinished else None
        )
        count = sum(1 for m in messages if not m.from_bot)
        if replacing is not None:
            replaced = await self._store.replace_summary(
                chat,
                replacing.id,
                content,
                added_prompt=added,
                message_count=count,
                now=now,
                partial=unfinished,
            )
            return replaced is not None
        before = full_stack_text(self.initial_persona(chat), await self._store.live_summaries(chat))
        try:
            await self._store.push_summary(
                chat,
                day,
                content,
                added_prompt=added,
                full_prompt_before=before,
                full_prompt_after=f"{before}\n\n{added}",
                message_count=count,
                now=now,
                partial=unfinished,
            )
        except SummaryExists:
            return False
        return True

    async def _ask(self, chat: ChatKey, request: list[ChatMessage]) -> Completion:
        """Make the summary call and keep what it cost; raise ``OverBudget`` at the hard
        cap (the day is summarised once the next chat day begins)."""
        spending = self._spending
        refusal = None if spending is None else await spending.refusal(chat, optional=False)
        if refusal is not None:
            msg = f"{refusal}: no summary until the next chat day"
            raise OverBudget(msg)
        completion = await self._llm.complete(request, json_mode=self._config.llm.json_mode)
        if spending is not None:
            await spending.note(chat, "summary", usage_of(request, completion))
        return completion

    async def embed_pending(self) -> int:
        """Embed the memory rows that have no vector yet; 0 with semantic recall off."""
        return await self.semantic.backfill() if self.semantic is not None else 0

    async def pop(self, chat: ChatKey, *, by: str) -> SummaryRecord | None:
        """Pop the newest live summary; ``None`` when only the initial persona is left."""
        return await self._store.pop_summary(chat, by=by, now=self._now())

    async def restore(self, chat: ChatKey) -> SummaryRecord | None:
        """Undo the last pop if nothing newer was pushed since."""
        return await self._store.restore_summary(chat, now=self._now())

    async def recall(
        self,
        chat: ChatKey,
        texts: Sequence[str],
        *,
        persona: Persona | None = None,
        by_meaning: bool = True,
    ) -> Recalled:
        """Recall what ``texts`` ask about, leaving out what ``persona`` already holds.

        With ``by_meaning=False`` no embeddings request is made (a batch makes one at most).
        """
        return await recall(
            self._store,
            chat,
            texts,
            today=self.today(),
            hits=self._config.memory.recall_hits,
            budget_tokens=int(self._config.memory.context_budget_tokens * RECALL_SHARE),
            in_persona={r.id for r in persona.kept} if persona else (),
            semantic=self.semantic if by_meaning else None,
        )

    async def stack(self, chat: ChatKey) -> list[SummaryRecord]:
        """Return the chat's live summaries in push order."""
        return await self._store.live_summaries(chat)
