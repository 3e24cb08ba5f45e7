"""The guards against loops and repeats, and links on QQ, over the real parts.

A reply equal to one of the bot's last three in the chat is dropped; a chat where one
sender answers the bot within two seconds five rounds in a row is paused for an hour;
``qq.strip_urls`` replaces links in outgoing QQ text. Each shows in the trace and the log.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import pytest

from bot.company import Company
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.replies.guards import without_links
from bot.replies.items import Reply, Text
from fakes.clock import Clock
from fakes.harness import (
    GROUP,
    PRIVATE,
    free_port,
    harness,
    make_config,
    qq_bot,
    replies_json,
    wait_until,
)
from fakes.onebot import at, text
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

NOON = datetime(2026, 11, 20, 4, 0, tzinfo=UTC)
OTHER_BOT = "666"
SELF_ID, QQ_GROUP, ALICE = 10001, 500, 42


async def test_a_reply_equal_to_one_of_the_last_three_is_dropped(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Of "一, 四, 五" after the bot said "一 二 三 四", "四" (among the last three) is
    dropped and traced; "一" (the fourth last) is said again."""
    llm.reply_json(replies_json("一", "二", "三", "四"))
    llm.reply_json(replies_json("一", "四 ", "五"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm) as bot:
            await bot.say("数数")
            await bot.settle()
            await bot.say("再数")
            await bot.settle()
            [shown] = await bot.ops.traces.recent(PRIVATE, count=1)
    assert bot.platform.texts() == ["一", "二", "三", "四", "一", "五"]
    assert [(d.kind, d.reason) for d in shown.trace.dropped] == [
        ("content", "repeats one of the bot's last 3 messages here")
    ]
    assert logs.about("item dropped") == [
        "INFO content item dropped: repeats one of the bot's last 3 messages here"
    ]


async def test_a_bot_answering_within_two_seconds_five_times_pauses_the_chat(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Another bot that answers every reply within a second is heard five rounds; its
    fifth answer pauses the group for an hour (logged, on /status), with no call, while
    other chats go on; an hour later the group is answered again."""
    clock = Clock(NOON, running=False)
    for number in range(7):
        llm.reply_json(replies_json(f"回合{number}"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, now=clock.now, bot={"admins": ["test:7"]}) as bot:
            for round_ in range(6):
                await bot.say(
                    f"小满 第{round_}轮", chat=GROUP, sender_id=OTHER_BOT, addresses_bot=True
                )
                await bot.settle()
                clock.jump(seconds=1)
            [paused] = await bot.ops.traces.recent(GROUP, count=1)
            status = await bot.command("/status", chat=GROUP)
            await bot.say("你好")
            await bot.settle()
            clock.jump(minutes=61)
            await bot.say("小满 还在吗", chat=GROUP, sender_id=OTHER_BOT, addresses_bot=True)
            await bot.settle()
            [again] = await bot.ops.traces.recent(GROUP, count=1)
    assert (paused.trace.why, paused.trace.gate) == ("paused", ("paused: bot loop until 13:00",))
    assert "paused for a bot loop until 2026-11-20 13:00: no LLM call here meanwhile" in status
    assert again.trace.why == "answered"
    assert len(llm.requests) == 7  # 5 rounds, the private chat, the group an hour later
    assert logs.about(f"bot loop: {OTHER_BOT}") == [
        f"WARNING bot loop: {OTHER_BOT} answered the bot within 2 s 5 rounds in a row; "
        "the chat is paused until 13:00"
    ]


def answer(chat: ChatKey, sender: str, *, addresses_bot: bool = True) -> IncomingMessage:
    return IncomingMessage(
        chat=chat,
        message_id="1",
        sender_id=sender,
        sender_name=sender,
        text="好",
        sent_at=NOON,
        addresses_bot=addresses_bot,
    )


@pytest.mark.parametrize(
    "answers",
    [
        [("a", 1), ("a", 1), ("a", 1), ("a", 1), ("a", 3), ("a", 1), ("a", 1), ("a", 1), ("a", 1)],
        [("a", 1), ("a", 1), ("a", 1), ("a", 1), ("b", 1), ("a", 1), ("a", 1), ("a", 1), ("a", 1)],
    ],
    ids=["one slow answer", "someone else answers"],
)
def test_a_slow_or_another_answer_starts_the_count_anew(answers: list[tuple[str, int]]) -> None:
    """Four fast rounds, then one answer after three seconds or from someone else, then
    four fast rounds again: never five in a row, so no pause."""
    clock = Clock(NOON, running=False)
    company = Company(zone=ZoneInfo("UTC"))
    rounds = []
    for sender, after_s in answers:
        company.bot_spoke(GROUP, at=clock.now())
        clock.jump(seconds=after_s)
        rounds.append(company.heard(answer(GROUP, sender), at=clock.now()))
    assert (rounds, company.paused_until(GROUP, now=clock.now())) == ([False] * len(answers), None)


@pytest.mark.parametrize(
    ("chat", "addresses_bot", "paused"),
    [(GROUP, True, True), (GROUP, False, False), (PRIVATE, True, False)],
    ids=["answers in a group", "the room's talk", "a private chat"],
)
def test_only_fast_answers_to_the_bot_in_a_group_make_a_loop(
    chat: ChatKey, addresses_bot: bool, paused: bool
) -> None:
    """Five messages a second after the bot's items pause a group only when they answer
    the bot; a person writing that fast in a private chat is never paused."""
    clock = Clock(NOON, running=False)
    company = Company(zone=ZoneInfo("UTC"))
    for _ in range(5):
        company.bot_spoke(chat, at=clock.now())
        clock.jump(seconds=1)
        company.heard(answer(chat, "a", addresses_bot=addresses_bot), at=clock.now())
    assert (company.paused_until(chat, now=clock.now()) is not None) is paused


@pytest.mark.parametrize("strip", [True, False])
async def test_links_in_qq_texts_become_link_marks(
    tmp_path: Path, llm: FakeLLMServer, strip: bool
) -> None:
    """With qq.strip_urls the bot's QQ text goes out with [link] for each link (traced and
    logged); without it, the links stay."""
    llm.reply_json(replies_json("看这个https://example.com/a?b=1很好玩，还有 www.bilibili.com"))
    qq = {"enabled": True, "port": free_port(), "strip_urls": strip}
    config = make_config(tmp_path, llm.base_url, qq=qq)
    chat = ChatKey("qq", ChatKind.GROUP, str(QQ_GROUP))
    with captured_logs() as logs:
        async with qq_bot(config, self_id=SELF_ID) as (core, onebot):
            await onebot.send_group_message(QQ_GROUP, ALICE, [at(SELF_ID), text(" 有啥好玩的")])
            [call] = await onebot.wait_for_call("send_group_msg", within_s=5)
            await wait_until(lambda: not core.ops.status.live_chats())
            [shown] = await core.ops.traces.recent(chat, count=1)
    sent = "".join(s["data"]["text"] for s in call.params["message"] if s["type"] == "text")
    if strip:
        assert sent == "看这个[link]很好玩，还有 [link]"
        assert shown.trace.guards == ("2 link(s) replaced with [link]",)
        assert logs.about("replaced") == ["INFO 2 link(s) replaced with [link] (qq.strip_urls)"]
    else:
        assert sent == "看这个https://example.com/a?b=1很好玩，还有 www.bilibili.com"
        assert shown.trace.guards == ()
        assert logs.about("replaced") == []


def test_links_are_cut_at_the_words_around_them() -> None:
    """A link ends where its own characters end: the Chinese after it stays."""
    replies = [Reply(Text("去 github.com/x/y 看，或者http://a.cn/下载吧")), Reply(Text("1.2.3 版"))]
    kept, replaced = without_links(replies)
    assert ([r.item.content for r in kept if isinstance(r.item, Text)], replaced) == (
        ["去 [link] 看，或者[link]下载吧", "1.2.3 版"],
        2,
    )
