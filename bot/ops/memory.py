"""What the bot remembers, as an operator reads and changes it.

``/summary``, ``/recall``, ``/people``, ``/facts``, ``/forget`` and ``/forgetme`` in a
chat, ``pacebot summarize`` and ``pacebot recall`` in the shell, the dashboard's prompt
stack and people, and the nightly job all come here. Every change is audited: the store
records who popped a summary or forgot a fact, and a log line names them.

Who may forget whom is decided here once: anyone may forget themselves in a chat they
write in; an admin (or the dashboard) may forget anyone who was ever seen in the chat.
Forgetting a person never seen there records nothing, so a mistyped id leaves no trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from loguru import logger

from bot.config.settings import Settings
from bot.memory.nightly import NightlyReport, days_to_summarise, pending_work, summarise_days
from bot.memory.ports import MemoryStore
from bot.memory.recall import Recalled
from bot.memory.stack import Memory, SummaryResult
from bot.models import ChatKey, Fact, SummaryRecord
from bot.prompt import estimate_tokens

Progress = Callable[[ChatKey, date, SummaryResult | None], None]


@dataclass(frozen=True, slots=True)
class StackEntry:
    """One summary on a chat's prompt stack, and whether the prompt still holds it."""

    record: SummaryRecord
    tokens: int
    in_prompt: bool


@dataclass(frozen=True, slots=True)
class PromptStack:
    """A chat's prompt stack, newest first, over the initial persona, and the summary a
    restore would bring back now, if any."""

    chat: ChatKey
    entries: tuple[StackEntry, ...]
    initial_persona: str
    prompt_tokens: int  # the persona with the summaries it holds
    restorable: SummaryRecord | None = None

    @property
    def in_prompt_days(self) -> tuple[date, ...]:
        """Return the days whose summaries the prompt holds, oldest first."""
        return tuple(e.record.day for e in reversed(self.entries) if e.in_prompt)


@dataclass(frozen=True, slots=True)
class RecallPreview:
    """What a batch asking a question would recall, beside what the prompt already holds."""

    recalled: Recalled
    in_prompt: tuple[date, ...]  # the days the persona holds, oldest first

    @property
    def already_held(self) -> tuple[date, ...]:
        """Return the days the question asks about that the prompt holds already."""
        return tuple(day for day in self.recalled.days if day in self.in_prompt)


@dataclass(frozen=True, slots=True)
class PersonFacts:
    """A person of a chat with their live facts there, newest first."""

    user_id: str
    name: str  # the name under their newest fact
    facts: tuple[Fact, ...]


class MemoryOps:
    """Read and change what the bot remembers, for every face."""

    def __init__(self, config: Settings, memory: Memory, store: MemoryStore) -> None:
        self._config = config
        self._memory = memory
        self._store = store

    def today(self) -> date:
        """Return the current chat day."""
        return self._memory.today()

    # -- the prompt stack ---------------------------------------------------------------

    async def prompt_stack(self, chat: ChatKey) -> PromptStack:
        """Return the chat's live summaries, newest first, marking those the prompt holds,
        and what a restore would bring back."""
        persona = await self._memory.persona(chat)
        stack = await self._memory.stack(chat)
        in_prompt = {record.id for record in persona.kept}
        entries = tuple(
            StackEntry(record, estimate_tokens(record.added_prompt), record.id in in_prompt)
            for record in reversed(stack)
        )
        return PromptStack(
            chat,
            entries,
            self._memory.initial_persona(chat),
            persona.tokens,
            restorable=await self._store.restorable_summary(chat),
        )

    async def pop(self, chat: ChatKey, *, by: str) -> SummaryRecord | None:
        """Pop the chat's newest summary as ``by``; ``None`` when only the persona is left."""
        popped = await self._memory.pop(chat, by=by)
        if popped is not None:
            logger.bind(chat=str(chat)).info("summary of {} popped by {}", popped.day, by)
        return popped

    async def restore(self, chat: ChatKey, *, by: str) -> SummaryRecord | None:
        """Undo the chat's last pop; ``None`` when nothing can be restored."""
        restored = await self._memory.restore(chat)
        if restored is not None:
            logger.bind(chat=str(chat)).info("summary of {} restored by {}", restored.day, by)
        return restored

    async def summarise(self, chat: ChatKey, day: date, *, by: str) -> SummaryResult:
        """Summarise one chat day now, on purpose (a popped day too); raise ``LLMError``."""
        result = await self._memory.summarise(chat, day, on_purpose=True)
        if result is SummaryResult.PUSHED:
            logger.bind(chat=str(chat)).info("summary of {} written at the request of {}", day, by)
        return result

    async def unsummarised(
        self, *, day: date | None, only: ChatKey | None, all_missing: bool
    ) -> list[tuple[ChatKey, date]]:
        """Return the (chat, day) pairs a run by hand would summarise.

        Every missed day of the catch-up window with ``all_missing``, else ``day``
        (yesterday by default); a named day counts even if popped, as ``/summary run``.
        """
        if all_missing:
            days = days_to_summarise(self.today(), catch_up_days=self._config.memory.catch_up_days)
        else:
            days = [day or self.today() - timedelta(days=1)]
        return await pending_work(
            self._store, self._memory.days, days, only=only, on_purpose=day is not None
        )

    async def summarise_all(
        self,
        work: Sequence[tuple[ChatKey, date]],
        *,
        on_purpose: bool,
        progress: Progress | None = None,
    ) -> NightlyReport:
        """Summarise each (chat, day) as the nightly job does, then embed what is new."""
        report = await summarise_days(
            self._memory,
            work,
            concurrency=self._config.memory.summary_concurrency,
            on_purpose=on_purpose,
            progress=progress,
        )
        await self._memory.embed_pending()
        return report

    async def run_nightly(self) -> NightlyReport:
        """Summarise every chat's finished days of the catch-up window that have no
        summary (a popped day stays popped), then embed what is new: the nightly job."""
        work = await self.unsummarised(day=None, only=None, all_missing=True)
        report = await self.summarise_all(work, on_purpose=False)
        if work:
            logger.info(
                "nightly summaries: {} pushed, {} skipped, {} failed",
                len(report.pushed),
                len(report.skipped),
                len(report.failed),
            )
        return report

    # -- recall -------------------------------------------------------------------------

    async def recall_preview(self, chat: ChatKey, question: str) -> RecallPreview:
        """Return what a batch asking ``question`` would recall: summaries the persona
        already holds are not repeated, as in the batch's own prompt."""
        persona = await self._memory.persona(chat)
        recalled = await self._memory.recall(chat, [question], persona=persona)
        return RecallPreview(recalled, tuple(record.day for record in persona.kept))

    # -- people -------------------------------------------------------------------------

    async def people(self, chat: ChatKey) -> list[PersonFacts]:
        """Return the chat's people with live facts, most facts first, with those facts."""
        people = self._memory.people
        known = await people.known(chat)
        facts = await people.live_facts(chat, [person.user_id for person in known])
        return [PersonFacts(p.user_id, p.user_name, tuple(facts.get(p.user_id, ()))) for p in known]

    async def facts(self, chat: ChatKey, user_id: str) -> list[Fact]:
        """Return one person's live facts in the chat, newest first."""
        return await self._memory.people.facts(chat, user_id)

    async def forget_fact(self, chat: ChatKey, fact_id: int, *, by: str) -> Fact | None:
        """Forget one live fact of the chat as ``by``; ``None`` if it has no such fact."""
        forgotten = await self._memory.people.forget_fact(chat, fact_id, by=by)
        if forgotten is not None:
            logger.bind(chat=str(chat)).info("fact {} forgotten by {}", fact_id, by)
        return forgotten

    async def forget_person(
        self, chat: ChatKey, user_id: str, *, by: str, themselves: bool = False
    ) -> int | None:
        """Forget a person in the chat as ``by``; return how many live facts went.

        Nothing they wrote up to today is learned afterwards, and that is recorded even
        when no fact was live (0). ``themselves``: the person asks it in the chat, so they
        are known there; anyone else may forget only a person ever seen in the chat, and
        ``None``, with nothing recorded, answers for one who never was.
        """
        people = self._memory.people
        if not themselves and not await people.seen(chat, user_id):
            return None
        count = await people.forget_person(chat, user_id, by=by)
        logger.bind(chat=str(chat)).info("{} fact(s) about {} forgotten by {}", count, user_id, by)
        return count
