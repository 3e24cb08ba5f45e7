"""The group gate over the real core (SQLite, the openai SDK against the fake LLM server,
the pipeline), with its random draw and the wall clock set by the test.

Every reason to speak and every refusal, the hourly budget rolling over, the per-group
overrides, and the unchanged modes: a batch the gate turns away makes no LLM call and
leaves a trace that says why.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.config.groups import GroupSettings
from bot.gate import draw_line
from bot.hours import in_window
from bot.models import ChatKey, ChatKind
from bot.replies.questions import asks_the_room
from bot.trace import Trace
from fakes.clock import Clock
from fakes.harness import GROUP, Draws, Harness, harness, replies_json
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

SMART: dict[str, Any] = {"reply_mode": "smart", "talk_value": 1.0}
ADMIN = {"admins": ["test:7"]}
# 12:00 in Asia/Shanghai, the bot's zone: no quiet hours, far from the day boundary.
NOON = datetime(2026, 11, 20, 4, 0, tzinfo=UTC)
ALICE, BOB = "41", "42"


def script(llm: FakeLLMServer, count: int) -> None:
    """Script ``count`` answers, each different: the bot never repeats its last words."""
    for number in range(count):
        llm.reply_json(replies_json(f"第{number}句"))


async def newest_trace(bot: Harness, chat: ChatKey = GROUP) -> Trace:
    """Return the trace of ``chat``'s newest batch."""
    [shown] = await bot.ops.traces.recent(chat, count=1)
    return shown.trace


async def chat_in(bot: Harness, text: str, *, chat: ChatKey = GROUP, sender: str = BOB) -> Trace:
    """Say ``text`` unaddressed in a group, let the batch end, return its trace."""
    await bot.say(text, chat=chat, sender_id=sender, addresses_bot=False)
    await bot.settle()
    return await newest_trace(bot, chat)


async def test_a_batch_without_a_reason_costs_no_call(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Chatter with no interest, question or follow-up is stored as context only: no LLM
    call, and its trace says the bot stayed out for no reason."""
    async with harness(tmp_path, llm, groups=SMART) as bot:
        with captured_logs("INFO") as lines:
            trace = await chat_in(bot, "今天好热")
        stored = [m.text for m in await bot.ops.status.messages(GROUP, limit=5)]
    assert llm.requests == []
    assert (trace.why, trace.gate, trace.llm_calls) == ("stayed out", ("no reason",), ())
    assert stored == ["今天好热"]
    about_it = [line.split(": ", 1)[1] for line in lines if "bot." in line.split(": ")[0]]
    assert [line for line in about_it if "answering" in line] == []
    assert "stayed out (the gate: no reason): no LLM call, kept as context" in about_it


@pytest.mark.parametrize(
    ("text", "interests", "gate"),
    [
        ("我家的猫又把杯子打翻了", ["猫"], ("interest: 猫",)),
        ("我想养猫", ["猫"], ("interest: 猫",)),  # glued to the word before it
        ("熊猫好可爱", ["猫"], ("interest: 猫",)),  # one character: wherever it is written
        ("今晚吃火锅吗", ["火锅"], ("interest: 火锅",)),
        ("锅里的火太大了", ["火锅"], ()),  # both characters, not the word
        ("Just started playing GENSHIN again", ["genshin"], ("interest: genshin",)),
        ("my categories are a mess", ["cat"], ()),
        ("周末去看原神的演唱会", ["原神 演唱会", "天气"], ("interest: 原神 演唱会",)),
    ],
)
async def test_interests_are_matched_on_words(
    tmp_path: Path, llm: FakeLLMServer, text: str, interests: list[str], gate: tuple[str, ...]
) -> None:
    """An interest counts when every one of its words is a word of a message, Chinese cut
    as recall cuts it and case aside; a one-character interest counts wherever it is written
    (猫 in "我想养猫" and in "熊猫": no dictionary tells the two apart)."""
    llm.reply_json(replies_json("我也是"))
    groups = {**SMART, "interests": interests}
    async with harness(tmp_path, llm, groups=groups, now=Clock(NOON, running=False).now) as bot:
        trace = await chat_in(bot, text)
    if gate:
        assert (len(llm.requests), trace.gate[:-1], trace.why) == (1, gate, "answered")
    else:
        assert (llm.requests, trace.gate) == ([], ("no reason",))


@pytest.mark.parametrize(
    "text",
    ["有人知道明天下不下雨吗", "anyone know a good ramen place", "这家店今天开门了？"],
)
async def test_a_question_to_the_room_is_a_reason(
    tmp_path: Path, llm: FakeLLMServer, text: str
) -> None:
    """A question to the room costs one call, and the trace names the reason and the draw."""
    llm.reply_json(replies_json("应该会"))
    async with harness(
        tmp_path, llm, groups=SMART, now=Clock(NOON, running=False).now, draw=Draws(0.5)
    ) as bot:
        trace = await chat_in(bot, text)
    assert len(llm.requests) == 1
    assert trace.gate == ("question", "talk_value draw 0.50 < 1.00")
    assert bot.platform.texts(GROUP) == ["应该会"]


async def test_someone_the_bot_just_talked_with_follows_up(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Within ten minutes of an answer to Alice, her next words are a reason to speak;
    Bob's are not, and hers are not either eleven minutes on."""
    clock = Clock(NOON, running=False)
    llm.reply_json(replies_json("在的"))
    llm.reply_json(replies_json("哈哈"))
    async with harness(tmp_path, llm, groups=SMART, now=clock.now) as bot:
        await bot.say("小满在吗", chat=GROUP, sender_id=ALICE, addresses_bot=True)
        await bot.settle()
        clock.jump(minutes=5)
        bob = await chat_in(bot, "嗯嗯", sender=BOB)
        alice = await chat_in(bot, "嗯嗯", sender=ALICE)
        clock.jump(minutes=11)
        later = await chat_in(bot, "好吧", sender=ALICE)
    assert len(llm.requests) == 2
    assert (bob.gate, alice.gate[0], later.gate) == (("no reason",), "follow-up", ("no reason",))


@pytest.mark.parametrize(
    ("talk_value", "drawn", "calls", "line"),
    [
        (0.3, 0.72, 0, "talk_value draw 0.72 > 0.30"),
        (0.3, 0.12, 1, "talk_value draw 0.12 < 0.30"),
        (0.0, 0.0, 0, "talk_value draw 0.00 ≥ 0.00"),
    ],
)
async def test_the_draw_against_talk_value_decides(
    tmp_path: Path,
    llm: FakeLLMServer,
    talk_value: float,
    drawn: float,
    calls: int,
    line: str,
) -> None:
    """With a reason, the batch goes to the LLM only when the draw falls below talk_value
    (0.0: never); the trace shows the draw."""
    groups = {**SMART, "talk_value": talk_value}
    async with harness(
        tmp_path, llm, groups=groups, draw=Draws(drawn), now=Clock(NOON, running=False).now
    ) as bot:
        trace = await chat_in(bot, "有人去吃火锅吗？")
    assert (len(llm.requests), trace.gate) == (calls, ("question", line))


async def test_the_hourly_budget_is_spent_then_rolls_over(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Two unaddressed calls an hour: the third question stays out ("the hour's unaddressed
    calls are spent") while an addressed batch is answered and not counted; an hour after
    the first call, one more goes through."""
    clock = Clock(NOON, running=False)
    script(llm, 4)
    groups = {**SMART, "unaddressed_calls_per_hour": 2, "max_share": 1.0}
    async with harness(tmp_path, llm, groups=groups, now=clock.now, bot=ADMIN) as bot:
        first = await chat_in(bot, "有人知道几点了吗？", sender="51")
        clock.jump(minutes=20)
        await chat_in(bot, "有人吃饭了吗？", sender="52")
        spent = await chat_in(bot, "有人看比赛吗？", sender="53")
        await bot.say("小满你看比赛吗", chat=GROUP, sender_id=ALICE, addresses_bot=True)
        await bot.settle()
        addressed = await newest_trace(bot)
        status = await bot.command("/status", chat=GROUP)
        clock.jump(minutes=41)  # 61 minutes after the first call
        rolled = await chat_in(bot, "有人看新闻吗？", sender="54")
    assert first.gate[0] == "question"
    assert spent.gate == ("question", "the hour's unaddressed calls are spent")
    assert (addressed.gate, addressed.why) == (("addressed",), "answered")
    assert "unaddressed calls in the last hour: 2 of 2" in status.splitlines()
    assert rolled.why == "answered"
    assert len(llm.requests) == 4


async def test_the_bots_share_of_the_last_messages_keeps_it_out(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Having written half of the chat's last messages, the bot stays out of a question
    (share 0.50 > 0.25) until others have talked enough."""
    script(llm, 3)
    async with harness(tmp_path, llm, groups=SMART, now=Clock(NOON, running=False).now) as bot:
        for asked in ("小满早", "小满吃了吗"):
            await bot.say(asked, chat=GROUP, sender_id=ALICE, addresses_bot=True)
            await bot.settle()
        held = await chat_in(bot, "有人去吗？")
        for line in ("我去", "我也去", "算我一个", "几点", "七点吧"):
            await chat_in(bot, line)
        joined = await chat_in(bot, "有人带伞吗？")
    assert held.gate == ("question", "share 0.40 > 0.25")
    assert joined.why == "answered"
    assert len(llm.requests) == 3


async def test_quiet_hours_keep_it_out_but_not_from_an_answer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """At 02:00 local time with quiet_hours 01:00-08:00 a question stays out, an @ is
    answered; at 08:30 the question goes through."""
    clock = Clock(
        datetime(2026, 11, 19, 18, 0, tzinfo=UTC), running=False
    )  # 02:00 in Asia/Shanghai
    script(llm, 2)
    groups = {**SMART, "quiet_hours": "01:00-08:00", "max_share": 1.0}
    async with harness(tmp_path, llm, groups=groups, now=clock.now) as bot:
        night = await chat_in(bot, "有人还没睡吗？")
        await bot.say("小满还没睡？", chat=GROUP, sender_id=ALICE, addresses_bot=True)
        await bot.settle()
        addressed = await newest_trace(bot)
        clock.jump(hours=6, minutes=30)
        morning = await chat_in(bot, "有人吃早饭了吗？")
    assert night.gate == ("question", "quiet hours")
    assert (addressed.why, morning.why) == ("answered", "answered")
    assert len(llm.requests) == 2


async def test_an_addressed_batch_is_answered_whatever_the_gate_would_say(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """No budget, talk_value 0, quiet all day: an @ is still answered, with one call."""
    llm.reply_json(replies_json("在"))
    groups = {
        "reply_mode": "smart",
        "talk_value": 0.0,
        "unaddressed_calls_per_hour": 0,
        "quiet_hours": "00:00-23:59",
    }
    async with harness(tmp_path, llm, groups=groups, now=Clock(NOON, running=False).now) as bot:
        await bot.say("小满在吗", chat=GROUP, sender_id=ALICE, addresses_bot=True)
        await bot.settle()
        trace = await newest_trace(bot)
    assert (len(llm.requests), trace.gate, bot.platform.texts(GROUP)) == (1, ("addressed",), ["在"])


async def test_mention_and_always_modes_are_unchanged(tmp_path: Path, llm: FakeLLMServer) -> None:
    """``mention`` answers no unaddressed question; ``always`` sends even chatter with no
    reason to the LLM."""
    other = ChatKey("test", ChatKind.GROUP, "-200")
    override = [{"chat": str(other), "reply_mode": "always"}]
    llm.reply_json({"replies": []})
    groups = {"reply_mode": "mention", "override": override}
    async with harness(tmp_path, llm, groups=groups) as bot:
        mention = await chat_in(bot, "有人知道吗？")
        always = await chat_in(bot, "今天好热", chat=other)
    assert (mention.why, mention.gate) == ("not addressed", ("not addressed",))
    assert (always.why, always.gate) == ("silent", ("always",))
    assert len(llm.requests) == 1


async def test_an_override_covers_every_topic_and_one_budget_for_the_group(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A group's override applies in each topic of it; its hourly budget counts the topics
    together; another group keeps the [groups] settings."""
    topic_7, topic_8 = (ChatKey("test", ChatKind.GROUP, "-100", t) for t in ("7", "8"))
    other = ChatKey("test", ChatKind.GROUP, "-300")
    override = {
        "chat": str(GROUP),
        "reply_mode": "smart",
        "interests": ["猫"],
        "talk_value": 1.0,
        "unaddressed_calls_per_hour": 1,
    }
    llm.default = '{"replies": [{"content": "喵", "send_delay_seconds": 0}]}'
    groups = {"reply_mode": "mention", "override": [override]}
    async with harness(tmp_path, llm, groups=groups, now=Clock(NOON, running=False).now) as bot:
        in_7 = await chat_in(bot, "我的猫会开门", chat=topic_7, sender=ALICE)
        in_8 = await chat_in(bot, "我的猫也会", chat=topic_8, sender=BOB)
        elsewhere = await chat_in(bot, "我的猫不会", chat=other, sender=BOB)
    assert in_7.gate[0] == "interest: 猫"
    assert (in_7.why, in_8.gate) == (
        "answered",
        ("interest: 猫", "the hour's unaddressed calls are spent"),
    )
    assert (elsewhere.why, len(llm.requests)) == ("not addressed", 1)


@pytest.mark.parametrize(
    ("local", "hours", "inside"),
    [
        ("02:00", "01:00-08:00", True),
        ("08:00", "01:00-08:00", False),
        ("23:30", "22:00-07:00", True),
        ("06:59", "22:00-07:00", True),
        ("12:00", "22:00-07:00", False),
    ],
)
def test_quiet_hours_may_pass_midnight(local: str, hours: str, inside: bool) -> None:
    """A quiet span holds its start, not its end, and may run past midnight."""
    window = GroupSettings(quiet_hours=hours).quiet_window
    moment = datetime.combine(date(2026, 11, 20), time.fromisoformat(local), tzinfo=UTC)
    assert window is not None
    assert in_window(moment, window=window, zone=ZoneInfo("UTC")) is inside


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("有人知道原神新版本什么时候出吗", True),
        ("大家有没有推荐的耳机", True),
        ("does anybody have a charger", True),
        ("去吃饭吗？", True),
        ("what", False),  # a private chat would call it a question; the room would not
        ("我觉得不行", False),
        ("看这个 https://a.example/?q=1", False),
    ],
)
def test_a_question_to_the_room(text: str, asks: bool) -> None:
    """Only a message ending in ?/？ or asking whether anyone knows puts it to the room."""
    assert asks_the_room(text) is asks


def test_the_draw_line_says_how_the_draw_went() -> None:
    """The draw is shown with two decimals and the sign that decided."""
    assert [draw_line(0.72, 0.3), draw_line(0.1, 0.3), draw_line(0.3, 0.3)] == [
        "talk_value draw 0.72 > 0.30",
        "talk_value draw 0.10 < 0.30",
        "talk_value draw 0.30 ≥ 0.30",
    ]
