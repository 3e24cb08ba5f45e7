"""Write values the same way in every store: times as unix seconds, text as valid UTF-8.

Times go in as aware datetimes and come back as aware UTC datetimes; a naive datetime is
a programming error and raises ``ValueError``.
"""

from __future__ import annotations

from datetime import UTC, datetime

BOT_SENDER_ID = "bot"
"""The sender id of the bot's own messages in a chat's history."""


def unix(moment: datetime, what: str) -> float:
    """Return ``moment`` as unix seconds; ``what`` names it in the error if it is naive."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        msg = f"{what} must be timezone-aware, got {moment!r}"
        raise ValueError(msg)
    return moment.timestamp()


def aware(unix_s: float) -> datetime:
    """Return unix seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(unix_s, tz=UTC)


def clean(text: str) -> str:
    """Make text storable: lone surrogates (from escaped JSON) become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as SQLite's ``lower()`` does."""
    return "".join(char.lower() if char.isascii() else char for char in text)
