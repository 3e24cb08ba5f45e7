"""``/people``, ``/facts``, ``/forget`` (admins) and ``/forgetme`` (anyone).

A fact id is the number ``/facts`` shows; facts never cross chats, so an id from another
chat is as unknown here as one that never existed.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.commands.call import Call
from bot.models import ChatKey, Fact
from bot.ops.memory import PersonFacts
from bot.texts import Texts

FACT_ID_DIGITS_MAX = 18  # an SQLite integer id; a longer "id" is a typo or an attack
PEOPLE_LIST_MAX = 50  # people /people names one by one
USER_ID_CHARS_MAX = 64  # platform ids are short; a longer "id" is pasted text, not echoed back


def people_listing(say: Texts, chat: ChatKey, people: Sequence[PersonFacts]) -> str:
    """List the chat's people with their fact counts, at most ``PEOPLE_LIST_MAX`` one by one."""
    lines = [say("people_header", chat=chat, count=len(people))]
    lines += [
        say("people_item", name=p.name, user_id=p.user_id, count=len(p.facts))
        for p in people[:PEOPLE_LIST_MAX]
    ]
    if len(people) > PEOPLE_LIST_MAX:
        lines.append(say("people_more", count=len(people) - PEOPLE_LIST_MAX))
    lines.append(say("people_footer"))
    return "\n".join(lines)


def facts_listing(say: Texts, chat: ChatKey, facts: Sequence[Fact]) -> str:
    """List one person's facts, newest first, each with the id ``/forget`` takes."""
    newest = facts[0]
    lines = [say("facts_header", name=newest.user_name, user_id=newest.user_id, chat=chat)]
    lines += [say("facts_item", fact_id=f.id, day=f.source_day, text=f.text) for f in facts]
    lines.append(say("facts_footer"))
    return "\n".join(lines)


async def people(call: Call) -> str:
    """List the chat's people with their fact counts."""
    if call.args:
        return call.say("people_usage")
    known = await call.ops.memory.people(call.chat)
    if not known:
        return call.say("people_none", chat=call.chat)
    return people_listing(call.say, call.chat, known)


async def facts(call: Call) -> str:
    """List one person's live facts, each with its id."""
    say = call.say
    if len(call.args) != 1 or len(call.args[0]) > USER_ID_CHARS_MAX:
        return say("facts_usage")
    user_id = call.args[0]
    found = await call.ops.memory.facts(call.chat, user_id)
    if not found:
        return say("facts_none", user_id=user_id, chat=call.chat)
    return facts_listing(say, call.chat, found)


async def forget(call: Call) -> str:
    """Forget one fact by its id."""
    say = call.say
    text = call.args[0].lstrip("#") if len(call.args) == 1 else ""
    if not (text.isascii() and text.isdigit() and len(text) <= FACT_ID_DIGITS_MAX):
        return say("forget_usage")
    fact_id = int(text)
    fact = await call.ops.memory.forget_fact(call.chat, fact_id, by=call.who)
    if fact is None:
        return say("forget_unknown", fact_id=fact_id, chat=call.chat)
    return say(
        "forget_done", fact_id=fact.id, name=fact.user_name, user_id=fact.user_id, text=fact.text
    )


async def forgetme(call: Call) -> str:
    """Forget every fact about the sender in this chat."""
    count = await call.ops.memory.forget_person(
        call.chat, call.sender_id, by=call.who, themselves=True
    )
    return call.say("forgetme_done", count=count) if count else call.say("forgetme_none")
