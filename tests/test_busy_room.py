"""A busy group over the real wires: the one who asked is answered once they have finished,
whoever else is talking (Telegram through PTB polling, QQ through nonebot's WebSocket)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too

from adapters.app import Core, running_bot
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from bot.secrets import Secrets
from bot.texts import Texts
from bot.trace_lines import format_trace
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, free_port, make_config, qq_bot, replies_json, telegram_config
from fakes.onebot import FakeOneBot, at, text
from fakes.openai_api import FakeLLMServer

QUIET_S = 0.3  # debounce_min_s = debounce_max_s
CHATTER_EVERY_S = 0.05
SLACK_S = 0.6  # polling, the LLM request, a busy CI machine
BUSY = {"debounce_min_s": QUIET_S, "debounce_max_s": QUIET_S, "max_wait_s": 5.0}
TG_GROUP, QQ_GROUP, SELF_ID = -100500, 500, 10001
ALICE, BOB = 42, 43
UTC_ZONE = ZoneInfo("UTC")

Say = Callable[[int, str, bool], Awaitable[str]]
"""Post (sender, text, whether it @-mentions the bot) to the group; return its id."""


async def chatter_until_asked(llm: FakeLLMServer, say: Say) -> list[str]:
    """Let Bob chat every 50 ms until the LLM is asked; return the ids of his messages."""
    asked = asyncio.create_task(llm.wait_for_requests(1, timeout=8.0))
    bob: list[str] = []
    while not asked.done():
        bob.append(await say(BOB, f"闲聊 {len(bob)}", False))
        await asyncio.wait({asked}, timeout=CHATTER_EVERY_S)
    await asked
    return bob


async def answered_amid_chatter(core: Core, llm: FakeLLMServer, say: Say, chat: ChatKey) -> None:
    """Alice asks, Bob keeps chatting, Alice adds a line 150 ms later: the LLM is asked a
    quiet wait after Alice's last line, not when the room falls silent; the batch holds
    Bob's words as context, and its trace says who re-armed the wait."""
    llm.reply_json(replies_json("在的"))
    before = await say(BOB, "今天好热", False)
    question = await say(ALICE, "周六去哪？", True)
    await asyncio.sleep(0.15)
    follow_up = await say(ALICE, "我想去爬山", False)
    followed_at = datetime.now(UTC)
    bob = await chatter_until_asked(llm, say)
    await core.inbox.drain()
    traces = await core.ops.traces.recent(chat, count=10)
    [shown] = [shown for shown in traces if question in shown.trace.message_ids]
    trace = shown.trace

    waited_s = (trace.at - followed_at).total_seconds()  # the batch is taken: trace.at
    assert QUIET_S - 0.02 <= waited_s < QUIET_S + SLACK_S, waited_s
    assert bob, "Bob chatted meanwhile"
    new = str(llm.requests[0]["messages"][-1]["content"]).split("New messages")[1]
    assert ("周六去哪？" in new, "我想去爬山" in new, "闲聊 0" in new) == (True, True, True)
    context = [i for i in trace.message_ids if i not in trace.rearmed_by]
    assert trace.rearmed_by == (before, question, follow_up)
    assert (context, len(context) >= 1) == ([i for i in bob if i in trace.message_ids], True)
    shown_lines = format_trace(shown, zone=UTC_ZONE, say=Texts("en")).splitlines()
    assert shown_lines[2] == (
        f"re-armed the wait: {before}, {question}, {follow_up}; "
        f"joined as context: {', '.join(context)}"
    )


async def test_telegram_answers_the_asker_amid_chatter(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On Telegram, an @ amid constant chatter is answered a quiet wait after the asker's
    last message; the asker's own follow-up re-armed the wait, the chatter did not."""
    config = telegram_config(tmp_path, llm, api, pacing=BUSY)
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)

    async def say(user: int, words: str, mention: bool) -> str:
        body = f"@{api.bot_username} {words}" if mention else words
        message_id = api.push_message(
            TG_GROUP, body, user_id=user, first_name=str(user), chat_type="supergroup"
        )
        return str(message_id)

    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        await answered_amid_chatter(core, llm, say, ChatKey("telegram", ChatKind.GROUP, "-100500"))


async def test_qq_answers_the_asker_amid_chatter(tmp_path: Path, llm: FakeLLMServer) -> None:
    """On QQ, an @ amid constant chatter is answered a quiet wait after the asker's last
    message; the asker's own follow-up re-armed the wait, the chatter did not."""
    qq: dict[str, Any] = {"enabled": True, "port": free_port()}
    config = make_config(tmp_path, llm.base_url, qq=qq, pacing=BUSY)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):

        async def say(user: int, words: str, mention: bool) -> str:
            segments = [at(SELF_ID), text(f" {words}")] if mention else [text(words)]
            message_id = await onebot.send_group_message(QQ_GROUP, user, segments)
            return str(message_id)

        await answered_amid_chatter(core, llm, say, ChatKey("qq", ChatKind.GROUP, "500"))


# A three-member group taking turns every 3 s, scaled to 150 ms a turn: the call comes
# 100 ms after an @ (the debounce), well before the asker's own next turn 450 ms later,
# with time enough to answer and send in between.
TURN_S = 0.15
TURNS = {"debounce_min_s": 0.1, "debounce_max_s": 0.1, "max_wait_s": 3.0, "max_delay_s": 0.1}
TURN_GROUPS = {"continue_s": 0.2, "answer_within_s": 1.0}
# An asker who never stops: each line, 80 ms after the last, re-arms the 500 ms wait.
TYPING_GAP_S = 0.08
TIRELESS = {"debounce_min_s": 0.5, "debounce_max_s": 0.5, "max_wait_s": 5.0}
ANSWER_WITHIN_S = 1.2
TIRELESS_GROUPS = {"continue_s": 0.6, "answer_within_s": ANSWER_WITHIN_S}
CAROL = 44
MEMBERS = (ALICE, BOB, CAROL)


async def answers_each_at_in_a_three_member_group(
    core: Core, llm: FakeLLMServer, say: Say, chat: ChatKey
) -> None:
    """Three members take turns; messages 7 (Alice) and 15 (Carol) @-mention the bot.
    Alice goes on chatting every third turn, but her lines long after the @ are chatter:
    the first @ is answered before the second arrives, each @ costs one call, and the
    wait ended a quiet after the asker."""
    llm.reply_json(replies_json("在的"))
    llm.reply_json(replies_json("好呀"))
    loop = asyncio.get_running_loop()
    asked: dict[str, float] = {}
    calls_before_second = 0
    for number in range(1, 19):
        sender = MEMBERS[(number - 1) % 3]
        mentions = number in {7, 15}
        if number == 15:
            calls_before_second = len(llm.requests)
        message_id = await say(sender, f"第{number}句", mentions)
        if mentions:
            asked[message_id] = loop.time()
        await asyncio.sleep(TURN_S)
    await llm.wait_for_requests(2, timeout=5.0)
    await core.inbox.drain()
    traces = await core.ops.traces.recent(chat, count=20)
    answered = [t.trace for t in traces if t.trace.why == "answered"]
    first, second = sorted(answered, key=lambda trace: trace.batch_id)
    first_at, second_at = asked
    assert (calls_before_second, len(llm.requests)) == (1, 2)
    assert [set(asked) & set(t.message_ids) for t in (first, second)] == [{first_at}, {second_at}]
    assert (first.wait_ended, second.wait_ended) == ("quiet after the asker",) * 2


async def test_telegram_answers_each_at_while_the_asker_chats_on(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On Telegram, in a three-member group taking turns, each @ is answered before the
    next, with one call each, though the asker keeps chatting with the others."""
    config = telegram_config(tmp_path, llm, api, pacing=TURNS, groups=TURN_GROUPS)
    async with running_bot(config, telegram_secrets(api), telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        await answers_each_at_in_a_three_member_group(core, llm, telegram_say(api), TG_CHAT)


async def test_qq_answers_each_at_while_the_asker_chats_on(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """On QQ, in a three-member group taking turns, each @ is answered before the next,
    with one call each, though the asker keeps chatting with the others."""
    config = qq_turns_config(tmp_path, llm)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
        await answers_each_at_in_a_three_member_group(core, llm, qq_say(onebot), QQ_CHAT)


async def quick_follow_up_joins_the_question(
    core: Core, llm: FakeLLMServer, say: Say, chat: ChatKey
) -> None:
    """Alice asks and adds "…I mean for a beginner" a simulated 2 s later: the one call
    holds both lines, a quiet wait after her second line, which re-armed it."""
    llm.reply_json(replies_json("香山"))
    question = await say(ALICE, "周六爬哪座山？", True)
    await asyncio.sleep(0.05)  # "2 s" later: well within continue_s
    follow_up = await say(ALICE, "我是说适合新手的", False)
    followed_at = asyncio.get_running_loop().time()
    await llm.wait_for_requests(1, timeout=5.0)
    asked_after_s = asyncio.get_running_loop().time() - followed_at
    await core.inbox.drain()
    [shown] = await core.ops.traces.recent(chat, count=1)
    new = str(llm.requests[0]["messages"][-1]["content"]).split("New messages")[1]
    assert ("周六爬哪座山？" in new, "我是说适合新手的" in new) == (True, True)
    assert (shown.trace.rearmed_by, shown.trace.wait_ended) == (
        (question, follow_up),
        "quiet after the asker",
    )
    assert asked_after_s >= TURNS["debounce_min_s"] - 0.02


async def test_telegram_waits_for_the_askers_quick_follow_up(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On Telegram the asker's quick second line still joins the question."""
    config = telegram_config(tmp_path, llm, api, pacing=TURNS, groups=TURN_GROUPS)
    async with running_bot(config, telegram_secrets(api), telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        await quick_follow_up_joins_the_question(core, llm, telegram_say(api), TG_CHAT)


async def test_qq_waits_for_the_askers_quick_follow_up(tmp_path: Path, llm: FakeLLMServer) -> None:
    """On QQ the asker's quick second line still joins the question."""
    async with qq_bot(qq_turns_config(tmp_path, llm), self_id=SELF_ID) as (core, onebot):
        await quick_follow_up_joins_the_question(core, llm, qq_say(onebot), QQ_CHAT)


async def answer_bound_holds_against_a_tireless_asker(
    core: Core, llm: FakeLLMServer, say: Say, chat: ChatKey
) -> None:
    """Alice asks and keeps adding quick lines, each re-arming the wait: the call still
    comes once the answer bound has passed, and the trace says the bound ended the wait."""
    llm.reply_json(replies_json("在的"))
    loop = asyncio.get_running_loop()
    asked = asyncio.create_task(llm.wait_for_requests(1, timeout=5.0))
    await say(ALICE, "小满你在吗", True)
    asked_at = loop.time()
    lines = 0
    while not asked.done():
        await asyncio.wait({asked}, timeout=TYPING_GAP_S)
        if not asked.done():
            lines += 1
            await say(ALICE, f"还有一件事 {lines}", False)
    answered_after_s = loop.time() - asked_at
    await core.inbox.drain()
    traces = await core.ops.traces.recent(chat, count=10)
    [first] = [t.trace for t in traces if t.trace.why == "answered"][-1:]
    assert (first.wait_ended, lines >= 10) == ("the answer bound", True)
    assert answered_after_s >= ANSWER_WITHIN_S - 0.02


async def test_telegram_answers_within_the_bound_however_the_asker_goes_on(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On Telegram an asker who never stops typing is answered at the answer bound."""
    config = telegram_config(tmp_path, llm, api, pacing=TIRELESS, groups=TIRELESS_GROUPS)
    async with running_bot(config, telegram_secrets(api), telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        await answer_bound_holds_against_a_tireless_asker(core, llm, telegram_say(api), TG_CHAT)


async def test_qq_answers_within_the_bound_however_the_asker_goes_on(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """On QQ an asker who never stops typing is answered at the answer bound."""
    config = qq_turns_config(tmp_path, llm, pacing=TIRELESS, groups=TIRELESS_GROUPS)
    async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
        await answer_bound_holds_against_a_tireless_asker(core, llm, qq_say(onebot), QQ_CHAT)


TG_CHAT = ChatKey("telegram", ChatKind.GROUP, str(TG_GROUP))
QQ_CHAT = ChatKey("qq", ChatKind.GROUP, str(QQ_GROUP))


def telegram_secrets(api: FakeBotAPI) -> Secrets:
    return Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)


def telegram_say(api: FakeBotAPI) -> Say:
    async def say(user: int, words: str, mention: bool) -> str:
        body = f"@{api.bot_username} {words}" if mention else words
        message_id = api.push_message(
            TG_GROUP, body, user_id=user, first_name=str(user), chat_type="supergroup"
        )
        return str(message_id)

    return say


def qq_turns_config(
    tmp_path: Path,
    llm: FakeLLMServer,
    *,
    pacing: dict[str, float] = TURNS,
    groups: dict[str, float] = TURN_GROUPS,
) -> Config:
    qq: dict[str, Any] = {"enabled": True, "port": free_port()}
    return make_config(tmp_path, llm.base_url, qq=qq, pacing=pacing, groups=groups)


def qq_say(onebot: FakeOneBot) -> Say:
    async def say(user: int, words: str, mention: bool) -> str:
        segments = [at(SELF_ID), text(f" {words}")] if mention else [text(words)]
        return str(await onebot.send_group_message(QQ_GROUP, user, segments))

    return say
