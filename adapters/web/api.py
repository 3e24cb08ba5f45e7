"""The dashboard's JSON API: the pages' live parts use it, and scripts may.

Times are ISO 8601 in UTC. Errors are ``{"error": "..."}`` with a fitting status: 400 for
a malformed chat key, fact id, person id, sticker id, later item id, ``n`` or ``days``,
401 without the token, 403 without the CSRF token, 404 for a chat pacebot never heard of,
a fact or sticker that is not live there, a later item not pending there, or a person
never seen there, 409 when there is nothing to pop or restore.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from adapters.config_file import ConfigRefused
from adapters.costs import report_json, today_json
from adapters.web.dashboard import WHO, thumbnail_url
from adapters.web.depends import (
    AnyChat,
    EditedConfig,
    FactId,
    KnownChat,
    LaterId,
    Operations,
    StickerLabel,
    UserId,
    access,
)
from bot.errors import ConfigError
from bot.initiative.promises import LaterItem
from bot.models import ChatKey, Fact, StickerRecord, SummaryRecord
from bot.ops.initiative import Cancelled, InitiativeView
from bot.ops.memory import PersonFacts, StackEntry
from bot.ops.status import ChatState, Status
from bot.trace import ShownTrace

CHATS_LIMIT_MAX = 500
TRACES_DEFAULT = 10
TRACES_MAX = 200
COST_DAYS_DEFAULT = 7
COST_DAYS_MAX = 366
NOTHING_TO_POP = "nothing to pop: only the initial persona is left"
NOTHING_TO_RESTORE = "nothing to restore: nothing was popped, or a newer summary was pushed since"

router = APIRouter(prefix="/api", dependencies=[Depends(access)])


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def chat_json(state: ChatState) -> dict[str, Any]:
    """Return a chat of the overview or the chat list as JSON."""
    return {
        "chat": str(state.chat),
        "name": state.name,
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
        "sent_today": dict(status.sent_today),
        "llm_today": today_json(status.today),
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
        "partial": record.partial,
    }


def entry_json(entry: StackEntry) -> dict[str, Any]:
    """Return a summary with its place in the prompt as JSON."""
    return {**summary_json(entry.record), "tokens": entry.tokens, "in_prompt": entry.in_prompt}


def fact_json(fact: Fact) -> dict[str, Any]:
    """Return one fact about a person as JSON (with who forgot it, once forgotten)."""
    return {
        "id": fact.id,
        "text": fact.text,
        "source_day": fact.source_day.isoformat(),
        "created_at": _time(fact.created_at),
        "is_deleted": fact.is_deleted,
        "deleted_at": _time(fact.deleted_at),
        "deleted_by": fact.deleted_by,
    }


def person_json(person: PersonFacts) -> dict[str, Any]:
    """Return a person of a chat with their live facts as JSON."""
    return {
        "user_id": person.user_id,
        "name": person.name,
        "fact_count": len(person.facts),
        "facts": [fact_json(fact) for fact in person.facts],
    }


def sticker_json(chat: ChatKey, sticker: StickerRecord) -> dict[str, Any]:
    """Return a sticker of a chat's collection as JSON, with where its thumbnail is."""
    return {
        "id": sticker.label,
        "caption": sticker.caption,
        "platform": sticker.platform,
        "times_sent": sticker.times_sent,
        "last_seen_at": _time(sticker.last_seen_at),
        "banned": sticker.banned,
        "thumbnail": thumbnail_url(chat, sticker),
    }


def later_json(item: LaterItem) -> dict[str, Any]:
    """Return a later item as JSON."""
    return {
        "id": item.id,
        "kind": item.kind,
        "note": item.note,
        "due_at": _time(item.due_at),
        "state": item.state,
        "asker_id": item.asker_id,
        "asker_name": item.asker_name,
        "created_at": _time(item.created_at),
        "cancelled_by": item.cancelled_by,
    }


def initiative_json(chat: ChatKey, view: InitiativeView) -> dict[str, Any]:
    """Return a chat's pending later items, openers sent and quiet periods as JSON."""
    return {
        "chat": str(chat),
        "pending": [later_json(item) for item in view.pending],
        "openers": [
            {"batch_id": o.batch_id, "at": _time(o.at), "outcome": o.outcome} for o in view.openers
        ],
        "quiet": [
            {
                "starts_at": _time(q.starts_at),
                "ends_at": _time(q.ends_at),
                "set_by": q.set_by,
                "ended_at": _time(q.ended_at),
                "ended_by": q.ended_by,
            }
            for q in view.quiet
        ],
        "quiet_until": _time(view.quiet_until),
    }


def trace_json(shown: ShownTrace) -> dict[str, Any]:
    """Return a batch's trace with its replies' fates as JSON."""
    trace = shown.trace
    return {
        "batch_id": trace.batch_id,
        "at": _time(trace.at),
        "why": trace.why,
        "error": trace.error,
        "message_ids": list(trace.message_ids),
        "senders": dict(shown.senders),
        "rearmed_by": list(trace.rearmed_by),
        "wait_ended": trace.wait_ended,
        "profile": trace.profile,
        "gate": list(trace.gate),
        "guards": list(trace.guards),
        "cost": trace.cost,
        "currency": trace.currency,
        "prompt_tokens": dict(trace.prompt_tokens),
        "recall": to_jsonable_python(trace.recall),
        "llm_calls": to_jsonable_python(trace.llm_calls),
        "tool_steps": to_jsonable_python(trace.tool_steps),
        "tier": trace.tier,
        "outcome": trace.outcome or trace.why,
        "note": trace.note,
        "promised": to_jsonable_python(trace.promised),
        "raw_output": trace.raw_output,
        "replies": to_jsonable_python(shown.fates),
        "dropped": to_jsonable_python(trace.dropped),
        "heard": [{"message_id": i, "transcript": words} for i, words in trace.heard],
    }


@router.get("/status")
async def status(ops: Operations) -> dict[str, Any]:
    """Platforms, what waits, LLM errors in the last hour, and each recent chat's phase."""
    return status_json(await ops.status.overview())


@router.get("/chats")
async def chats(
    ops: Operations,
    search: str = "",
    limit: Annotated[int, Query(ge=1, le=CHATS_LIMIT_MAX)] = 100,
) -> dict[str, Any]:
    """The chats, the most recently active first; ``search`` matches keys, group titles and
    sender names."""
    found = await ops.status.chats(search=search, limit=limit)
    return {"chats": [chat_json(chat) for chat in found]}


@router.get("/chats/{chat}/summaries")
async def summaries(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """The chat's prompt stack, newest first, what the prompt holds of it, and the summary
    a restore would bring back (``null`` when there is nothing to restore)."""
    stack = await ops.memory.prompt_stack(chat)
    restorable = stack.restorable
    return {
        "chat": str(chat),
        "prompt_tokens": stack.prompt_tokens,
        "initial_persona": stack.initial_persona,
        "summaries": [entry_json(entry) for entry in stack.entries],
        "restorable": None if restorable is None else summary_json(restorable),
    }


@router.post("/chats/{chat}/summaries/pop")
async def pop(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """Pop the newest summary (audited as ``web``); 409 when only the persona is left."""
    popped = await ops.memory.pop(chat, by=WHO)
    if popped is None:
        raise HTTPException(409, NOTHING_TO_POP)
    return {"chat": str(chat), "popped": summary_json(popped)}


@router.post("/chats/{chat}/summaries/restore")
async def restore(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """Undo the last pop; 409 when nothing can be restored."""
    restored = await ops.memory.restore(chat, by=WHO)
    if restored is None:
        raise HTTPException(409, NOTHING_TO_RESTORE)
    return {"chat": str(chat), "restored": summary_json(restored)}


@router.get("/chats/{chat}/people")
async def people(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """The chat's people with live facts, most facts first, each with those facts."""
    found = await ops.memory.people(chat)
    return {"chat": str(chat), "people": [person_json(person) for person in found]}


@router.post("/chats/{chat}/facts/{fact_id}/forget")
async def forget_fact(ops: Operations, chat: KnownChat, fact_id: FactId) -> dict[str, Any]:
    """Forget one fact (a soft delete audited as ``web``); 404 if it is not live here."""
    forgotten = await ops.memory.forget_fact(chat, fact_id, by=WHO)
    if forgotten is None:
        raise HTTPException(404, f"no live fact {fact_id} in {chat}")
    return {"chat": str(chat), "forgotten": fact_json(forgotten)}


@router.post("/chats/{chat}/people/{user_id}/forget")
async def forget_person(ops: Operations, chat: KnownChat, user_id: UserId) -> dict[str, Any]:
    """Forget a person here as their ``/forgetme`` would (audited as ``web``).

    Every live fact about them goes, and nothing they wrote up to today is learned: this is
    recorded even when no fact was live, so the answer is 200 with ``forgotten`` counting
    the facts (possibly 0). 404, with nothing recorded, only for a person unknown here:
    one who never wrote in the chat and was never remembered or forgotten in it.
    """
    count = await ops.memory.forget_person(chat, user_id, by=WHO)
    if count is None:
        raise HTTPException(404, f"no person {user_id} was ever seen in {chat}")
    return {"chat": str(chat), "user_id": user_id, "forgotten": count}


@router.get("/chats/{chat}/stickers")
async def stickers(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """The chat's sticker collection, the most sent first, banned ones last (none while
    ``[stickers]`` is off)."""
    found = await ops.stickers.collection(chat)
    return {
        "chat": str(chat),
        "enabled": ops.stickers.enabled,
        "stickers": [sticker_json(chat, sticker) for sticker in found],
    }


@router.post("/chats/{chat}/stickers/{sticker}/ban")
async def ban_sticker(ops: Operations, chat: KnownChat, sticker: StickerLabel) -> dict[str, Any]:
    """Ban a sticker of the chat's collection (audited as ``web``): never offered, sent or
    collected again. 404 if the collection has no such live sticker."""
    banned = await ops.stickers.ban(chat, sticker, by=WHO)
    if banned is None:
        raise HTTPException(404, f"no live sticker {sticker} in the collection of {chat}")
    return {"chat": str(chat), "banned": sticker_json(chat, banned)}


@router.get("/chats/{chat}/traces")
async def traces(
    ops: Operations,
    chat: KnownChat,
    n: Annotated[int, Query(ge=1, le=TRACES_MAX)] = TRACES_DEFAULT,
) -> dict[str, Any]:
    """The chat's ``n`` newest batch traces, newest first, with each reply's fate."""
    found = await ops.traces.recent(chat, count=n)
    return {"chat": str(chat), "traces": [trace_json(shown) for shown in found]}


@router.get("/chats/{chat}/later")
async def later(ops: Operations, chat: KnownChat) -> dict[str, Any]:
    """The chat's later items not yet run (soonest first), its openers sent (newest first)
    and its quiet periods (newest first), with ``quiet_until`` while it is quiet."""
    return initiative_json(chat, await ops.initiative.view(chat))


@router.post("/chats/{chat}/later/{item_id}/cancel")
async def cancel_later(ops: Operations, chat: KnownChat, item_id: LaterId) -> dict[str, Any]:
    """Cancel a pending later item (audited as ``web``); 404 if it is not pending here."""
    outcome, item = await ops.initiative.cancel(chat, item_id, by=WHO)
    if outcome is not Cancelled.DONE or item is None:
        raise HTTPException(404, f"no pending later item {item_id} in {chat}")
    return {"chat": str(chat), "cancelled": later_json(item)}


@router.get("/cost")
async def cost(
    ops: Operations,
    days: Annotated[int, Query(ge=1, le=COST_DAYS_MAX)] = COST_DAYS_DEFAULT,
    chat: str = "",
) -> dict[str, Any]:
    """Tokens and cost per chat day, chat and kind over the last ``days`` chat days (today
    included), of one ``chat`` or of all, with each day's sum and the total."""
    only = None
    if chat:
        try:
            only = ChatKey.from_text(chat)
        except ConfigError as exc:
            raise HTTPException(400, str(exc)) from None
    report = await ops.cost.report(days=days, chat=only)
    return report_json(report, await ops.cost.daily(days=days, chat=only))


class ConfigChange(BaseModel):
    """``PATCH /api/config``: keys to set (dotted) and keys to take back to their default."""

    set: dict[str, Any] = Field(default_factory=dict)
    unset: list[str] = Field(default_factory=list)


@router.get("/config")
async def config(edited: EditedConfig) -> dict[str, Any]:
    """Every key's running value (no secrets: the file holds only the names of their
    variables), the keys waiting for a restart, and the profiles."""
    view = edited.view()
    return {
        "values": view.values,
        "restart_needed": list(view.restart_needed),
        "profiles": list(view.profiles),
    }


@router.patch("/config", response_model=None)
async def change_config(edited: EditedConfig, change: ConfigChange) -> Any:
    """Write the change to ``config.toml`` (comments kept, a backup made) and apply it
    live; 400 naming the key, the value and the form expected, with nothing changed."""
    try:
        reloaded = edited.change(change.set, change.unset, by=WHO)
    except (ConfigRefused, ConfigError) as exc:
        key = exc.key if isinstance(exc, ConfigRefused) else None
        return JSONResponse({"error": str(exc), "key": key}, status_code=400)
    return {"applied": list(reloaded.applied), "restart_needed": list(reloaded.restart_needed)}


@router.get("/chats/{chat}/prompt")
async def chat_prompt(ops: Operations, chat: AnyChat) -> dict[str, Any]:
    """The system prompt ``chat`` would get now (persona, its summaries, people), with the
    profile it runs with and the prompt's size in tokens, counted offline."""
    shown = await ops.status.prompt_view(chat)
    return {
        "chat": str(chat),
        "profile": shown.profile,
        "prompt": shown.prompt,
        "tokens": shown.tokens,
    }


class AccessChange(BaseModel):
    """``POST /api/chats/{chat}/access``: serve the chat (``on``) or switch it off."""

    on: bool


@router.post("/chats/{chat}/access")
async def switch_access(ops: Operations, chat: AnyChat, change: AccessChange) -> dict[str, Any]:
    """Switch a chat on or off, as ``/bot on|off`` does, audited as the dashboard."""
    state = await ops.access.switch(chat, on=change.on, by=WHO)
    return {"chat": str(chat), "served": state.served, "refusal": state.refusal}
