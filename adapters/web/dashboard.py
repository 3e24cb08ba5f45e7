"""What only the dashboard reads itself: the end of the log file; who its audits name; where
its pages are.

Everything else a page or an API route shows or changes comes from the core's
operations (:mod:`bot.ops`), the same ones the chat commands and the command line use.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

from bot.models import ChatKey, StickerRecord

WHO = "web"
"""Who the audit names for a change made on the dashboard."""
LOG_TAIL_BYTES_MAX = 256 * 1024  # read at most this much of the log's end


def chat_url(chat: ChatKey) -> str:
    """Return the path of a chat's page."""
    return "/chats/" + quote(str(chat), safe=":")


def thumbnail_url(chat: ChatKey, sticker: StickerRecord) -> str:
    """Return the path of a sticker's thumbnail (served only with the token or a session)."""
    return f"{chat_url(chat)}/stickers/{sticker.label}/thumbnail"


async def log_tail(path: Path, *, lines: int) -> list[str]:
    """Return the last ``lines`` lines of the log file (already scrubbed of secrets)."""
    return await asyncio.to_thread(tail, path, lines=lines)


def tail(path: Path, *, lines: int) -> list[str]:
    """Return the last ``lines`` lines of ``path``, reading at most its last 256 KiB."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - LOG_TAIL_BYTES_MAX))
            data = file.read()
    except FileNotFoundError:
        return []
    text = data.decode("utf-8", errors="replace")
    if size > LOG_TAIL_BYTES_MAX:
        text = text.partition("\n")[2]  # the first line is cut: leave it out
    return text.splitlines()[-lines:] if lines > 0 else []
