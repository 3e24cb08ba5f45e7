"""Read the reply plan item by item, and time it: each item's due time and quote.

Each element of ``replies`` is one item, and exactly one of its keys gives its kind
(``content``, ``react``, ``sticker``, ``voice``, ``later``); ``send_delay_seconds``,
``reply_to`` and ``to`` may go with any. An item with an unknown key, with no kind or
with two kinds is dropped (and said so), and the rest of the plan stands; a plan whose
every item was dropped so is no plan. JSON with the usual slips is mended first
(``bot/replies/repair.py``), but a mended plan with no reply in it is no plan either: what
the repair could not read may have been the answer. A text of the wrong type (a number, a
list) makes the whole plan invalid, as before items had kinds: the fallback chain reads it
instead.
Everything here is pure: no I/O, no event loop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictStr, ValidationError

from bot.errors import BadLLMReply
from bot.replies.items import (
    DroppedItem,
    Item,
    ItemKind,
    Later,
    PlannedReply,
    Reaction,
    Reply,
    Sticker,
    Text,
    Voice,
)
from bot.replies.parse import find_json_object, json_body, mend_json_object, salvage_replies
from bot.replies.splitting import split_to_limit

_FIELDS = frozenset({"send_delay_seconds", "reply_to", "to"})
_KINDS = frozenset(kind.value for kind in ItemKind)
# A text that is itself a reply plan, or an item of one, leaked out of a fallback.
_REPLY_JSON_RE = re.compile(r'"(?:replies|send_delay_seconds|' + "|".join(_KINDS) + r')"\s*:')


def _coerce_delay(value: object) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        msg = "must be a number of seconds, not a boolean"
        raise ValueError(msg)  # noqa: TRY004 - pydantic wants ValueError
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            msg = "must be a number of seconds"
            raise ValueError(msg) from None
    msg = "must be a number of seconds"
    raise ValueError(msg)


def _coerce_message_id(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        msg = "must be a message id (string or integer)"
        raise ValueError(msg)  # noqa: TRY004 - pydantic wants ValueError
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    msg = "must be a message id (string or integer)"
    raise ValueError(msg)


Delay = Annotated[float, BeforeValidator(_coerce_delay)]
MessageId = Annotated[str | None, BeforeValidator(_coerce_message_id)]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    send_delay_seconds: Delay = 0.0
    reply_to: MessageId = None
    to: MessageId = None


class _Content(_Shape):
    content: StrictStr | None


class _React(_Shape):
    react: StrictStr


class _Sticker(_Shape):
    sticker: Annotated[str, BeforeValidator(_coerce_message_id)]


class _Voice(_Shape):
    voice: StrictStr


class _LaterFields(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    note: StrictStr
    kind: Literal["remind", "followup"] = "remind"
    at: StrictStr | None = None
    in_seconds: float | None = None


class _Later(_Shape):
    later: _LaterFields


class _Plan(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    replies: list[Any]


@dataclass(frozen=True, slots=True)
class ReplyPlan:
    """The items read from a plan, and those dropped from it with the reason."""

    replies: list[Reply]
    dropped: list[DroppedItem]


def _describe(error: ValidationError, *, prefix: str = "") -> str:
    first = error.errors()[0]
    where = ".".join([prefix, *(str(part) for part in first["loc"])]).strip(".") or "reply"
    reason = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {reason}"


def _clamp_delay(delay: float, max_delay_s: float) -> float:
    if math.isnan(delay):
        return 0.0
    return float(min(max(delay, 0.0), max_delay_s))


def _fault(raw: dict[str, Any]) -> DroppedItem | None:
    """Say why an item breaks the item rules (a key unknown, no kind, two), if it does."""
    kinds = [key for key in raw if key in _KINDS]
    unknown = sorted(key for key in raw if key not in _KINDS and key not in _FIELDS)
    kind = kinds[0] if len(kinds) == 1 else "?"
    if unknown:
        return DroppedItem(kind, "unknown key " + ", ".join(repr(key) for key in unknown))
    if not kinds:
        return DroppedItem("?", "no kind: none of " + ", ".join(sorted(_KINDS)))
    if len(kinds) > 1:
        return DroppedItem("+".join(kinds), "two kinds in one item")
    return None


def _read_item(raw: dict[str, Any], where: str) -> tuple[Item | None, float]:
    """Read one well-formed item; return it (``None`` for an empty text) and its delay.

    Raise ``BadLLMReply`` for a text of the wrong type, ``ValidationError`` for any other
    kind whose value is wrong (that item alone is dropped).
    """
    if "content" in raw:
        try:
            text = _Content.model_validate(raw)
        except ValidationError as exc:
            msg = f"not a valid reply plan: {_describe(exc, prefix=where)}"
            raise BadLLMReply(msg) from None
        content = (text.content or "").strip()
        return (Text(content, text.reply_to) if content else None), text.send_delay_seconds
    if "react" in raw:
        react = _React.model_validate(raw)
        target = react.to or react.reply_to
        if not react.react.strip() or target is None:
            msg = "needs an emoji and the id of the message it is on ('to')"
            raise ValueError(msg)
        return Reaction(react.react.strip(), target), react.send_delay_seconds
    if "sticker" in raw:
        sticker = _Sticker.model_validate(raw)
        return Sticker(sticker.sticker), sticker.send_delay_seconds
    if "voice" in raw:
        voice = _Voice.model_validate(raw)
        said = voice.voice.strip()
        return (Voice(said) if said else None), voice.send_delay_seconds
    later = _Later.model_validate(raw).later
    return Later(later.note, later.kind, later.at, later.in_seconds), 0.0


def parse_replies(text: str, *, finish_reason: str | None, max_delay_s: float) -> ReplyPlan:
    """Read the reply plan out of an LLM answer; raise ``BadLLMReply`` if there is none.

    An empty list is valid: the LLM chose silence, and the caller decides whether that
    is allowed. Empty texts are left out; an item breaking the item rules is dropped.
    """
    body = json_body(text, finish_reason=finish_reason)
    data, mended = _find_plan(body)
    try:
        plan = _Plan.model_validate(data)
    except ValidationError as exc:
        msg = f"not a valid reply plan: {_describe(exc)}"
        raise BadLLMReply(msg) from None
    replies: list[Reply] = []
    dropped: list[DroppedItem] = []
    for index, raw in enumerate(plan.replies):
        where = f"replies.{index}"
        if isinstance(raw, str):  # a bare string is an unambiguous message
            raw = {"content": raw}
        if not isinstance(raw, dict):
            msg = f"not a valid reply plan: {where}: not an item object"
            raise BadLLMReply(msg)
        fault = _fault(raw)
        if fault is not None:
            dropped.append(replace(fault, reason=f"{where}: {fault.reason}"))
            continue
        try:
            item, delay = _read_item(raw, where)
        except ValidationError as exc:
            kind = next(key for key in raw if key in _KINDS)
            dropped.append(DroppedItem(kind, _describe(exc, prefix=where)))
            continue
        except ValueError as exc:
            kind = next(key for key in raw if key in _KINDS)
            dropped.append(DroppedItem(kind, f"{where}: {exc}"))
            continue
        if item is not None:
            replies.append(Reply(item, _clamp_delay(delay, max_delay_s)))
    if dropped and not replies:
        msg = f"no usable item in the reply plan ({dropped[0].reason})"
        raise BadLLMReply(msg)
    if mended and not replies:
        # What a repair could not read may have been the answer: never silence for it.
        msg = f"the mended reply plan holds no reply ({len(body)} chars)"
        raise BadLLMReply(msg)
    return ReplyPlan(replies, dropped)


def _find_plan(body: str) -> tuple[dict[str, Any], bool]:
    """Find the plan in ``body``, mending its JSON if need be; say whether it was mended."""
    try:
        return find_json_object(body, key="replies", accept_list=True), False
    except BadLLMReply:
        mended = mend_json_object(body, key="replies")
        if mended is None:
            raise
        return mended, True


def without_reply_json(replies: Sequence[Reply]) -> list[Reply]:
    """Make sure no text is itself reply JSON: a fallback may hand a plan back as text.

    Such a text gives way to the texts it holds (none, if it held only other kinds);
    a text that merely contains JSON of another shape is left alone.
    """
    kept: list[Reply] = []
    for reply in replies:
        item = reply.item
        if isinstance(item, Text) and _looks_like_reply_json(item.content):
            salvaged = salvage_replies(item.content) or []
            kept += [Reply(Text(text), reply.send_delay_seconds) for text in salvaged]
        else:
            kept.append(reply)
    return kept


def _looks_like_reply_json(text: str) -> bool:
    body = text.strip()
    return body.startswith(("{", "[")) and _REPLY_JSON_RE.search(body) is not None


def plan_replies(
    replies: Sequence[Reply],
    *,
    start: datetime,
    text_limit: int,
    batch_ids: frozenset[str],
) -> tuple[PlannedReply, ...]:
    """Turn delays into due times (the first item at once), split long texts, check quotes.

    Only outgoing items are planned: a ``later`` is not the sender's business.
    """
    planned: list[PlannedReply] = []
    due = start
    position = 0
    for reply in replies:
        item = reply.item
        if isinstance(item, Later):
            continue
        # The first goes out at once: the LLM call already took its time.
        if position:
            due += timedelta(seconds=reply.send_delay_seconds)
        position += 1
        if not isinstance(item, Text):
            planned.append(PlannedReply(item, due))
            continue
        quote = item.reply_to if item.reply_to in batch_ids else None
        for index, piece in enumerate(split_to_limit(item.content, text_limit)):
            planned.append(PlannedReply(Text(piece, quote if index == 0 else None), due))
    return tuple(planned)


def deliverable(
    replies: Sequence[Reply], *, kinds: frozenset[ItemKind], shown_ids: frozenset[str]
) -> tuple[list[Reply], list[DroppedItem]]:
    """Keep the items whose kind is offered; say which were dropped and why.

    A reaction must land on a message the prompt showed (``shown_ids``). A voice note
    that cannot be spoken is said as text instead: its words are never lost.
    """
    kept: list[Reply] = []
    dropped: list[DroppedItem] = []
    for reply in replies:
        item = reply.item
        if isinstance(item, Reaction) and item.kind in kinds and item.to not in shown_ids:
            dropped.append(DroppedItem(item.kind, f"no message {item.to!r} was shown"))
        elif item.kind in kinds:
            kept.append(reply)
        elif isinstance(item, Voice):
            kept.append(Reply(Text(item.text), reply.send_delay_seconds))
        else:
            dropped.append(DroppedItem(item.kind, f"{item.kind} items are not offered here"))
    return kept, dropped
