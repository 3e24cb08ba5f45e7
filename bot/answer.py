"""Answer one batch: decide whether to, build the context, make one LLM call, plan replies.

The reply contract's fallback chain lives here: parse the JSON; if that fails, ask the
splitter to turn the raw text into JSON; if that fails too, split the text by hand with
typing-speed delays. Every fallback that fires is logged with the chat key and batch id.

With ``llm.memory_tool`` on, the reply call also offers ``search_memory``
(``bot/memory_tool.py``): if the model calls it, the batch is asked once more with the
results, and that second answer goes down the same chain. Never a third call: the nudge
for a missing answer is skipped then. Every call made is kept in the :class:`Answer`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from loguru import logger

from bot.config import Config
from bot.errors import BadLLMReply, LLMUnavailable
from bot.memory import Memory
from bot.memory_tool import SEARCH_MEMORY, follow_up, tool_results
from bot.models import (
    Batch,
    BatchOutcome,
    ChatKey,
    ChatMessage,
    Completion,
    LLMCallRecord,
    PlannedReply,
    Reply,
)
from bot.ports import LLM, MessageLog
from bot.prompt import PromptInput, build_prompt, history_limit, system_prompt
from bot.recall import Recalled
from bot.replies import REPLY_CONTRACT, looks_like_question, parse_replies, splitter_messages
from bot.splitting import split_text, split_to_limit

if TYPE_CHECKING:
    from loguru import Logger

_NUDGE = (
    "You returned no replies, but this message needs an answer. "
    "Answer now, in the same JSON format, with at least one reply."
)


class Decision(enum.Enum):
    """Whether a batch goes to the LLM, and whether silence is an acceptable answer."""

    SKIP = enum.auto()
    ANSWER = enum.auto()  # must say something
    MAY_STAY_SILENT = enum.auto()


def decide(batch: Batch, *, reply_mode: str) -> Decision:
    """Apply SPEC §6: private chats are answered, groups per ``groups.reply_mode``."""
    texts = [m.text for m in batch.messages]
    if not batch.chat.is_group:
        return Decision.MAY_STAY_SILENT if not looks_like_question(texts) else Decision.ANSWER
    if any(m.addresses_bot for m in batch.messages):
        return Decision.ANSWER
    if reply_mode == "mention":
        return Decision.SKIP
    return Decision.MAY_STAY_SILENT


@dataclass(frozen=True, slots=True)
class Answer:
    """What came of one batch, with what recall found and each LLM call it made."""

    outcome: BatchOutcome
    replies: tuple[PlannedReply, ...] = ()
    error: str | None = None
    recalled: Recalled | None = None
    calls: tuple[LLMCallRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class _Prompt:
    """One batch's request and what went into it."""

    messages: list[ChatMessage]
    recalled: Recalled


def _ended(
    outcome: BatchOutcome,
    prompt: _Prompt,
    calls: Sequence[LLMCallRecord],
    *,
    replies: tuple[PlannedReply, ...] = (),
    error: str | None = None,
) -> Answer:
    return Answer(outcome, replies, error, recalled=prompt.recalled, calls=tuple(calls))


def plan_replies(
    replies: Sequence[Reply],
    *,
    start: datetime,
    text_limit: int,
    batch_ids: frozenset[str],
) -> tuple[PlannedReply, ...]:
    """Turn delays into due times (the first reply at once), split long ones, check quotes."""
    planned: list[PlannedReply] = []
    due = start
    for position, reply in enumerate(replies):
        # The first goes out at once: the LLM call already took its time.
        if position:
            due += timedelta(seconds=reply.send_delay_seconds)
        quote = reply.reply_to if reply.reply_to in batch_ids else None
        for index, piece in enumerate(split_to_limit(reply.content, text_limit)):
            planned.append(PlannedReply(piece, due, quote if index == 0 else None))
    return tuple(planned)


class Answerer:
    """Turn a batch into planned replies with one LLM call (plus fallbacks if needed)."""

    def __init__(
        self,
        config: Config,
        store: MessageLog,
        llm: LLM,
        *,
        splitter: LLM,
        memory: Memory,
        now: Callable[[], datetime],
    ) -> None:
        self._config = config
        self._store = store
        self._llm = llm
        self._splitter = splitter
        self._memory = memory
        self._now = now

    def _prompt_input(
        self, chat: ChatKey, *, chat_title: str | None, persona: str, recalled: str = ""
    ) -> PromptInput:
        return PromptInput(
            persona=persona,
            recalled=recalled,
            contract=REPLY_CONTRACT,
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
        return system_prompt(self._prompt_input(chat, chat_title=chat_title, persona=persona.text))

    async def prompt_for(self, batch: Batch, *, chat_title: str | None) -> list[ChatMessage]:
        """Build the request for ``batch`` from its chat's history."""
        return (await self._prompt(batch, chat_title=chat_title)).messages

    async def _prompt(self, batch: Batch, *, chat_title: str | None) -> _Prompt:
        chat = batch.chat
        persona = await self._memory.persona(chat)
        asked = [m.text for m in batch.messages if not m.from_bot]
        recalled = await self._memory.recall(chat, asked, persona=persona)
        budget = self._config.memory.context_budget_tokens
        history = await self._store.recent_history(
            chat, exclude_batch=batch.id, limit=history_limit(budget)
        )
        unsaid = await self._store.unsaid_replies(chat, before_batch=batch.id)
        spec = replace(
            self._prompt_input(
                chat, chat_title=chat_title, persona=persona.text, recalled=recalled.render()
            ),
            batch=batch.messages,
            history=history,
            unsaid=unsaid,
        )
        return _Prompt(build_prompt(spec), recalled)

    async def answer(self, batch: Batch, *, text_limit: int, chat_title: str | None) -> Answer:
        """Answer ``batch``; never raises for LLM trouble, it becomes a failed outcome."""
        log = logger.bind(chat=str(batch.chat), batch=batch.id)
        decision = decide(batch, reply_mode=self._config.groups.reply_mode)
        if decision is Decision.SKIP:
            log.debug("batch not addressed to the bot; kept as context")
            return Answer(BatchOutcome.SKIPPED)
        prompt = await self._prompt(batch, chat_title=chat_title)
        calls: list[LLMCallRecord] = []
        try:
            replies = await self._ask(batch, prompt, decision, calls, log)
        except LLMUnavailable as exc:
            log.warning("LLM unavailable, staying silent: {}", exc)
            return _ended(BatchOutcome.FAILED, prompt, calls, error=str(exc))
        except BadLLMReply as exc:
            log.warning("no usable reply, staying silent: {}", exc)
            return _ended(BatchOutcome.FAILED, prompt, calls, error=str(exc))
        if not replies:
            return _ended(BatchOutcome.SILENT, prompt, calls)
        planned = plan_replies(
            replies,
            start=self._now(),
            text_limit=text_limit,
            batch_ids=frozenset(m.message_id for m in batch.messages),
        )
        return _ended(BatchOutcome.ANSWERED, prompt, calls, replies=planned)

    async def _ask(
        self,
        batch: Batch,
        prompt: _Prompt,
        decision: Decision,
        calls: list[LLMCallRecord],
        log: Logger,
    ) -> list[Reply]:
        """Make the reply call (and the memory tool's follow-up); read replies from it."""
        json_mode = self._config.llm.json_mode
        tools = (SEARCH_MEMORY,) if self._config.llm.memory_tool else ()
        messages = prompt.messages
        completion = await self._llm.complete(messages, json_mode=json_mode, tools=tools)
        calls.append(LLMCallRecord.of("reply", completion))
        searched = bool(completion.tool_calls)
        if searched:
            log.info("the model searched memory {} time(s)", len(completion.tool_calls))
            results = await tool_results(
                self._memory,
                batch.chat,
                completion.tool_calls,
                may_embed=not prompt.recalled.embedded,
            )
            messages = follow_up(messages, completion, results)
            completion = await self._llm.complete(
                messages, json_mode=json_mode, tools=tools, tool_choice="none"
            )
            calls.append(LLMCallRecord.of("reply+memory", completion))
        replies = await self._read(completion, calls, log)
        if not replies and decision is Decision.ANSWER and not searched:
            log.info("fallback: empty reply where an answer is due; asking once more")
            nudged = [*messages, ChatMessage("assistant", completion.text)]
            nudged.append(ChatMessage("user", _NUDGE))
            completion = await self._llm.complete(nudged, json_mode=json_mode)
            calls.append(LLMCallRecord.of("nudge", completion))
            replies = await self._read(completion, calls, log)
        return replies

    async def _read(
        self, completion: Completion, calls: list[LLMCallRecord], log: Logger
    ) -> list[Reply]:
        """Read replies from a completion, down the fallback chain; raise if all fail."""
        pacing = self._config.pacing
        try:
            return parse_replies(
                completion.text,
                finish_reason=completion.finish_reason,
                max_delay_s=pacing.max_delay_s,
            )
        except BadLLMReply as exc:
            reason = str(exc)
        if not completion.text.strip():
            msg = f"empty output ({reason})"
            raise BadLLMReply(msg)
        log.info("fallback: splitter ({})", reason)
        try:
            split = await self._splitter.complete(
                splitter_messages(completion.text), json_mode=self._config.llm.json_mode
            )
            calls.append(LLMCallRecord.of("splitter", split))
            replies = parse_replies(
                split.text, finish_reason=split.finish_reason, max_delay_s=pacing.max_delay_s
            )
        except (LLMUnavailable, BadLLMReply) as exc:
            log.info("fallback: text split (splitter failed: {})", exc)
        else:
            if replies:
                return replies
            # The main model said something; the splitter may not silence it.
            log.info("fallback: text split (the splitter returned no replies)")
        replies = split_text(
            completion.text, chars_per_s=pacing.typing_chars_per_s, max_delay_s=pacing.max_delay_s
        )
        if not replies:
            msg = f"nothing to say could be read from the output ({reason})"
            raise BadLLMReply(msg)
        return replies
