"""Keep what the LLM calls cost, in tokens per chat, chat day and kind of call.

One row per (day, chat, kind) adds up its calls: the table stays small however busy the
bot is, and a day's figures are one indexed read.
"""

from __future__ import annotations

import sqlite3
from datetime import date

from bot.models import ChatKey, TokenCount, Usage, UsageRow
from storage.database import Database

_SUMS = (
    "coalesce(sum(calls), 0), coalesce(sum(prompt_tokens), 0),"
    " coalesce(sum(completion_tokens), 0), coalesce(sum(estimated_calls), 0)"
)


def _count(row: sqlite3.Row | tuple[int, ...], start: int = 0) -> TokenCount:
    """Read a :class:`TokenCount` from four columns of ``row`` from ``start`` on."""
    calls, prompt, completion, estimated = tuple(row)[start : start + 4]
    return TokenCount(int(calls), int(prompt), int(completion), int(estimated))


class SqliteUsage(Database):
    """The :class:`bot.ports.UsageLog` in SQLite."""

    async def add_usage(self, chat: ChatKey, day: date, kind: str, usage: Usage) -> None:
        """Add one call's tokens to its (day, chat, kind) row."""
        async with self._connection() as db:
            await db.execute(
                "INSERT INTO llm_usage (day, chat_key, kind, calls, prompt_tokens,"
                " completion_tokens, estimated_calls) VALUES (?, ?, ?, 1, ?, ?, ?)"
                " ON CONFLICT (day, chat_key, kind) DO UPDATE SET calls = calls + 1,"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens,"
                " estimated_calls = estimated_calls + excluded.estimated_calls",
                (
                    day.isoformat(),
                    str(chat),
                    kind,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    int(usage.estimated),
                ),
            )

    async def day_tokens(self, day: date, chat: ChatKey | None) -> tuple[TokenCount, TokenCount]:
        """Return the tokens of ``day``: the whole bot's, and ``chat``'s (none without one)."""
        async with self._connection() as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {_SUMS}, coalesce(sum(calls) FILTER (WHERE chat_key = :chat), 0),"
                    " coalesce(sum(prompt_tokens) FILTER (WHERE chat_key = :chat), 0),"
                    " coalesce(sum(completion_tokens) FILTER (WHERE chat_key = :chat), 0),"
                    " coalesce(sum(estimated_calls) FILTER (WHERE chat_key = :chat), 0)"
                    " FROM llm_usage WHERE day = :day",
                    {"day": day.isoformat(), "chat": "" if chat is None else str(chat)},
                )
            )
        return _count(rows[0]), _count(rows[0], 4)

    async def daily_tokens(
        self, first: date, last: date, *, chat: ChatKey | None = None
    ) -> dict[date, TokenCount]:
        """Return the tokens of each chat day from ``first`` to ``last`` that has any, of
        ``chat`` or of the whole bot."""
        only = "" if chat is None else " AND chat_key = :chat"
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                f"SELECT day, {_SUMS} FROM llm_usage WHERE day BETWEEN :first AND :last{only}"
                " GROUP BY day ORDER BY day",
                {"first": first.isoformat(), "last": last.isoformat(), "chat": str(chat)},
            )
        return {date.fromisoformat(row[0]): _count(row, 1) for row in rows}

    async def usage_rows(
        self, first: date, last: date, *, chat: ChatKey | None = None
    ) -> list[UsageRow]:
        """Return the (day, chat, kind) rows from ``first`` to ``last``, of ``chat`` or of
        every chat, by day, chat and kind."""
        only = "" if chat is None else " AND chat_key = :chat"
        async with self._connection() as db:
            rows = await db.execute_fetchall(
                "SELECT day, chat_key, kind, calls, prompt_tokens, completion_tokens,"
                " estimated_calls FROM llm_usage WHERE day BETWEEN :first AND :last"
                f"{only} ORDER BY day, chat_key, kind",
                {"first": first.isoformat(), "last": last.isoformat(), "chat": str(chat)},
            )
        return [
            UsageRow(date.fromisoformat(row[0]), ChatKey.parse(row[1]), row[2], _count(row, 3))
            for row in rows
        ]
