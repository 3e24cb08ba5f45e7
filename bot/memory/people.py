"""What the bot remembers of people: short facts per (chat, person), learned at night.

The nightly summary call also names what it learned about the day's speakers; no extra
LLM call is made. A fact is kept only in the chat it was learned in (a forum's topics
share their group's people), only for someone who wrote in that chat that day, once
after whitespace and case folding, and at most ``memory.facts_per_person`` live ones per
person, newest first. Forgetting is a soft delete that records who and when, so nothing
stored is lost.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from loguru import logger
from pydantic import BaseModel, ValidationError, field_validator

from bot.config.settings import Settings
from bot.errors import BadLLMReply
from bot.memory.ports import PeopleStore
from bot.models import ChatKey, Fact, KnownPerson, PersonNote, StoredMessage
from bot.prompt import estimate_tokens
from bot.replies.parse import find_json_object, json_body

FACT_CHARS_MAX = 200
"""A longer "fact" is refused, not cut: facts are short by contract, so one that long is
a pasted message or an instruction smuggled in, and half of it may say something false."""
FACTS_PER_DAY_MAX = 5  # per person and summary: what the summariser is asked for
PEOPLE_SHOWN_MAX = 30  # people whose facts the prompt considers, batch senders first
NIGHTLY = "nightly"  # who learns facts and crowds old ones out, in the audit

PEOPLE_INSTRUCTIONS = """\
- people: for each person who wrote that day and said something lasting about \
themselves (plans, circumstances, likes, needs), an object {"user_id": "...", \
"name": "...", "facts": ["..."]}: user_id exactly as the transcript shows it after \
"id", and up to 5 short third-person facts, with absolute dates where time matters. \
Leave out passing moods, guesses and what others said about them. [] if nothing.
"""


class _PersonShape(BaseModel):
    user_id: str
    name: str = ""
    facts: list[str] = []

    @field_validator("user_id", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        # Models write numeric ids as numbers; a bool is not an id.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("facts", mode="before")
    @classmethod
    def _listify(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


def normalise_fact(text: str) -> str:
    """Fold width and case and drop whitespace, so the same fact is stored once.

    Whitespace goes entirely: Chinese facts come with and without spaces between words.
    """
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def speakers_of(messages: Iterable[StoredMessage]) -> dict[str, str]:
    """Return the chatters of ``messages`` by id, each with their latest display name."""
    return {m.sender_id: m.sender_name for m in messages if not m.from_bot}


def _clean_facts(facts: Sequence[str], *, log: Any, user_id: str) -> tuple[str, ...]:
    kept: list[str] = []
    for fact in facts:
        text = " ".join(fact.split())
        if len(text) > FACT_CHARS_MAX:
            log.warning(
                "a fact about {} of {} characters refused (at most {})",
                user_id,
                len(text),
                FACT_CHARS_MAX,
            )
        elif text and normalise_fact(text) not in {normalise_fact(k) for k in kept}:
            kept.append(text)
    return tuple(kept[:FACTS_PER_DAY_MAX])


def read_people(
    text: str, *, finish_reason: str | None, speakers: Mapping[str, str], chat: ChatKey
) -> tuple[PersonNote, ...]:
    """Read the ``people`` of a summary answer; what is malformed is logged and dropped.

    Never raises: a bad ``people`` field must not cost the day's summary. Facts about
    someone who did not write in this chat that day are dropped, whatever the model says.
    """
    log = logger.bind(chat=str(chat))
    try:
        data = find_json_object(json_body(text, finish_reason=finish_reason), key="summary")
    except BadLLMReply:
        return ()
    people = data.get("people", [])
    if not isinstance(people, list):
        log.warning("the summary's people field is not a list; no facts learned")
        return ()
    notes: dict[str, PersonNote] = {}
    for item in people:
        try:
            shape = _PersonShape.model_validate(item)
        except ValidationError as exc:
            log.warning("a malformed person in the summary dropped: {}", exc.errors()[0]["msg"])
            continue
        user_id = shape.user_id.strip()
        if user_id not in speakers:
            log.warning("facts about {!r}, who did not write here that day, dropped", user_id)
            continue
        facts = [f for f in shape.facts if isinstance(f, str)]
        earlier = notes[user_id].facts if user_id in notes else ()
        cleaned = _clean_facts([*earlier, *facts], log=log, user_id=user_id)
        if cleaned:
            notes[user_id] = PersonNote(user_id, speakers[user_id], cleaned)
    return tuple(notes.values())


def render_people(people: Sequence[tuple[str, str, Sequence[Fact]]], *, budget_tokens: int) -> str:
    """Return the "people here" prompt part: whole facts, in order, within the budget.

    ``people`` is (user id, display name, facts newest first), most relevant person first.
    """
    title = "People here (what you know about them; each fact is from this chat):"
    remaining = budget_tokens - estimate_tokens(title) - 1
    lines: list[str] = []
    for user_id, name, facts in people:
        head = f"- {name} (id {user_id}): "
        line = ""
        for fact in facts:
            candidate = f"{line}; {fact.text}" if line else head + fact.text
            if estimate_tokens(candidate) + 1 > remaining:
                break
            line = candidate
        if not line:
            continue
        lines.append(line)
        remaining -= estimate_tokens(line) + 1
    return "\n".join([title, *lines]) if lines else ""


def people_in_view(
    batch: Sequence[StoredMessage], history: Sequence[StoredMessage]
) -> list[tuple[str, str]]:
    """Return (id, name) of the batch's senders, then of the history's, newest first."""
    seen: dict[str, str] = {}
    for message in [*batch, *reversed(history)]:
        if not message.from_bot and message.sender_id not in seen:
            seen[message.sender_id] = message.sender_name
    return list(seen.items())[:PEOPLE_SHOWN_MAX]


class People:
    """Each chat's people and their facts: learn at night, show in the prompt, forget."""

    def __init__(
        self,
        config: Settings,
        store: PeopleStore,
        *,
        now: Callable[[], datetime],
        today: Callable[[], date],
    ):
        self._config = config
        self._store = store
        self._now = now
        self._today = today  # the current chat day

    async def learn(self, chat: ChatKey, day: date, notes: Sequence[PersonNote]) -> list[Fact]:
        """Store what a day's summary learned; return the facts that are new."""
        if not notes:
            return []
        keep = self._config.memory.facts_per_person
        learned = await self._store.add_facts(chat.room, day, notes, keep=keep, now=self._now())
        if learned:
            logger.bind(chat=str(chat)).info("learned {} fact(s) on {}", len(learned), day)
        return learned

    async def prompt_part(
        self, chat: ChatKey, batch: Sequence[StoredMessage], history: Sequence[StoredMessage]
    ) -> str:
        """Return the "people here" part for a batch, within ``memory.people_share``."""
        memory = self._config.memory
        budget = int(memory.context_budget_tokens * memory.people_share)
        in_view = people_in_view(batch, history)
        if budget <= 0 or not in_view:
            return ""
        facts = await self.live_facts(chat, [user_id for user_id, _ in in_view])
        shown = [(uid, name, facts[uid]) for uid, name in in_view if facts.get(uid)]
        return render_people(shown, budget_tokens=budget)

    async def known(self, chat: ChatKey) -> list[KnownPerson]:
        """Return the chat's people with live facts."""
        return await self._store.known_people(chat.room)

    async def live_facts(self, chat: ChatKey, user_ids: Sequence[str]) -> dict[str, list[Fact]]:
        """Return the live facts of those people in this chat, newest first, by user id."""
        return await self._store.live_facts(chat.room, user_ids)

    async def facts(self, chat: ChatKey, user_id: str) -> list[Fact]:
        """Return one person's live facts in this chat, newest first."""
        return (await self.live_facts(chat, [user_id])).get(user_id, [])

    async def seen(self, chat: ChatKey, user_id: str) -> bool:
        """Whether a person ever wrote in this chat or was remembered (or forgotten) here."""
        if await self._store.person_seen(chat.room, user_id):
            return True
        return bool(chat.topic) and await self._store.person_seen(chat, user_id)

    async def forget_fact(self, chat: ChatKey, fact_id: int, *, by: str) -> Fact | None:
        """Forget one live fact of this chat; ``None`` if there is no such fact here."""
        return await self._store.forget_fact(chat.room, fact_id, by=by, now=self._now())

    async def forget_person(self, chat: ChatKey, user_id: str, *, by: str) -> int:
        """Forget every live fact about a person in this chat; return how many.

        Tonight's summary of today still reads what they wrote before: nothing is learned
        about them from today or earlier days again.
        """
        return await self._store.forget_person(
            chat.room, user_id, by=by, now=self._now(), through=self._today()
        )
