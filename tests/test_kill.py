"""`pacebot run` killed again and again: nothing lost, nothing sent twice, the database sound.

One seeded scenario drives a real ``pacebot run`` process with Telegram, QQ (OneBot) and
the official QQ bot enabled against the local fakes (Bot API, OneBot client, the QQ Open
Platform, LLM server, all in the test's event loop) through a scripted conversation of
1,000+ messages in 28 chats, SIGKILLs it 34
times at 30 chosen points (in a debounce wait, during the LLM call, between paced
replies, with a send on the wire, during nightly and admin-run summaries, during
start-up, after bursts, at random, while QQ chatters go on writing) and restarts it on
the same data directory each time. Afterwards the SQLite file and the fakes' records are
checked against the guarantees in docs/reliability.md.

How a stored chatter message must end (the "accounted for" rule of docs/reliability.md):
its batch is ``answered`` or ``silent`` (the LLM saw it as new), or its batch is
``skipped``/``failed`` and a later LLM request of the same chat showed it as context,
or it is still waiting (no batch yet). Lost messages are counted, never hidden: a lost
message is one the platform handed over (a Telegram update whose offset was confirmed)
or one a QQ chatter sent (written to the socket, to a dead one, or while the bot was
down: it is in the OneBot history the bot fetches back on each connect), or one the QQ
Open Platform dispatched to the official bot's session (live, or kept for the Resume of
the next start), that is not in the database.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from bot.days import chat_day
from fakes.process_world import (
    ADMIN,
    BOT_TOKEN,
    BOUNDARY,
    LLM_KEY,
    ONEBOT_TOKEN,
    QQBOT_SECRET,
    TAG_RE,
    ZONE,
    Chat,
    World,
    new_block,
    sent_texts,
    world,
)

REPLY_RE = re.compile(r"^r\d+\.\d+\b")
FETCHED_BACK_RE = re.compile(r"qq: \d+ chat\(s\) asked for missed messages; (\d+) stored now")

MESSAGES_WANTED = 1_040
KILL_PLAN = (
    ["debounce"] * 5
    + ["llm"] * 5
    + ["between"] * 4
    + ["sending"] * 3
    + ["summary"] * 2
    + ["summary_command"]
    + ["startup"] * 2
    + ["random"] * 3
    + ["burst_telegram", "burst_qq", "burst_qq_late", "burst_qqbot"]
    + ["qq_while_down"] * 2
)
QQ_LATE_KILL_S = 0.05  # how long after a QQ burst ``burst_qq_late`` kills
QQ_WHILE_DOWN = 12  # QQ messages sent while the bot is down, at ``qq_while_down``


# --- the kill points ------------------------------------------------------------------------


async def kill_in_debounce(w: World) -> None:
    """Store a burst, then kill while its debounce wait runs."""
    chat = w.rng.choice(w.chats)
    burst = [await w.say(chat, question=True) for _ in range(w.rng.randint(1, 3))]
    await w.wait_stored({p.tag for p in burst if p.delivered}, within_s=10)
    await w.kill("debounce")


async def kill_during_llm_call(w: World) -> None:
    """Kill while the LLM call of a batch hangs."""
    chat = w.rng.choice([c for c in w.chats if not c.group])
    hung = w.llm.hung.count("reply")  # not a summary of the catch-up hanging meanwhile
    await w.say(chat, marker=" [hang]", question=True)
    await w.llm.wait_for_hang(hung + 1, kind="reply")
    await asyncio.sleep(w.rng.uniform(0, 0.05))
    await w.kill("llm")


async def kill_between_replies(w: World) -> None:
    """Kill after the first of three paced replies went out."""
    chat = w.rng.choice([c for c in w.chats if c.platform == "telegram" and not c.group])
    before = len(w.api.sent_messages(chat.chat_id))
    await w.say(chat, marker=" [multi]", question=True)
    await w.api.wait_for(lambda: len(w.api.sent_messages(chat.chat_id)) > before, timeout=10)
    await asyncio.sleep(w.rng.uniform(0.05, 0.5))
    await w.kill("between")


async def kill_while_sending(w: World) -> None:
    """Kill while a send is on the wire: the platform has it, the bot has no answer yet."""
    if w.rng.random() < 0.5:
        chat = w.rng.choice([c for c in w.chats if c.platform == "telegram" and not c.group])
        sends = len(w.api.calls_to("sendMessage"))
        w.api.delay_next("sendMessage", 5.0)
        await w.say(chat, question=True)
        await w.api.wait_for(lambda: len(w.api.calls_to("sendMessage")) > sends, timeout=10)
    else:
        chat = w.rng.choice([c for c in w.chats if c.platform == "qq" and not c.group])
        sends = len(w.onebot.calls_of("send_private_msg"))
        w.onebot.ignore_next("send_private_msg")
        await w.say(chat, question=True)
        await w.onebot.wait_for_call("send_private_msg", sends + 1, within_s=20)
    await w.kill("sending")


async def kill_during_catch_up(w: World) -> None:
    """Restart with yesterday unsummarised, then kill while the catch-up summaries run."""
    hung = w.llm.hung.count("summary")
    await w.kill("random")  # the restart runs the catch-up
    await w.start()
    async with asyncio.timeout(15):
        while w.llm.hung.count("summary") <= hung:  # noqa: ASYNC110 - a plain list of the fake
            await asyncio.sleep(0.005)
    await w.kill("summary")


async def kill_during_summary_command(w: World) -> None:
    """An admin runs /summary run for a group; kill while its LLM call hangs."""
    target = next(c for c in w.chats if c.key in w.yesterday_chats and c.group)
    admin_chat = Chat("telegram", False, ADMIN, (ADMIN,))
    hung = w.llm.hung.count("summary")
    day = chat_day(datetime.now(UTC), zone=ZONE, boundary=BOUNDARY) - timedelta(days=1)
    await w.command(
        admin_chat, f"/summary run {day.isoformat()} {target.key}", sender=ADMIN, cut=True
    )
    async with asyncio.timeout(15):
        while w.llm.hung.count("summary") <= hung:  # noqa: ASYNC110 - a plain list of the fake
            await asyncio.sleep(0.005)
    await w.kill("summary")


async def kill_during_startup(w: World) -> None:
    """Kill a fresh process before it is up."""
    await w.kill("random")
    await w.start(ready=False)
    await asyncio.sleep(w.rng.uniform(0.2, 1.5))
    await w.kill("startup")


async def kill_at_random(w: World) -> None:
    """Kill at a random moment while a wave of messages arrives."""
    wave = asyncio.create_task(w.wave(40))
    await asyncio.sleep(w.rng.uniform(0.0, 0.4))
    await w.kill("random")
    await wave


async def kill_after_telegram_burst(w: World) -> None:
    """Kill just after PTB confirmed a burst of 60 updates it fetched in one poll."""
    chat = w.rng.choice([c for c in w.chats if c.platform == "telegram"])
    burst = [await w.say(chat, question=False) for _ in range(60)]
    last = burst[-1].update_id
    assert last is not None
    await w.api.wait_for(lambda: w.api.confirmed_offset > last, timeout=10)
    await w.kill("burst")


async def kill_after_qq_burst(w: World, *, after_s: float = 0.0, kind: str = "burst_qq") -> None:
    """Kill ``after_s`` after 100 OneBot events were written to the socket at once."""
    chat = w.rng.choice([c for c in w.chats if c.platform == "qq"])
    await asyncio.gather(*(w.say(chat, question=False) for _ in range(100)))
    await asyncio.sleep(after_s)
    await w.kill(kind)


async def kill_after_qqbot_burst(w: World) -> None:
    """Kill just after the QQ Open Platform dispatched 100 events to the official bot:
    those not yet stored come back with the next start's Resume."""
    chat = w.rng.choice([c for c in w.chats if c.platform == "qqbot"])
    for _ in range(100):
        await w.say(chat, question=False)
    await w.kill("burst_qqbot")


async def kill_late_after_qq_burst(w: World) -> None:
    """Kill a little after a burst: storing event by event lost a third of it here."""
    await kill_after_qq_burst(w, after_s=QQ_LATE_KILL_S, kind="burst_qq_late")


async def kill_while_qq_goes_on(w: World) -> None:
    """Kill, then let QQ chatters ask the bot while it is down: only OneBot has them."""
    await w.kill("qq_while_down")
    qq_chats = [c for c in w.chats if c.platform in ("qq", "qqbot")]
    for _ in range(QQ_WHILE_DOWN):
        chat = w.rng.choice(qq_chats)
        w.sent_while_down.append(await w.say(chat, addressed=True, question=True))


KILLERS: dict[str, Callable[[World], Any]] = {
    "burst_telegram": kill_after_telegram_burst,
    "burst_qq": kill_after_qq_burst,
    "burst_qq_late": kill_late_after_qq_burst,
    "burst_qqbot": kill_after_qqbot_burst,
    "qq_while_down": kill_while_qq_goes_on,
    "debounce": kill_in_debounce,
    "llm": kill_during_llm_call,
    "between": kill_between_replies,
    "sending": kill_while_sending,
    "summary": kill_during_catch_up,
    "summary_command": kill_during_summary_command,
    "startup": kill_during_startup,
    "random": kill_at_random,
}


async def quiesce(w: World, *, within_s: float = 90.0) -> None:
    """Wait until nothing waits, nothing is queued and every update was taken."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        state = w.state()
        summaries = {key for (key,) in w.query("SELECT chat_key FROM prompt_history")}
        if not any(state.values()) and not w.api.pending_updates and w.yesterday_chats <= summaries:
            return
        assert loop.time() < deadline, f"not quiet: {state}, {w.api.pending_updates[:3]}"
        await asyncio.sleep(0.05)


# --- the checks ----------------------------------------------------------------------------


@dataclass
class Figures:
    """What the run did and found, for docs/reliability.md."""

    messages: int = 0
    chats: int = 0
    kills: int = 0
    kill_kinds: Counter[str] = field(default_factory=Counter)
    states_at_kill: Counter[str] = field(default_factory=Counter)
    lost_telegram: int = 0
    lost_qq: int = 0
    lost_qqbot: int = 0  # official QQ bot events dispatched (live or for a Resume), not stored
    qqbot_resumes: int = 0  # starts (and reconnects) that resumed the stored session
    lost_qq_by_kill: Counter[str] = field(default_factory=Counter)  # by the kill that followed
    qq_undelivered: int = 0  # QQ messages written while the bot was down or to a dead socket
    qq_sent_while_down: int = 0  # of which at ``qq_while_down``, all answered after the restart
    qq_fetched_back: int = 0  # QQ messages stored from OneBot's history (the bot's log lines)
    duplicates: int = 0
    replies_sent: int = 0
    replies_lost_mid_send: int = 0
    waiting_at_end: int = 0
    secrets_found: int = 0


def check(w: World) -> Figures:
    figures = Figures(messages=len(w.pushed), chats=len({p.chat.key for p in w.pushed}))
    figures.kills = len(w.kills)
    figures.kill_kinds = Counter(k.kind for k in w.kills)

    # Each kill point caught the process in the state it aimed at (read from the file).
    hit = {
        "debounce": lambda k: k.waiting > 0,
        "llm": lambda k: k.open_batches > 0,
        "between": lambda k: k.scheduled + k.sending > 0,
        "sending": lambda k: k.sending > 0,
        "summary": lambda k: k.summaries_hanging,
    }
    missed = [k for k in w.kills if k.kind in hit and not hit[k.kind](k)]
    assert missed == []
    figures.states_at_kill = Counter()
    for k in w.kills:
        figures.states_at_kill["messages waiting"] += k.waiting > 0
        figures.states_at_kill["batch open (LLM call)"] += k.open_batches > 0
        figures.states_at_kill["replies scheduled"] += k.scheduled > 0
        figures.states_at_kill["reply sending"] += k.sending > 0
        figures.states_at_kill["summary in flight"] += k.summaries_hanging

    # Every message handed over is stored exactly once; losses are measured, by platform.
    rows = w.query("SELECT chat_key, message_id, text, batch_id FROM messages WHERE from_bot = 0")
    by_tag = Counter(tag for _, _, words, _ in rows for tag in TAG_RE.findall(words))
    assert [tag for tag, n in by_tag.items() if n > 1] == []
    stored = {(key, message_id) for key, message_id, _, _ in rows}
    for p in w.pushed:
        if p.chat.platform == "qq" and not p.delivered:
            figures.qq_undelivered += 1  # only OneBot's history had it
        if (p.chat.key, p.message_id) in stored:
            continue
        if p.chat.platform == "qqbot":
            figures.lost_qqbot += 1
            continue
        if p.chat.platform == "telegram":
            assert p.update_id is not None
            assert p.update_id < w.api.confirmed_offset  # never taken: it would be pending
            figures.lost_telegram += 1
            continue
        killed = [kill for (t, _), kill in zip(w.down, w.kills, strict=True) if t >= p.at]
        figures.lost_qq += 1
        figures.lost_qq_by_kill[killed[0].kind if killed else "none"] += 1

    # Each stored message was seen by the LLM as new, or as context after its batch.
    batches = dict(w.query("SELECT id, state FROM batches"))
    requests = [json.dumps(r, ensure_ascii=False) for r in w.llm.requests]
    seen_new = {tag for r in w.llm.requests for tag in TAG_RE.findall(new_block(r))}
    seen_any = {tag for r in requests for tag in TAG_RE.findall(r)}
    outcomes: Counter[str] = Counter()
    state_by_tag: dict[str, str] = {}
    for _, _, words, batch_id in rows:
        [tag] = TAG_RE.findall(words)
        state = "waiting" if batch_id is None else batches[batch_id]
        outcomes[state] += 1
        state_by_tag[tag] = state
        if state in {"answered", "silent"}:
            assert tag in seen_new, (tag, state)
        elif state in {"skipped", "failed"}:
            assert tag in seen_any, (tag, state)
        else:
            assert state == "waiting", (tag, state)
    figures.waiting_at_end = outcomes["waiting"]

    # What QQ chatters asked while the bot was down was answered after the restart.
    asked_while_down = [state_by_tag.get(p.tag) for p in w.sent_while_down]
    assert asked_while_down == ["answered"] * len(w.sent_while_down)
    figures.qq_sent_while_down = len(w.sent_while_down)

    # A batch's replies were queued with its outcome: all or nothing.
    queued = {batch for (batch,) in w.query("SELECT DISTINCT batch_id FROM outbox")}
    answered = {b for b, state in batches.items() if state == "answered"}
    assert (answered - queued, queued - answered) == (set(), set())

    # No reply text reached a platform twice; each outbox row at most once.
    texts = sent_texts(w)
    replies = Counter(t for t in texts if REPLY_RE.match(t))
    figures.duplicates = sum(n - 1 for n in replies.values() if n > 1)
    assert {t: n for t, n in replies.items() if n > 1} == {}
    outbox = w.query("SELECT content, state, coalesce(reason, '') FROM outbox")
    for content, state, reason in outbox:
        seen = replies.get(content, 0)
        if state == "sent":
            assert seen == 1, (content, state)
        elif state == "dropped" and reason in {"interrupted while sending", "maybe delivered"}:
            assert seen <= 1, (content, state)
            figures.replies_lost_mid_send += seen == 0
        else:
            assert seen == 0, (content, state, reason)
    figures.replies_sent = sum(replies.values())
    assert set(replies) <= {content for content, _, _ in outbox}

    # A command is answered at most once.
    for chat, message_id in w.commands + w.cut_commands:
        quotes = [
            call
            for call in w.api.calls_to("sendMessage")
            if chat.platform == "telegram"
            and call.get("chat_id") == chat.chat_id
            and (call.get("reply_parameters") or {}).get("message_id") == int(message_id)
            and not REPLY_RE.match(str(call["text"]))
        ]
        assert len(quotes) <= 1, quotes

    # The database is sound and no chat day has two live summaries.
    assert w.query("PRAGMA integrity_check") == [("ok",)]
    assert w.query("PRAGMA foreign_key_check") == []
    assert (
        w.query(
            "SELECT chat_key, summary_date, count(*) FROM prompt_history WHERE is_deleted = 0"
            " GROUP BY chat_key, summary_date HAVING count(*) > 1"
        )
        == []
    )
    summarised = {key for (key,) in w.query("SELECT chat_key FROM prompt_history")}
    assert w.yesterday_chats <= summarised

    # No secret in any log line of any run.
    logs = w.stderr.read_text("utf-8", "replace")
    for path in (w.tmp / "data" / "logs").glob("*.log*"):
        logs += path.read_text("utf-8", "replace")
    secrets = [LLM_KEY, BOT_TOKEN, ONEBOT_TOKEN, QQBOT_SECRET]
    figures.secrets_found = sum(logs.count(s) + logs.count(quote(s, safe="")) for s in secrets)
    assert figures.secrets_found == 0
    assert "Traceback" not in logs
    fetched_back = FETCHED_BACK_RE.findall(w.stderr.read_text("utf-8", "replace"))
    figures.qq_fetched_back = sum(int(count) for count in fetched_back)
    figures.qqbot_resumes = sum(r.accepted for r in w.qqbot.resumes)
    return figures


async def sigterm_while_sending(w: World) -> None:
    """SIGTERM while a Telegram and a QQ send wait for their answers: both end up sent."""
    telegram = w.chats[0]
    qq = next(c for c in w.chats if c.platform == "qq" and not c.group)
    sends = (len(w.api.calls_to("sendMessage")), len(w.onebot.calls_of("send_private_msg")))
    w.api.delay_next("sendMessage", 1.0)
    w.onebot.delay_next("send_private_msg", 1.0)
    await w.say(telegram, question=True)
    await w.say(qq, question=True)
    await w.api.wait_for(lambda: len(w.api.calls_to("sendMessage")) > sends[0], timeout=10)
    await w.onebot.wait_for_call("send_private_msg", sends[1] + 1, within_s=20)
    assert await w.terminate() == 0
    last = {
        key: state
        for key, state in w.query(
            "SELECT chat_key, state FROM outbox WHERE id IN"
            " (SELECT max(id) FROM outbox WHERE chat_key IN (?, ?) GROUP BY chat_key)",
            telegram.key,
            qq.key,
        )
    }
    assert last == {telegram.key: "sent", qq.key: "sent"}


@pytest.mark.timeout(300)
async def test_kill_suite(tmp_path: Path) -> None:
    """Killed 20+ times through 1,000+ messages in 20+ chats: no Telegram update and no QQ
    message is lost (those sent while the bot was down are answered after the restart),
    nothing is stored or sent twice."""
    async with world(tmp_path) as w:
        w.llm.hang_summaries = True
        await w.start()
        # Yesterday's talk, to be summarised by the catch-up at start-up (the QQ Open
        # Platform dates its events itself: its chats talk today only).
        for chat in w.chats:
            await w.say(chat, question=False, yesterday=chat.platform != "qqbot")
        plan = list(KILL_PLAN)
        w.rng.shuffle(plan)
        last_summary = max(i for i, kind in enumerate(plan) if kind.startswith("summary"))
        for step, kind in enumerate(plan):
            remaining = MESSAGES_WANTED - len(w.pushed)
            wave = await w.wave(max(0, remaining // (len(plan) - step)))
            await w.wait_stored({p.tag for p in wave if p.delivered})
            if w.rng.random() < 0.3:  # an admin's command, and someone else's refused one
                await w.command(Chat("telegram", False, ADMIN, (ADMIN,)), "/status", sender=ADMIN)
                chatter = w.rng.choice(w.chats[:7])
                await w.command(chatter, "/pop", sender=chatter.chat_id)
                await w.api.wait_for(lambda: w.answered_commands() == len(w.commands), timeout=10)
            await KILLERS[kind](w)
            if step == last_summary:
                w.llm.hang_summaries = False
            await w.start()
        for chat in w.chats:  # a last question everywhere, so group chatter becomes context
            await w.say(chat, addressed=True, question=True)
        await quiesce(w)

        # SIGTERM with a send on the wire on each platform: a clean stop, nothing twice.
        await sigterm_while_sending(w)
        await w.start()
        await quiesce(w)
        assert await w.terminate() == 0

        figures = check(w)
        identified = len(w.qqbot.identifies)
    print(f"\nkill suite figures: {figures}")
    assert (figures.messages >= 1000, figures.chats >= 20, figures.kills >= 20) == (
        True,
        True,
        True,
    )
    assert (figures.lost_telegram, figures.lost_qq, figures.lost_qqbot, figures.duplicates) == (
        0,
        0,
        0,
        0,
    )
    assert identified == 1  # every later start resumed the stored session
    assert figures.qq_sent_while_down == 2 * QQ_WHILE_DOWN


@pytest.mark.timeout(120)
async def test_sigterm_with_sends_on_the_wire(tmp_path: Path) -> None:
    """SIGTERM while a Telegram and a QQ send await their answers: exit 0, both sent once."""
    async with world(tmp_path) as w:
        await w.start()
        await sigterm_while_sending(w)
        await w.start()
        await quiesce(w)
        assert await w.terminate() == 0
        figures = check(w)
    assert (figures.duplicates, figures.replies_sent) == (0, 2)
