"""Answer one batch: ask the gate whether to, build the context, make one LLM call, plan replies.

The gate (``bot/gate.py``) decides first, without a call; a batch it turns away leaves a
trace with its reasons. The reply contract's fallback chain lives here: parse the JSON; if
that fails, ask the splitter to turn the raw text into JSON (unless a soft cap stops the
optional calls); if that fails too, split the text by hand with typing-speed delays.
Every fallback that fires is logged with the chat key and batch id. Every call's tokens
are kept (``bot/budget.py``), and the guards (``bot/replies/guards.py``) drop a repeat of
the bot's last words and, on QQ with ``qq.strip_urls``, replace links.

With ``llm.memory_tool`` on, the reply call also offers ``search_memory``
(``bot/memory/tool.py``): if the model calls it, the batch is asked once more with the
results, and that second answer goes down the same chain. Never a third call: the nudge
for a missing answer is skipped then. Every call made is noted in the batch's trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from loguru import logger

from bot.budget import Spending, usage_of
from bot.config import Config
from bot.context import Prompter, Request
from bot.conversation import answered_senders
from bot.errors import BadLLMReply, ImagesRefused, LLMError, LLMUnavailable, StorageError
from bot.gate import CallGate, Decision, decide
from bot.initiative.occasion import Occasion
from bot.initiative.promises import Promise, asker_of, keep_promises
from bot.initiative.store import InitiativeStore
from bot.memory.stack import Memory
from bot.memory.tool import SEARCH_MEMORY, follow_up, tool_results
from bot.models import Batch, BatchOutcome, ChatMessage, Completion, ImageInput, ToolSpec
from bot.ports import LLM, MessageLog, PictureSource
from bot.replies.guards import without_links, without_repeats
from bot.replies.items import DroppedItem, Later, PlannedReply, Reply, Text
from bot.replies.parse import parse_image_notes, splitter_messages
from bot.replies.plan import deliverable, parse_replies, plan_replies, without_reply_json
from bot.replies.splitting import split_text
from bot.stickers import Stickers
from bot.trace import Trace, TraceNotes
from bot.vision import look_at
from bot.voice.hearing import Hearing

if TYPE_CHECKING:
    from loguru import Logger

_NUDGE = (
    "You returned no replies, but this message needs an answer. "
    "Answer now, in the same JSON format, with at least one reply."
)


@dataclass(frozen=True, slots=True)
class Answer:
    """What came of one batch."""

    outcome: BatchOutcome
    replies: tuple[PlannedReply, ...] = ()
    error: str | None = None
    trace: Trace | None = None
    promises: tuple[Promise, ...] = ()  # later items to keep


class AnswerStore(MessageLog, InitiativeStore, Protocol):
    """What answering reads and writes: the chat's messages, and its pending promises."""


class Answerer:
    """Turn a batch into planned replies with one LLM call (plus fallbacks if needed).

    With ``llm.vision`` on, the batch's newest pictures (from ``pictures``, one source per
    platform) go into that same call; a provider that refuses them (HTTP 400) gets the
    batch once more without them, and a warning (once per process, not per batch: it is
    a setting to change, not an event) says to turn ``llm.vision`` off.
    """

    def __init__(
        self,
        config: Config,
        store: AnswerStore,
        llm: LLM,
        *,
        splitter: LLM,
        memory: Memory,
        prompter: Prompter,
        gate: CallGate,
        spending: Spending,
        now: Callable[[], datetime],
        pictures: Mapping[str, PictureSource] | None = None,
        stickers: Stickers | None = None,
        hearing: Hearing | None = None,
    ) -> None:
        self._config = config
        self._hearing = hearing
        self._gate = gate
        self._spending = spending
        self._warned_vision_refused = False  # one Answerer per run: once per process
        self._pictures = pictures or {}
        self._store = store
        self._llm = llm
        self._splitter = splitter
        self._memory = memory
        self._prompter = prompter
        self._now = now
        self._stickers = stickers

    async def answer(
        self,
        batch: Batch,
        *,
        text_limit: int,
        chat_title: str | None,
        rearmed_by: Sequence[str] = (),
    ) -> Answer:
        """Answer ``batch``; never raises for LLM trouble, it becomes a failed outcome.

        ``rearmed_by`` names the messages that re-armed its quiet timer, for the trace.
        Its voice notes still being heard are waited for first, ``llm.timeout_s`` at most.
        """
        if self._hearing is not None:
            batch = await self._hearing.heard(batch, timeout_s=self._config.llm.timeout_s)
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        notes = TraceNotes(
            batch, self._now(), rearmed_by=tuple(rearmed_by), prices=self._config.budget
        )
        verdict = await self._gate.admit(batch)
        notes.gate = verdict.reasons
        if not verdict.go:
            log.debug("no LLM call, {}: {}; kept as context", verdict.why, "; ".join(notes.gate))
            skipped = BatchOutcome.SKIPPED
            return Answer(skipped, trace=notes.freeze(skipped, why=verdict.why))
        decision = decide(batch, reply_mode=self._config.groups.for_chat(batch.chat).reply_mode)
        images: tuple[ImageInput, ...] = ()
        if self._config.llm.vision:
            images = await look_at(batch, self._pictures, max_images=self._config.llm.max_images)
        prompt = await self._prompter.request(
            batch, chat_title=chat_title, images=images, notes=notes
        )
        model = self._config.llm.model
        tools = (SEARCH_MEMORY,) if self._config.llm.memory_tool else ()
        try:
            try:
                completion = await self._ask(
                    self._llm, prompt.messages, kind="reply", model=model, notes=notes, tools=tools
                )
            except ImagesRefused as exc:
                self._warn_vision_refused(exc)
                images = ()
                prompt = await self._prompter.request(
                    batch, chat_title=chat_title, notes=notes, recalled=prompt.recalled
                )
                completion = await self._ask(
                    self._llm, prompt.messages, kind="reply", model=model, notes=notes, tools=tools
                )
            messages = prompt.messages
            searched = bool(completion.tool_calls)
            if searched:
                log.info("the model searched memory {} time(s)", len(completion.tool_calls))
                results = await tool_results(
                    self._memory,
                    batch.chat,
                    completion.tool_calls,
                    may_embed=not prompt.recalled.embedded,
                )
                for call, result in zip(completion.tool_calls, results, strict=True):
                    notes.tool(call, result.content)
                messages = follow_up(messages, completion, results)
                completion = await self._ask(
                    self._llm,
                    messages,
                    kind="reply+memory",
                    model=model,
                    notes=notes,
                    tools=tools,
                    tool_choice="none",
                )
            if images:
                await self._keep_image_notes(batch, completion, images, log)
            replies = await self._read(completion, log, notes, prompt)
            if not replies and decision is Decision.ANSWER and not searched:
                log.info("fallback: empty reply where an answer is due; asking once more")
                nudged = [*messages, ChatMessage("assistant", completion.text)]
                nudged.append(ChatMessage("user", _NUDGE))
                completion = await self._ask(
                    self._llm, nudged, kind="nudge", model=model, notes=notes
                )
                replies = await self._read(completion, log, notes, prompt)
        except LLMUnavailable as exc:
            log.warning("LLM unavailable, staying silent: {}", exc)
            failed = BatchOutcome.FAILED
            return Answer(failed, error=str(exc), trace=notes.freeze(failed, error=str(exc)))
        except BadLLMReply as exc:
            log.warning("no usable reply, staying silent: {}", exc)
            failed = BatchOutcome.FAILED
            return Answer(failed, error=str(exc), trace=notes.freeze(failed, error=str(exc)))
        replies = self._guarded(batch, replies, notes, prompt)
        if not replies:
            return Answer(BatchOutcome.SILENT, trace=notes.freeze(BatchOutcome.SILENT))
        promises = await self._promised(batch, replies, notes)
        self._gate.talked_with(batch.chat, answered_senders(batch.messages))
        planned = plan_replies(
            replies,
            start=self._now(),
            text_limit=text_limit,
            batch_ids=frozenset(m.message_id for m in batch.messages),
        )
        answered = BatchOutcome.ANSWERED
        return Answer(answered, planned, trace=notes.freeze(answered), promises=promises)

    async def answer_occasion(
        self, batch: Batch, occasion: Occasion, *, text_limit: int, chat_title: str | None
    ) -> Answer:
        """Answer an initiative batch with one LLM call: no tool, splitter or nudge.

        Silence is a good answer to a follow-up or an opener. A reminder is always
        delivered: when the model says nothing, or fails, or a budget cap allows no call,
        its note is sent as written. A soft cap stops follow-ups and openers (optional
        calls), a hard cap every call.
        """
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        notes = TraceNotes(batch, self._now(), occasion=occasion, prices=self._config.budget)
        error: str | None = None
        replies: list[Reply] = []
        capped = await self._spending.refusal(batch.chat, optional=occasion.may_stay_silent)
        if capped is not None:  # a budget cap: a reminder still goes, as its note
            log.info("the {} makes no LLM call: {}", occasion.kind, capped)
            notes.guards.append(f"no LLM call: {capped}")
        else:
            prompt = await self._prompter.request(
                batch, chat_title=chat_title, notes=notes, occasion=occasion
            )
            try:
                model = self._config.llm.model
                completion = await self._ask(
                    self._llm, prompt.messages, kind="initiative", model=model, notes=notes
                )
                replies = await self._read(completion, log, notes, prompt, splitter=False)
            except (LLMUnavailable, BadLLMReply) as exc:
                error = str(exc)
                log.warning("the {} got no usable answer: {}", occasion.kind, exc)
        outcome = BatchOutcome.FAILED if error else BatchOutcome.ANSWERED
        if not replies and occasion.may_stay_silent:
            outcome = outcome if error else BatchOutcome.SILENT
            return Answer(outcome, error=error, trace=notes.freeze(outcome, error=error))
        if not replies:
            log.info("reminder #{} sent as its note was written", occasion.later_id)
            replies, notes.tier = [Reply(Text(occasion.note))], "note"
        planned = plan_replies(
            replies, start=self._now(), text_limit=text_limit, batch_ids=frozenset()
        )
        return Answer(outcome, planned, error=error, trace=notes.freeze(outcome, error=error))

    async def _promised(
        self, batch: Batch, replies: list[Reply], notes: TraceNotes
    ) -> tuple[Promise, ...]:
        """Keep the plan's later items that can be kept; trace those refused, and why."""
        laters = [reply.item for reply in replies if isinstance(reply.item, Later)]
        if not laters:
            return ()
        kept, refused = keep_promises(
            laters,
            pending=await self._store.pending_later_count(batch.chat),
            now=self._now(),
            zone=self._config.bot.zone,
            config=self._config.initiative,
            asker=asker_of(batch.messages),
        )
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        for item in refused:
            log.info("later item refused: {}", item.reason)
        notes.dropped += refused
        notes.promised += kept
        return tuple(kept)

    def _guarded(
        self, batch: Batch, replies: list[Reply], notes: TraceNotes, offer: Request
    ) -> list[Reply]:
        """Drop a repeat of the bot's last words; on QQ with ``strip_urls``, replace links."""
        replies, repeats = without_repeats(replies, offer.bot_said)
        _note_dropped(notes, repeats)
        if batch.chat.platform == "qq" and self._config.qq.strip_urls:
            replies, replaced = without_links(replies)
            if replaced:
                logger.bind(chat=str(batch.chat), batch=batch.id).info(
                    "{} link(s) replaced with [link] (qq.strip_urls)", replaced
                )
                notes.guards.append(f"{replaced} link(s) replaced with [link]")
        return replies

    def _warn_vision_refused(self, exc: ImagesRefused) -> None:
        """Say once per run that the model refuses pictures; every batch re-asks."""
        if self._warned_vision_refused:
            logger.info("pictures refused again; re-asking without them")
            return
        self._warned_vision_refused = True
        logger.warning(
            "the LLM refused a request with pictures ({}); re-asking without them. If this "
            "model cannot see images, set llm.vision = false",
            exc,
        )

    async def _keep_image_notes(
        self,
        batch: Batch,
        completion: Completion,
        images: tuple[ImageInput, ...],
        log: Logger,
    ) -> None:
        """Store what the model wrote about the pictures it saw, for later prompts."""
        shown = frozenset(image.message_id for image in images)
        seen = parse_image_notes(completion.text, message_ids=shown)
        if not seen:
            return
        try:
            kept = await self._store.add_image_notes(batch.chat, seen)
            if self._stickers is not None:  # a sticker's note becomes its caption
                await self._stickers.caption_from_notes(batch.chat, seen)
        except StorageError as exc:  # the answer matters more than the note
            log.warning("image notes not kept: {}", exc)
            return
        log.debug("{} image note(s) kept", kept)

    async def _ask(
        self,
        llm: LLM,
        messages: list[ChatMessage],
        *,
        kind: str,
        model: str,
        notes: TraceNotes,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = "auto",
    ) -> Completion:
        """Make one LLM call; keep what it cost, and note it, how long it took and how it
        ended, in ``notes``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            completion = await llm.complete(
                messages, json_mode=self._config.llm.json_mode, tools=tools, tool_choice=tool_choice
            )
        except LLMError as exc:
            notes.call(kind, model, loop.time() - started, error=str(exc))
            raise
        usage = usage_of(messages, completion)
        notes.call(kind, model, loop.time() - started, completion, usage=usage)
        await self._spending.note(notes.batch.chat, kind, usage)
        return completion

    async def _read(
        self,
        completion: Completion,
        log: Logger,
        notes: TraceNotes,
        offer: Request,
        *,
        splitter: bool = True,
    ) -> list[Reply]:
        """Read replies from a completion, down the fallback chain; raise if all fail.

        Without ``splitter`` (an initiative batch, which makes one call) the text split
        follows the JSON at once.

        Whatever tier reads them, no reply JSON is left in a text, and only the kinds of
        item the chat is offered are kept, a reaction only on a message the prompt showed
        (each one dropped is logged and traced).
        """
        pacing = self._config.pacing
        try:
            plan = parse_replies(
                completion.text,
                finish_reason=completion.finish_reason,
                max_delay_s=pacing.max_delay_s,
            )
        except BadLLMReply as exc:
            reason = str(exc)
        else:
            notes.tier = "fenced" if "```" in completion.text else "json"
            return self._kept(plan.replies, plan.dropped, notes, offer)
        if not completion.text.strip():
            msg = f"empty output ({reason})"
            raise BadLLMReply(msg)
        if splitter:
            replies = await self._split(completion, reason, log, notes, offer)
            if replies:
                return replies
        else:
            log.info("fallback: text split ({})", reason)
        return self._split_by_hand(completion, notes, offer, reason)

    async def _split(
        self, completion: Completion, reason: str, log: Logger, notes: TraceNotes, offer: Request
    ) -> list[Reply]:
        """Ask the splitter to turn the output into a plan; ``[]`` when it cannot."""
        pacing = self._config.pacing
        capped = await self._spending.refusal(notes.batch.chat, optional=True)
        if capped is not None:
            log.info("fallback: text split ({}; the splitter is an optional call)", capped)
            notes.guards.append(f"splitter skipped: {capped}")
            return []
        log.info("fallback: splitter ({})", reason)
        splitter_model = self._config.llm.splitter.model or self._config.llm.model
        try:
            split = await self._ask(
                self._splitter,
                splitter_messages(completion.text),
                kind="splitter",
                model=splitter_model,
                notes=notes,
            )
            plan = parse_replies(
                split.text, finish_reason=split.finish_reason, max_delay_s=pacing.max_delay_s
            )
        except (LLMUnavailable, BadLLMReply) as exc:
            log.info("fallback: text split (splitter failed: {})", exc)
        else:
            replies = self._kept(plan.replies, plan.dropped, notes, offer)
            if replies:
                notes.tier = "splitter"
                return replies
            # The main model said something; the splitter may not silence it.
            log.info("fallback: text split (the splitter returned no replies)")
        return []

    def _split_by_hand(
        self, completion: Completion, notes: TraceNotes, offer: Request, reason: str
    ) -> list[Reply]:
        """The last fallback: cut the text into messages; raise if nothing is left."""
        pacing = self._config.pacing
        split_up = split_text(
            completion.text, chars_per_s=pacing.typing_chars_per_s, max_delay_s=pacing.max_delay_s
        )
        replies = self._kept(split_up, [], notes, offer)
        if not replies:
            msg = f"nothing to say could be read from the output ({reason})"
            raise BadLLMReply(msg)
        notes.tier = "text-split"
        return replies

    @staticmethod
    def _kept(
        replies: list[Reply], dropped: list[DroppedItem], notes: TraceNotes, offer: Request
    ) -> list[Reply]:
        """Keep what may reach the chat: no reply JSON in a text, only offered kinds."""
        kept, refused = deliverable(
            without_reply_json(replies), kinds=offer.kinds, shown_ids=offer.message_ids
        )
        _note_dropped(notes, [*dropped, *refused])
        return kept


def _note_dropped(notes: TraceNotes, items: Sequence[DroppedItem]) -> None:
    """Log each item of a plan that will not be sent, and list it in the trace."""
    log = logger.bind(chat=str(notes.batch.chat), batch=notes.batch.id)
    for item in items:
        log.info("{} item dropped: {}", item.kind, item.reason)
        notes.dropped.append(item)
