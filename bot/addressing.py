"""Whether a message addresses the bot, and which group messages are kept at all.

A message names the bot by its display name or an alias (:class:`BotNames`, which the
adapters read the text with), mentions it or replies to it (the adapters mark those). The
core adds what the wire cannot tell (:class:`Addressing`): a group message that continues
the exchange being answered, or quotes a reply the bot sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from loguru import logger

from bot.access import Access
from bot.config.settings import Settings
from bot.conversation import Conversations
from bot.errors import StorageError
from bot.models import ChatKey, IncomingMessage


@dataclass(frozen=True, slots=True)
class BotNames:
    """The names that count as addressing the bot in a group (``bot.name``, ``bot.aliases``).

    Built once per platform, not per message.
    """

    name: str  # the display name, as the bot is shown
    folded: tuple[str, ...]  # every name and alias, case-folded

    @classmethod
    def of(cls, name: str, aliases: Iterable[str] = ()) -> BotNames:
        """Collect ``name`` and ``aliases``, case-folded, leaving out blank ones."""
        return cls(name, tuple(n.casefold() for n in (name, *aliases) if n.strip()))

    def said_in(self, text: str) -> bool:
        """Tell whether ``text`` contains one of the names, ignoring case."""
        folded = text.casefold()
        return any(name in folded for name in self.folded)


class Quotes(Protocol):
    """Which messages the bot sent, for a quote the platform names only by its id."""

    async def is_bot_message(self, chat: ChatKey, message_id: str) -> bool:
        """Tell whether ``message_id`` in ``chat`` is a message the bot sent."""
        ...


class Addressing:
    """Mark the group messages that address the bot without naming it; leave out the
    unaddressed ones a chat does not keep."""

    def __init__(
        self, config: Settings, quotes: Quotes, conversations: Conversations, access: Access
    ) -> None:
        self._config = config
        self._quotes = quotes
        self._conversations = conversations
        self._access = access

    async def marked(
        self, messages: Sequence[IncomingMessage], *, at: float
    ) -> list[IncomingMessage]:
        """Return the messages to keep, each marked if it addresses the bot. Left out: one
        the bot may not keep (``bot/access.py``), and an unaddressed group message where
        ``groups.store_unaddressed`` says so. ``at`` is the loop time they arrived at."""
        kept = []
        for message in messages:
            if self._access.refusal(message) is not None:
                continue
            if await self._addresses_bot(message, at=at):
                message = replace(message, addresses_bot=True)
            unaddressed = message.chat.is_group and not message.addresses_bot
            if not unaddressed or self._keeps_unaddressed(message.chat):
                kept.append(message)
        return kept

    async def _addresses_bot(self, message: IncomingMessage, *, at: float) -> bool:
        """Tell whether a group message that does not name the bot is meant for it anyway.

        It is when it continues the exchange being answered (``Conversation.continues``),
        or quotes the bot's words: Telegram says who wrote a quoted message and its adapter
        marks the quote itself; OneBot gives only the quoted id, looked up among the bot's
        sent replies (a database that cannot say leaves it unmarked: it is still stored).
        """
        conversation = self._conversations.get(message.chat)
        continue_s = self._config.for_chat(message.chat).groups.continue_s
        if conversation is not None and conversation.continues(
            message, at=at, continue_s=continue_s
        ):
            return True
        quoted = message.reply_to_id
        if not message.chat.is_group or message.addresses_bot or quoted is None:
            return False
        try:
            return await self._quotes.is_bot_message(message.chat, quoted)
        except StorageError as exc:
            logger.bind(chat=str(message.chat)).warning(
                "whether message {} quotes the bot is unknown: {}", message.message_id, exc
            )
            return False

    def _keeps_unaddressed(self, chat: ChatKey) -> bool:
        store_unaddressed = self._config.groups.store_unaddressed
        return store_unaddressed or self._config.for_chat(chat).groups.reply_mode != "mention"
