"""Keep each chat's newest batch traces in SQL; read reply fates from the outbox.

A trace is stored as the JSON of :class:`bot.trace.Trace`, one row per batch. Writing one
trims the chat to its newest ``keep``, in the same transaction, so the table stays small
however long a chat lives.
"""

from __future__ import annotations

import json

from bot.models import ChatKey
from bot.trace import ReplyFate, ShownTrace, Trace, trace_from_json, trace_to_json
from storage.database import Database
from storage.values import unix


class SqliteTraces(Database):
    """The :class:`bot.ports.TraceLog` in SQLite."""

    async def keep_trace(self, trace: Trace, *, keep: int) -> None:
        """Store a batch's trace; keep only the chat's ``keep`` newest."""
        chat = str(trace.chat)
        async with self._transaction() as db:
            await db.execute(
                "INSERT INTO traces (chat_key, batch_id, created_at, record) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (batch_id) DO UPDATE SET record = excluded.record",
                (chat, trace.batch_id, unix(trace.at, "trace.at"), trace_to_json(trace)),
            )
            await db.execute(
                "DELETE FROM traces WHERE chat_key = ? AND id IN (SELECT id FROM traces"
                " WHERE chat_key = ? ORDER BY id DESC LIMIT -1 OFFSET ?)",
                (chat, chat, keep),
            )

    async def recent_traces(self, chat: ChatKey, *, count: int) -> list[ShownTrace]:
        """Return up to ``count`` newest traces of ``chat``, newest first, with reply fates
        and the names their messages were written under."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    "SELECT batch_id, record FROM traces WHERE chat_key = ?"
                    " ORDER BY id DESC LIMIT ?",
                    (str(chat), count),
                )
            )
            fates = await db.execute_fetchall(
                "SELECT batch_id, seq, kind, state, content, sent_as FROM outbox"
                " WHERE batch_id IN (SELECT value FROM json_each(?)) ORDER BY batch_id, seq",
                (json.dumps([row["batch_id"] for row in rows]),),
            )
            traces = [trace_from_json(row["record"]) for row in rows]
            ids = sorted({message_id for trace in traces for message_id in trace.message_ids})
            written = await db.execute_fetchall(
                "SELECT message_id, sender_name FROM messages"
                " WHERE chat_key = ? AND message_id IN (SELECT value FROM json_each(?))",
                (str(chat), json.dumps(ids)),
            )
        senders: dict[str, str] = {row["message_id"]: row["sender_name"] for row in written}
        by_batch: dict[int, list[ReplyFate]] = {}
        for fate in fates:
            # A voice item whose words went out as text is "sent as content".
            instead = fate["sent_as"] not in {None, fate["kind"]}
            state = f"{fate['state']} as {fate['sent_as']}" if instead else fate["state"]
            by_batch.setdefault(fate["batch_id"], []).append(
                ReplyFate(fate["seq"], state, fate["content"], kind=fate["kind"])
            )
        return [
            ShownTrace(
                trace,
                tuple(by_batch.get(trace.batch_id, ())),
                {i: senders[i] for i in trace.message_ids if i in senders},
            )
            for trace in traces
        ]
