"""The dashboard's JSON API (SPEC §18): the pages' live parts use it, and scripts may.

Times are ISO 8601 in UTC. Errors are ``{"error": "..."}`` with a fitting status: 400 for
a malformed chat key, 401 without the token, 403 without the CSRF token, 404 for a chat
pacebot never heard of, 409 when there is nothing to pop or restore.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from adapters.web.dashboard import ChatState, StackEntry, Status
from adapters.web.depends import Board, KnownChat, access
from bot.models import SummaryRecord

CHATS_LIMIT_MAX = 500
NOTHING_TO_POP = "nothing to pop: only the initial persona is left"
NOTHING_TO_RESTORE = "nothing to restore: nothing was popped, or a newer summary was pushed since"

router = APIRouter(prefix="/api", dependencies=[Depends(access)])


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def chat_json(state: ChatState) -> dict[str, Any]:
    """Return a chat of the overview or the chat list as JSON."""
    return {
        "chat": str(state.chat),
        "phase": state.phase.value,
        "message_count": state.message_count,
        "last_message_at": _time(state.last_message_at),
    }


def status_json(status: Status) -> dict[str, Any]:
    """Return the overview as JSON."""
    return {
        "platforms": [{"name": p.name, "connected": p.connected} for p in status.platforms],
        "waiting_messages": status.waiting_messages,
        "queued_replies": status.queued_replies,
        "llm_errors_last_hour": status.llm_errors_last_hour,
        "chats": [chat_json(chat) for chat in status.chats],
    }


def summary_json(record: SummaryRecord) -> dict[str, Any]:
    """Return one summary of a prompt stack as JSON."""
    content = record.content
    return {
        "id": record.id,
        "day": record.day.isoformat(),
        "summary": content.summary,
        "topics": list(content.topics),
        "key_points": list(content.key_points),
        "keywords": list(content.keywords),
        "message_count": record.message_count,
        "created_at": _time(record.created_at),
    }


def entry_json(entry: StackEntry) -> dict[str, Any]:
    """Return a summary with its place in the prompt as JSON."""
    return {**summary_json(entry.record), "tokens": entry.tokens, "in_prompt": entry.in_prompt}


@router.get("/status")
async def status(board: Board) -> dict[str, Any]:
    """Platforms, what waits, LLM errors in the last hour, and each recent chat's phase."""
    return status_json(await board.status())


@router.get("/chats")
async def chats(
    board: Board,
    search: str = "",
    limit: Annotated[int, Query(ge=1, le=CHATS_LIMIT_MAX)] = 100,
) -> dict[str, Any]:
    """The chats, the most recently active first; ``search`` matches keys and sender names."""
    found = await board.chats(search=search, limit=limit)
    return {"chats": [chat_json(chat) for chat in found]}


@router.get("/chats/{chat}/summaries")
async def summaries(board: Board, chat: KnownChat) -> dict[str, Any]:
    """The chat's prompt stack, newest first, and what the prompt holds of it."""
    stack = await board.prompt_stack(chat)
    return {
        "chat": str(chat),
        "prompt_tokens": stack.prompt_tokens,
        "initial_persona": stack.initial_persona,
        "summaries": [entry_json(entry) for entry in stack.entries],
    }


@router.post("/chats/{chat}/summaries/pop")
async def pop(board: Board, chat: KnownChat) -> dict[str, Any]:
    """Pop the newest summary (audited as ``web``); 409 when only the persona is left."""
    popped = await board.pop(chat)
    if popped is None:
        raise HTTPException(409, NOTHING_TO_POP)
    return {"chat": str(chat), "popped": summary_json(popped)}


@router.post("/chats/{chat}/summaries/restore")
async def restore(board: Board, chat: KnownChat) -> dict[str, Any]:
    """Undo the last pop; 409 when nothing can be restored."""
    restored = await board.restore(chat)
    if restored is None:
        raise HTTPException(409, NOTHING_TO_RESTORE)
    return {"chat": str(chat), "restored": summary_json(restored)}
