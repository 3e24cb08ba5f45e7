"""What a platform with passive replies and a resumable gateway keeps across restarts.

The official QQ bot numbers its replies to one message (``msg_seq``, unique per message
answered), counts the messages that answer nothing against a monthly quota, and resumes
its gateway session after a restart from the last event stored. Rows of reply numbers
are pruned once their message is past any window (an hour), and every chat's counts of
past months as a count of another month is taken, so neither table grows with time: they
hold the messages of the last two hours and the chats spoken to this month.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.models import ChatKey, GatewaySession
from storage.database import Database
from storage.values import unix

_SEQS_KEPT = timedelta(hours=2)  # past the longest passive window (60 min)


class SqliteLedger(Database):
    """The official QQ bot's ledger (``adapters/qqbot/ledger.py``) in SQLite."""

    async def gateway_session(self, platform: str) -> GatewaySession | None:
        """Return the session ``platform`` last kept, if any."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    "SELECT session_id, seq, bot_id, bot_name FROM gateway_sessions"
                    " WHERE platform = ?",
                    (platform,),
                )
            )
        if not rows:
            return None
        row = rows[0]
        return GatewaySession(row["session_id"], row["seq"], row["bot_id"], row["bot_name"])

    async def keep_gateway_session(
        self, platform: str, session: GatewaySession, *, now: datetime
    ) -> None:
        """Keep where ``platform``'s event stream stands (the sequence never goes back
        within one session)."""
        async with self._connection(urgent=True) as db:  # right after storing the events
            await db.execute(
                "INSERT INTO gateway_sessions"
                " (platform, session_id, seq, bot_id, bot_name, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (platform) DO UPDATE SET"
                " seq = CASE WHEN session_id = excluded.session_id"
                " THEN max(seq, excluded.seq) ELSE excluded.seq END,"
                " session_id = excluded.session_id, bot_id = excluded.bot_id,"
                " bot_name = excluded.bot_name, updated_at = excluded.updated_at",
                (
                    platform,
                    session.session_id,
                    session.seq,
                    session.bot_id,
                    session.bot_name,
                    unix(now, "now"),
                ),
            )

    async def forget_gateway_session(self, platform: str) -> None:
        """Forget ``platform``'s session: the platform refused to resume it."""
        async with self._connection() as db:
            await db.execute("DELETE FROM gateway_sessions WHERE platform = ?", (platform,))

    async def next_reply_seq(self, platform: str, message_id: str, *, now: datetime) -> int:
        """Return the next number of a reply to ``message_id`` (1 for the first)."""
        now_s = unix(now, "now")
        async with self._transaction() as db:
            await db.execute(
                "DELETE FROM reply_seqs WHERE created_at < ?",
                (now_s - _SEQS_KEPT.total_seconds(),),
            )
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO reply_seqs (platform, message_id, last_seq, created_at)"
                    " VALUES (?, ?, 1, ?) ON CONFLICT (platform, message_id)"
                    " DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq",
                    (platform, message_id, now_s),
                )
            )
        return int(rows[0]["last_seq"])

    async def take_proactive(self, chat: ChatKey, month: str, *, per_month: int) -> int | None:
        """Count one message that answers nothing in ``chat`` this ``month``; return how
        many the month has now, or ``None`` (nothing counted) if ``per_month`` are spent."""
        if per_month < 1:
            return None
        async with self._transaction() as db:
            await db.execute("DELETE FROM proactive_sends WHERE month <> ?", (month,))
            rows = list(
                await db.execute_fetchall(
                    "INSERT INTO proactive_sends (chat_key, month, sent) VALUES (?, ?, 1)"
                    " ON CONFLICT (chat_key, month) DO UPDATE SET sent = sent + 1"
                    " WHERE sent < ? RETURNING sent",
                    (str(chat), month, per_month),
                )
            )
        return int(rows[0]["sent"]) if rows else None
