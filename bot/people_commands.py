"""The people commands: ``/people``, ``/facts``, ``/forget`` (admins) and ``/forgetme`` (anyone).

Each answer is a small function of what it reports, so that a translation replaces
only these lines. A fact id is the number ``/facts`` shows; facts never cross chats, so
an id from another chat is as unknown here as one that never existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.models import ChatKey, Fact, KnownPerson

if TYPE_CHECKING:
    from bot.commands import CommandRunner, _Call

FACT_ID_DIGITS_MAX = 18  # an SQLite integer id; a longer "id" is a typo or an attack
PEOPLE_LIST_MAX = 50  # people /people names one by one

PEOPLE_USAGE = "usage: /people (in the chat, or naming a chat key from a private chat)"
FACTS_USAGE = "usage: /facts <user id> (the platform id /people shows)"
FORGET_USAGE = "usage: /forget <fact id>, e.g. /forget 12 (/facts <user id> shows the ids)"


def no_people(chat: ChatKey) -> str:
    return f"Nothing is remembered about anyone in {chat} yet."


def people_listing(chat: ChatKey, people: Sequence[KnownPerson]) -> str:
    lines = [f"people of {chat} with facts remembered ({len(people)}), most facts first:"]
    lines += [
        f"- {p.user_name} (id {p.user_id}): {p.fact_count} fact(s)"
        for p in people[:PEOPLE_LIST_MAX]
    ]
    if len(people) > PEOPLE_LIST_MAX:
        lines.append(f"… and {len(people) - PEOPLE_LIST_MAX} more")
    lines.append("/facts <user id> shows one person's facts.")
    return "\n".join(lines)


def no_facts(chat: ChatKey, user_id: str) -> str:
    return f"Nothing is remembered about id {user_id} in {chat}."


def facts_listing(chat: ChatKey, facts: Sequence[Fact]) -> str:
    newest = facts[0]
    lines = [f"facts about {newest.user_name} (id {newest.user_id}) in {chat}, newest first:"]
    lines += [f"#{f.id} · learned from {f.source_day} · {f.text}" for f in facts]
    lines.append("/forget <fact id> removes one.")
    return "\n".join(lines)


def unknown_fact(chat: ChatKey, fact_id: int) -> str:
    return f"There is no fact #{fact_id} in {chat}: it was forgotten already, or never was here."


def forgot_fact(fact: Fact) -> str:
    return f"Forgot fact #{fact.id} about {fact.user_name} (id {fact.user_id}): {fact.text}"


def forgot_you(count: int) -> str:
    if not count:
        return "Nothing is remembered about you in this chat."
    return (
        f"Forgot {count} fact(s) about you in this chat. They are no longer shown to the bot; "
        "day summaries are kept (an admin can /pop them)."
    )


async def people(runner: CommandRunner, call: _Call) -> str:
    if call.args:
        return PEOPLE_USAGE
    known = await runner.memory.people.known(call.chat)
    return people_listing(call.chat, known) if known else no_people(call.chat)


async def facts(runner: CommandRunner, call: _Call) -> str:
    if len(call.args) != 1:
        return FACTS_USAGE
    user_id = call.args[0]
    found = await runner.memory.people.facts(call.chat, user_id)
    return facts_listing(call.chat, found) if found else no_facts(call.chat, user_id)


async def forget(runner: CommandRunner, call: _Call) -> str:
    text = call.args[0].lstrip("#") if len(call.args) == 1 else ""
    if not (text.isascii() and text.isdigit() and len(text) <= FACT_ID_DIGITS_MAX):
        return FORGET_USAGE
    fact_id = int(text)
    fact = await runner.memory.people.forget_fact(call.chat, fact_id, by=call.who)
    return forgot_fact(fact) if fact else unknown_fact(call.chat, fact_id)


async def forgetme(runner: CommandRunner, call: _Call) -> str:
    count = await runner.memory.people.forget_person(call.chat, call.sender_id, by=call.who)
    return forgot_you(count)
