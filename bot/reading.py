"""Read the model's output as replies, down the reply contract's fallback chain.

The reply JSON first; if it does not parse, the splitter turns the raw text into JSON
(an optional call, which a soft cap stops); if that fails too, the text is split by hand
at typing speed. Every fallback that fires is logged with the chat key and batch id.
Whatever tier reads them, no reply JSON is left in a text, and only the kinds of item
the chat was offered are kept (each one dropped is logged and traced).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loguru import logger

from bot.budget import Spending
from bot.calls import Calls
from bot.config.settings import Settings
from bot.context import Request
from bot.errors import BadLLMReply, LLMUnavailable
from bot.models import Completion
from bot.ports import LLM
from bot.replies.items import DroppedItem, Reply
from bot.replies.parse import splitter_messages
from bot.replies.plan import deliverable, parse_replies, without_reply_json
from bot.replies.splitting import split_text
from bot.trace import TraceNotes

if TYPE_CHECKING:
    from loguru import Logger


class Reader:
    """Read replies from a completion: the JSON, else the splitter's, else a text split."""

    def __init__(
        self, config: Settings, calls: Calls, *, splitter: LLM, spending: Spending
    ) -> None:
        self._config = config
        self._calls = calls
        self._splitter = splitter
        self._spending = spending

    async def read(
        self,
        completion: Completion,
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
        pacing = self._config.for_chat(notes.batch.chat).pacing
        log = _log(notes)
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
            return self.kept(plan.replies, plan.dropped, notes, offer)
        if not completion.text.strip():
            msg = f"empty output ({reason})"
            raise BadLLMReply(msg)
        if splitter:
            replies = await self._split(completion, reason, notes, offer)
            if replies:
                return replies
        else:
            log.info("fallback: text split ({})", reason)
        return self._split_by_hand(completion, notes, offer, reason)

    async def _split(
        self, completion: Completion, reason: str, notes: TraceNotes, offer: Request
    ) -> list[Reply]:
        """Ask the splitter to turn the output into a plan; ``[]`` when it cannot."""
        pacing = self._config.for_chat(notes.batch.chat).pacing
        log = _log(notes)
        capped = await self._spending.refusal(notes.batch.chat, optional=True)
        if capped is not None:
            log.info("fallback: text split ({}; the splitter is an optional call)", capped)
            notes.guards.append(f"splitter skipped: {capped}")
            return []
        log.info("fallback: splitter ({})", reason)
        splitter_model = self._config.llm.splitter.model or self._config.llm.model
        try:
            split = await self._calls.ask(
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
            replies = self.kept(plan.replies, plan.dropped, notes, offer)
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
        pacing = self._config.for_chat(notes.batch.chat).pacing
        split_up = split_text(
            completion.text, chars_per_s=pacing.typing_chars_per_s, max_delay_s=pacing.max_delay_s
        )
        replies = self.kept(split_up, [], notes, offer)
        if not replies:
            msg = f"nothing to say could be read from the output ({reason})"
            raise BadLLMReply(msg)
        notes.tier = "text-split"
        return replies

    @staticmethod
    def kept(
        replies: list[Reply], dropped: list[DroppedItem], notes: TraceNotes, offer: Request
    ) -> list[Reply]:
        """Keep what may reach the chat: no reply JSON in a text, only offered kinds."""
        kept, refused = deliverable(
            without_reply_json(replies), kinds=offer.kinds, shown_ids=offer.message_ids
        )
        note_dropped(notes, [*dropped, *refused])
        return kept


def note_dropped(notes: TraceNotes, items: Sequence[DroppedItem]) -> None:
    """Log each item of a plan that will not be sent, and list it in the trace."""
    log = _log(notes)
    for item in items:
        log.info("{} item dropped: {}", item.kind, item.reason)
        notes.dropped.append(item)


def _log(notes: TraceNotes) -> Logger:
    return logger.bind(chat=str(notes.batch.chat), batch=notes.batch.id)
