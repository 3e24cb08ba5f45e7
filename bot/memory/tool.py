"""The ``search_memory`` function a model may call when ``llm.memory_tool`` is on.

It is backed by the same recall as the prompt's own (dates named, else keywords and,
with semantic memory on, meaning). The model calls it in the reply call; pacebot answers
every call and asks once more, without offering it again, so a batch makes at most two
chat-completion calls. Arguments are the model's JSON: anything malformed is answered
with a short error the model can read, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from bot.memory.stack import Memory
from bot.models import ChatKey, ChatMessage, Completion, ToolCall, ToolSpec
from bot.prompt import clip

NAME = "search_memory"
CALLS_MAX = 3  # tool calls of one answer that are run; any more get a short refusal
QUERY_CHARS_MAX = 500
NOTHING_FOUND = "Nothing in memory matches that."

SEARCH_MEMORY = ToolSpec(
    name=NAME,
    description=(
        "Search what you remember of this chat from earlier days (your diary of each day). "
        "Use it when someone refers to something from the past that is not in the "
        "conversation or the memories you were already given."
    ),
    parameters=json.dumps(
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for, in a few words"},
                "date": {
                    "type": "string",
                    "description": "optional: one chat day to look at, YYYY-MM-DD",
                },
            },
            "required": ["query"],
        }
    ),
)


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What the model asked memory for."""

    query: str
    day: date | None = None


def parse_query(arguments: str) -> MemoryQuery | str:
    """Read the call's arguments; return an error text the model can act on if they are bad."""
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return 'arguments must be a JSON object like {"query": "..."}'
    if not isinstance(data, dict):
        return 'arguments must be a JSON object like {"query": "..."}'
    query, day_text = data.get("query"), data.get("date")
    if not isinstance(query, str) or not query.strip():
        return "query must be a non-empty string"
    day = None
    if day_text not in (None, ""):
        try:
            day = date.fromisoformat(str(day_text))
        except ValueError:
            return "date must be YYYY-MM-DD"
    return MemoryQuery(clip(query.strip(), QUERY_CHARS_MAX), day)


async def tool_results(
    memory: Memory,
    chat: ChatKey,
    calls: Sequence[ToolCall],
    *,
    may_embed: bool,
) -> list[ChatMessage]:
    """Answer each of the model's tool calls with a ``tool`` message, in order.

    Days already in the persona are found too: the model asked, and "nothing" would read
    as forgetting. Only the first query may be embedded, and only if ``may_embed`` (the
    batch has not spent its one embeddings request on the prompt's own recall).
    """
    answers = []
    for position, call in enumerate(calls):
        if call.name != NAME:
            text = f"unknown function {clip(call.name, 40)!r}; only {NAME} exists"
        elif position >= CALLS_MAX:
            text = f"not run: at most {CALLS_MAX} searches per answer"
        else:
            asked = parse_query(call.arguments)
            if isinstance(asked, str):
                text = f"bad arguments: {asked}"
            else:
                texts = [asked.query] + ([asked.day.isoformat()] if asked.day else [])
                recalled = await memory.recall(chat, texts, by_meaning=may_embed)
                may_embed = may_embed and not recalled.embedded
                text = recalled.render() or NOTHING_FOUND
        answers.append(ChatMessage("tool", text, tool_call_id=call.id))
    return answers


def follow_up(
    messages: Sequence[ChatMessage], completion: Completion, results: Sequence[ChatMessage]
) -> list[ChatMessage]:
    """Return the request that asks once more: the model's calls and their results added."""
    asked = ChatMessage("assistant", completion.text, tool_calls=completion.tool_calls)
    return [*messages, asked, *results]
