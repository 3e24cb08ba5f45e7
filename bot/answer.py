"""Answer one batch: admit, look, ask, tools, read, guard, plan.

A batch goes through named steps, each a method of :class:`Answerer` that reads and fills
in one :class:`_Turn`:

- **admit**: the gate (``bot/gate.py``) decides without a call; a batch it turns away
  leaves a trace with its reasons;
- **look**: with ``llm.vision``, the batch's newest pictures go into the call;
- **ask**: the one LLM call, on the request the prompter builds (``bot/context.py``);
- **tools**: the tool loop (``bot/tools/``): with ``[tools]`` on, a batch that addresses
  the bot is offered its tools (MCP servers, web search, ``search_memory``) for up to
  ``max_rounds`` extra calls; with it off, ``llm.memory_tool`` offers ``search_memory``
  (``bot/memory/tool.py``) for one, as it always did;
- **read**: the reply contract's fallback chain (``bot/reading.py``); an empty answer where
  one is due is nudged once, unless a tool round was spent (never a third call);
- **guard**: the guards (``bot/replies/guards.py``) drop a repeat of the bot's last words,
  after tool results a text repeating the system prompt, and, on QQ with
  ``qq.strip_urls``, replace links;
- **plan**: the later items are kept as promises (none after tool results: a result
  cannot schedule anything), the replies planned in time (and, on a platform whose
  replies name the message they answer, within its window: ``bot/replies/window.py``).

Every call is metered (``bot/calls.py``): its tokens are kept and the trace notes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from loguru import logger

from bot.budget import Spending
from bot.calls import Calls
from bot.config.settings import Settings
from bot.context import Prompter, Request
from bot.conversation import NO_WAIT, Wait
from bot.errors import BadLLMReply, ImagesRefused, LLMUnavailable
from bot.gate import CallGate, Decision, Verdict, decide
from bot.initiative.occasion import Occasion, OccasionKind
from bot.initiative.promises import Promise, asker_of, keep_promises
from bot.memory.stack import Memory
from bot.models import (
    Batch,
    BatchOutcome,
    ChatKey,
    ChatMessage,
    Completion,
    ImageInput,
    StoredMessage,
)
from bot.ports import LLM, PictureSource
from bot.reading import Reader, note_dropped
from bot.replies.guards import prompt_lines, without_links, without_prompt, without_repeats
from bot.replies.items import DroppedItem, Later, PlannedReply, Reply, Text
from bot.replies.plan import plan_replies
from bot.replies.window import Fitted, ReplyWindow, anchor_of, fit_window, open_anchor
from bot.stickers import Stickers
from bot.tools.loop import ToolLoop
from bot.tools.offer import NO_TOOLS, Offer, ToolOffers
from bot.tools.ports import Toolbox
from bot.trace import Trace, TraceNotes
from bot.vision import Eyes, ImageNotes
from bot.voice.hearing import Hearing

if TYPE_CHECKING:
    from loguru import Logger

LATER_AFTER_TOOLS = "a later item is not kept from an answer that read tool results"
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


class AnswerStore(ImageNotes, Protocol):
    """What answering reads and writes besides the prompt: what the model saw in the
    pictures, and how many promises the chat has pending."""

    async def pending_later_count(self, chat: ChatKey) -> int:
        """Count the chat's later items not yet run (pending or being run)."""
        ...

    async def newest_message_from(self, chat: ChatKey, sender_id: str) -> StoredMessage | None:
        """Return the newest message ``sender_id`` wrote in ``chat``, if any."""
        ...


@dataclass(slots=True)
class _Turn:
    """One batch on its way through the steps: what each step found, for the next."""

    batch: Batch
    notes: TraceNotes
    chat_title: str | None
    decision: Decision
    images: tuple[ImageInput, ...] = ()
    request: Request | None = None  # what the prompter built (the ask step)
    messages: list[ChatMessage] = field(default_factory=list)  # the exchange with the model
    completion: Completion | None = None  # the model's latest answer
    tools: Offer = NO_TOOLS  # what the reply call offers
    rounds: int = 0  # extra calls spent on tool results
    outside: bool = False  # a tool outside the core was called: its results were read

    @property
    def log(self) -> Logger:
        return logger.bind(chat=str(self.batch.chat), batch=self.batch.id)

    @property
    def offer(self) -> Request:
        """Return the request the ask step built."""
        if self.request is None:
            msg = "the request is built by the ask step"
            raise RuntimeError(msg)
        return self.request

    @property
    def answer(self) -> Completion:
        """Return the model's latest answer."""
        if self.completion is None:
            msg = "the model answers in the ask step"
            raise RuntimeError(msg)
        return self.completion

    def ended(self, outcome: BatchOutcome, *, why: str = "", error: str | None = None) -> Answer:
        """Return the batch's answer, with no replies, ended with ``outcome``."""
        trace = self.notes.freeze(outcome, error=error, why=why or None)
        return Answer(outcome, error=error, trace=trace)


class Answerer:
    """Turn a batch into planned replies with one LLM call (plus fallbacks if needed).

    With ``llm.vision`` on, the batch's newest pictures (from ``pictures``, one source per
    platform) go into that same call (:class:`~bot.vision.Eyes`); a provider that refuses
    them (HTTP 400) gets the batch once more without them.
    """

    def __init__(
        self,
        config: Settings,
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
        toolbox: Toolbox | None = None,
    ) -> None:
        self._config = config
        self._hearing = hearing
        self._gate = gate
        self._spending = spending
        self._eyes = Eyes(config, store, pictures or {}, stickers)
        self._store = store
        self._llm = llm
        self._memory = memory
        self._prompter = prompter
        self._now = now
        self._calls = Calls(spending, json_mode=config.llm.json_mode)
        self._reader = Reader(config, self._calls, splitter=splitter, spending=spending)
        self._offers = ToolOffers(config, spending, toolbox)
        self._loop = ToolLoop(
            self._calls,
            llm,
            memory,
            spending=spending,
            toolbox=toolbox,
            model=lambda: config.llm.model,
        )

    async def answer(
        self,
        batch: Batch,
        *,
        text_limit: int,
        chat_title: str | None,
        wait: Wait = NO_WAIT,
        window: ReplyWindow | None = None,
    ) -> Answer:
        """Answer ``batch``; never raises for LLM trouble, it becomes a failed outcome.

        The steps: admit (the gate), look (the pictures), ask (one call), tools (the tool
        loop's rounds), read (the fallback chain, a nudge), guard, plan. ``wait`` says how
        its quiet wait went (which messages re-armed it, why it ended), for the trace. Its
        voice notes still being heard are waited for first, ``llm.timeout_s`` at most.
        ``window`` is the platform's reply window, if its replies name what they answer.
        """
        if self._hearing is not None:
            batch = await self._hearing.heard(batch, timeout_s=self._config.llm.timeout_s)
        notes = TraceNotes(
            batch,
            self._now(),
            wait=wait,
            prices=self._config.budget,
            profile=self._config.for_chat(batch.chat).profile,
        )
        reply_mode = self._config.for_chat(batch.chat).groups.reply_mode
        turn = _Turn(batch, notes, chat_title, decide(batch, reply_mode=reply_mode))
        verdict = await self._admit(turn)
        if not verdict.go:
            return turn.ended(BatchOutcome.SKIPPED, why=verdict.why)
        try:
            await self._look(turn)
            await self._ask(turn)
            await self._use_tools(turn)
            replies = await self._read(turn)
        except (LLMUnavailable, BadLLMReply) as exc:
            why = "LLM unavailable" if isinstance(exc, LLMUnavailable) else "no usable reply"
            turn.log.warning("{}, staying silent: {}", why, exc)
            return turn.ended(BatchOutcome.FAILED, error=str(exc))
        replies = self._guarded(turn, replies)
        if not replies:
            return turn.ended(BatchOutcome.SILENT)
        promises = await self._promised(batch, replies, notes, after_tools=turn.outside)
        planned = plan_replies(
            replies,
            start=self._now(),
            text_limit=text_limit,
            batch_ids=frozenset(m.message_id for m in batch.messages),
        )
        if window is not None:
            fitted = fit_window(
                planned, window, anchor_of(batch.messages), now=self._now(), limit=text_limit
            )
            planned = _noted(fitted, notes)
        answered = BatchOutcome.ANSWERED if planned else BatchOutcome.SILENT
        return Answer(answered, planned, trace=notes.freeze(answered), promises=promises)

    # -- the steps ----------------------------------------------------------------------

    async def _admit(self, turn: _Turn) -> Verdict:
        """Ask the gate whether the batch may cost a call; note its reasons either way."""
        verdict = await self._gate.admit(turn.batch)
        turn.notes.gate = verdict.reasons
        if not verdict.go:
            reasons = "; ".join(verdict.reasons)
            turn.log.info("{} (the gate: {}): no LLM call, kept as context", verdict.why, reasons)
        return verdict

    async def _look(self, turn: _Turn) -> None:
        """With ``llm.vision``, fetch the batch's newest pictures for the call."""
        turn.images = await self._eyes.look(turn.batch)

    async def _ask(self, turn: _Turn) -> None:
        """Build the request and make the one call, the batch's tools offered; a provider
        that refuses the pictures is asked again without them."""
        turn.tools = await self._offers.offer(turn.batch)
        if turn.tools.withheld:
            turn.notes.guards.append(turn.tools.withheld)
        told = bool(turn.tools.tools) and not turn.tools.legacy
        turn.request = await self._prompter.request(
            turn.batch,
            chat_title=turn.chat_title,
            images=turn.images,
            notes=turn.notes,
            tools=told,
        )
        try:
            turn.completion = await self._reply_call(turn, kind="reply")
        except ImagesRefused as exc:
            self._eyes.refused(exc)
            turn.images = ()
            turn.request = await self._prompter.request(
                turn.batch,
                chat_title=turn.chat_title,
                notes=turn.notes,
                recalled=turn.request.recalled,
                tools=told,
            )
            turn.completion = await self._reply_call(turn, kind="reply")
        turn.messages = list(turn.request.messages)

    async def _use_tools(self, turn: _Turn) -> None:
        """Spend the batch's tool rounds: answer the model's calls, ask again."""
        looped = await self._loop.run(
            turn.messages,
            turn.answer,
            turn.tools,
            chat=turn.batch.chat,
            notes=turn.notes,
            may_embed=not turn.offer.recalled.embedded,
        )
        turn.messages, turn.completion = looped.messages, looped.completion
        turn.rounds, turn.outside = looped.rounds, looped.outside

    async def _read(self, turn: _Turn) -> list[Reply]:
        """Keep the image notes, read the replies; when an answer is due and none came
        (and no tool round was spent), nudge once."""
        if turn.images:
            await self._eyes.keep_notes(turn.batch, turn.answer, turn.images, turn.log)
        replies = await self._reader.read(turn.answer, turn.notes, turn.offer)
        if replies or turn.rounds or turn.decision is not Decision.ANSWER:
            return replies
        turn.log.info("fallback: empty reply where an answer is due; asking once more")
        nudged = [*turn.messages, ChatMessage("assistant", turn.answer.text)]
        nudged.append(ChatMessage("user", _NUDGE))
        model = self._config.llm.model
        turn.completion = await self._calls.ask(
            self._llm, nudged, kind="nudge", model=model, notes=turn.notes
        )
        return await self._reader.read(turn.answer, turn.notes, turn.offer)

    async def _reply_call(self, turn: _Turn, *, kind: str) -> Completion:
        """Make a reply call on what the turn holds so far, the batch's tools offered."""
        return await self._calls.ask(
            self._llm,
            turn.messages or turn.offer.messages,
            kind=kind,
            model=self._config.llm.model,
            notes=turn.notes,
            tools=turn.tools.tools,
        )

    async def answer_occasion(
        self,
        batch: Batch,
        occasion: Occasion,
        *,
        text_limit: int,
        chat_title: str | None,
        window: ReplyWindow | None = None,
    ) -> Answer:
        """Answer an initiative batch with one LLM call (and the tool loop's rounds, with
        ``[tools] in_initiative``): no splitter or nudge.

        Silence is a good answer to a follow-up or an opener. A reminder is always
        delivered: when the model says nothing, or fails, or a budget cap allows no call,
        its note is sent as written. A soft cap stops follow-ups and openers (optional
        calls), a hard cap every call. On a platform with reply windows a reminder answers
        its asker's newest message while that message's window is open; otherwise what
        the batch says goes as one message that answers nothing.
        """
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        notes = TraceNotes(
            batch,
            self._now(),
            occasion=occasion,
            prices=self._config.budget,
            profile=self._config.for_chat(batch.chat).profile,
        )
        error: str | None = None
        replies: list[Reply] = []
        capped = await self._spending.refusal(batch.chat, optional=occasion.may_stay_silent)
        if capped is not None:  # a budget cap: a reminder still goes, as its note
            log.info("the {} makes no LLM call: {}", occasion.kind, capped)
            notes.guards.append(f"no LLM call: {capped}")
        else:
            tools = await self._offers.offer(batch, initiative=True)
            prompt = await self._prompter.request(
                batch,
                chat_title=chat_title,
                notes=notes,
                occasion=occasion,
                tools=bool(tools.tools),
            )
            try:
                model = self._config.llm.model
                completion = await self._calls.ask(
                    self._llm,
                    prompt.messages,
                    kind="initiative",
                    model=model,
                    notes=notes,
                    tools=tools.tools,
                )
                looped = await self._loop.run(
                    prompt.messages,
                    completion,
                    tools,
                    chat=batch.chat,
                    notes=notes,
                    may_embed=False,
                )
                replies = await self._reader.read(looped.completion, notes, prompt, splitter=False)
                replies = self._linkless(batch.chat, replies, notes)  # no repeat guard: a
                # reminder may say what it said yesterday
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
        if window is not None:
            asked = open_anchor(await self._asker_anchor(occasion), window, now=self._now())
            fitted = fit_window(planned, window, asked, now=self._now(), limit=text_limit)
            planned = _noted(fitted, notes)
        return Answer(outcome, planned, error=error, trace=notes.freeze(outcome, error=error))

    async def _asker_anchor(self, occasion: Occasion) -> StoredMessage | None:
        """Return a reminder's asker's newest message in its chat, if it has one."""
        if occasion.kind is not OccasionKind.REMIND or occasion.asker_id is None:
            return None
        return await self._store.newest_message_from(occasion.chat, occasion.asker_id)

    async def _promised(
        self, batch: Batch, replies: list[Reply], notes: TraceNotes, *, after_tools: bool
    ) -> tuple[Promise, ...]:
        """Keep the plan's later items that can be kept; trace those refused, and why.

        An answer that read tool results keeps none: what a tool returned must not be
        able to schedule anything.
        """
        laters = [reply.item for reply in replies if isinstance(reply.item, Later)]
        if not laters:
            return ()
        if after_tools:
            note_dropped(notes, [DroppedItem(later.kind, LATER_AFTER_TOOLS) for later in laters])
            return ()
        kept, refused = keep_promises(
            laters,
            pending=await self._store.pending_later_count(batch.chat),
            now=self._now(),
            zone=self._config.bot.zone,
            config=self._config.for_chat(batch.chat).initiative,
            asker=asker_of(batch.messages),
        )
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        for item in refused:
            log.info("later item refused: {}", item.reason)
        notes.dropped += refused
        notes.promised += kept
        return tuple(kept)

    def _guarded(self, turn: _Turn, replies: list[Reply]) -> list[Reply]:
        """Drop a repeat of the bot's last words and, after tool results, a text that
        repeats the system prompt; on QQ with ``strip_urls``, replace links."""
        replies, repeats = without_repeats(replies, turn.offer.bot_said)
        note_dropped(turn.notes, repeats)
        if turn.outside:
            system = turn.offer.messages[0].content if turn.offer.messages else ""
            replies, leaked = without_prompt(replies, prompt_lines(system))
            note_dropped(turn.notes, leaked)
        return self._linkless(turn.batch.chat, replies, turn.notes)

    def _linkless(self, chat: ChatKey, replies: list[Reply], notes: TraceNotes) -> list[Reply]:
        """On QQ with ``strip_urls``, replace the links of every text (initiative's too)."""
        if chat.platform != "qq" or not self._config.qq.strip_urls:
            return replies
        replies, replaced = without_links(replies)
        if replaced:
            logger.bind(chat=str(chat)).info(
                "{} link(s) replaced with [link] (qq.strip_urls)", replaced
            )
            notes.guards.append(f"{replaced} link(s) replaced with [link]")
        return replies


def _noted(fitted: Fitted, notes: TraceNotes) -> tuple[PlannedReply, ...]:
    """Note in the trace what fitting a plan into its window dropped and changed."""
    notes.dropped += fitted.dropped
    notes.guards += fitted.changes
    return fitted.replies
