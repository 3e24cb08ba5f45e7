"""Whether a chatter's words name the bot: its display name or one of its aliases."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
