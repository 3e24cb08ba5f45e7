"""What the official QQ bot keeps across restarts, through the store (``storage/ledger.py``).

:class:`Ledger` is the port the platform writes through: the ``msg_seq`` of each passive
reply, the messages that answered nothing this month, and the gateway session it resumes
after a restart. The composition root hands the store in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bot.models import ChatKey, GatewaySession


class Ledger(Protocol):
    """The official QQ bot's numbers and session, kept in the store."""

    async def gateway_session(self, platform: str) -> GatewaySession | None:
        """Return the session ``platform`` last kept, if any."""
        ...

    async def keep_gateway_session(
        self, platform: str, session: GatewaySession, *, now: datetime
    ) -> None:
        """Keep where ``platform``'s event stream stands."""
        ...

    async def forget_gateway_session(self, platform: str) -> None:
        """Forget ``platform``'s session: the platform refused to resume it."""
        ...

    async def next_reply_seq(self, platform: str, message_id: str, *, now: datetime) -> int:
        """Return the next number of a reply to ``message_id`` (1 for the first)."""
        ...

    async def take_proactive(self, chat: ChatKey, month: str, *, per_month: int) -> int | None:
        """Count one message that answers nothing in ``chat`` this ``month``; ``None`` if
        ``per_month`` are spent."""
        ...
