"""The pipeline with real SQLite and the real openai SDK: burst → one call → paced replies."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.app import utc_now
from bot.config.model import PacingConfig
from bot.conversation import Phase
from bot.errors import ChatUnavailable, RateLimited, SendFailed
from bot.models import BatchOutcome, ChatKey, ChatKind, ChatMessage
from bot.pipeline import Pipeline
from bot.ports import PacingLimits
from bot.prompt import estimate_prompt_tokens
from bot.replies.items import ItemKind, Outgoing
from bot.retries import Retries
from bot.sender import Sender
from fakes.harness import (
    GROUP,
    PRIVATE,
    Harness,
    RecordingPlatform,
    harness,
    replies_json,
    user_prompt,
    wait_until,
)
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore
from tests.log_capture import captured_logs


async def test_burst_is_one_call_and_paced_replies(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Three quick messages make one LLM call once the chat is quiet; replies come in order,
    paced, typing between."""
    llm.reply_json(replies_json("第一句", "第二句", "第三句", delay=0.1))
    async with harness(tmp_path, llm) as bot:
        loop = asyncio.get_running_loop()
        for text in ("在吗", "我跟你说个事", "明天去爬山吗？"):
            await bot.say(text)
        last_said_at = loop.time()
        await bot.platform.wait_for_sends(3)
    assert len(llm.requests) == 1
    prompt = user_prompt(llm.requests[0])
    assert [line.split(": ", 1)[1] for line in prompt.splitlines()[-3:]] == [
        "在吗",
        "我跟你说个事",
        "明天去爬山吗？",
    ]
    sent = bot.platform.sent
    assert [s.text for s in sent] == ["第一句", "第二句", "第三句"]
    gaps = [b.at - a.at for a, b in itertools.pairwise(sent)]
    assert [gap >= 0.09 for gap in gaps] == [True, True], gaps
    typing_between = [t for _, t in bot.platform.typing if sent[0].at < t < sent[2].at]
    assert len(typing_between) >= 2
    quiet_s = bot.config.pacing.debounce_min_s
    assert sent[0].at - last_said_at >= quiet_s  # not before the chat had gone quiet


async def test_first_reply_goes_out_at_once(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The first reply is sent right after the LLM answers, whatever its delay field says."""
    llm.reply_json({"replies": [{"content": "嗨", "send_delay_seconds": 60}]})
    async with harness(tmp_path, llm, pacing={"max_delay_s": 120.0}) as bot:
        await bot.say("hi")
        await llm.wait_for_requests(1)
        await bot.platform.wait_for_sends(1, within_s=10.0)  # the delay says 60 s
    assert [s.text for s in bot.platform.sent] == ["嗨"]


async def test_messages_during_an_answer_go_to_the_next_batch(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A message sent while a batch is answered goes to a second batch that sees the replies."""
    llm.hang(0.2, content=json.dumps(replies_json("先回答第一个")))
    llm.reply_json(replies_json("再回答第二个"))
    async with harness(tmp_path, llm, pacing={"on_new_message": "finish"}) as bot:
        await bot.say("第一个问题？")
        await llm.wait_for_requests(1)
        await bot.say("第二个问题？")
        await bot.platform.wait_for_sends(2)
    assert len(llm.requests) == 2
    second = user_prompt(llm.requests[1])
    assert "小满 (you): 先回答第一个" in second
    assert second.rstrip().endswith("第二个问题？")
    assert "第一个问题？" in second.split("New messages")[0]


@pytest.mark.parametrize(
    ("failure", "status"),
    [("429", 429), ("500", 500), ("timeout", None)],
)
async def test_llm_failure_keeps_chat_silent_then_recovers(
    tmp_path: Path, llm: FakeLLMServer, failure: str, status: int | None
) -> None:
    """After a 429, 500 or timeout the chat stays silent; the next message is answered."""
    if status is None:
        llm.hang(3.0)
    else:
        llm.fail(status)
    llm.reply_json(replies_json("我回来了"))
    async with harness(tmp_path, llm, llm={"timeout_s": 0.3}) as bot:
        await bot.say("你好")
        await llm.wait_for_requests(1)
        await bot.settle()
        assert bot.platform.sent == []
        assert await bot.ops.status.llm_errors_last_hour() == 1
        await bot.say("还在吗")
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["我回来了"]
    assert "你好" in user_prompt(llm.requests[-1]).split("New messages")[0]


async def test_group_unaddressed_is_stored_but_not_answered(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """In mention mode a group batch without an address makes no LLM call but stays as context."""
    async with harness(tmp_path, llm) as bot:
        await bot.say("今天好热", chat=GROUP, sender_id="1", sender_name="阿强")
        await bot.settle()
        assert llm.requests == []
        await bot.say(
            "小满你觉得呢？", chat=GROUP, sender_id="2", sender_name="阿珍", addresses_bot=True
        )
        await bot.platform.wait_for_sends(1)
    assert len(llm.requests) == 1
    assert "阿强: 今天好热" in user_prompt(llm.requests[0]).split("New messages")[0]


async def test_group_burst_from_two_people_keeps_both_and_quotes(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Two members in one batch: one call names both, and replies quote the messages they answer."""
    async with harness(tmp_path, llm, groups={"reply_mode": "always"}) as bot:
        first = await bot.say("周六去哪", chat=GROUP, sender_id="1", sender_name="阿强")
        second = await bot.say("我想去海边", chat=GROUP, sender_id="2", sender_name="阿珍")
        llm.reply_json(
            {
                "replies": [
                    {"content": "去山里吧", "send_delay_seconds": 0, "reply_to": first.message_id},
                    {
                        "content": "海边也行",
                        "send_delay_seconds": 0,
                        "reply_to": int(second.message_id),
                    },
                    {"content": "哈哈", "send_delay_seconds": 0, "reply_to": "nope"},
                ]
            }
        )
        await bot.platform.wait_for_sends(3)
    prompt = user_prompt(llm.requests[0])
    assert f"[#{first.message_id} " in prompt
    assert f"[#{second.message_id} " in prompt
    assert ("阿强" in prompt, "阿珍" in prompt) == (True, True)
    assert [(s.text, s.reply_to) for s in bot.platform.sent] == [
        ("去山里吧", first.message_id),
        ("海边也行", second.message_id),
        ("哈哈", None),
    ]


async def test_smart_mode_may_stay_silent(tmp_path: Path, llm: FakeLLMServer) -> None:
    """In smart mode a batch the gate lets through may be answered with silence."""
    llm.reply_json({"replies": []})
    smart = {"reply_mode": "smart", "talk_value": 1.0}
    async with harness(tmp_path, llm, groups=smart) as bot:
        await bot.say("有人知道明天下雨吗？", chat=GROUP)
        await bot.settle()
    assert len(llm.requests) == 1
    assert bot.platform.sent == []


async def test_empty_reply_to_a_question_in_private_asks_again(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """An empty list is not accepted for a private question: the LLM is asked once more."""
    llm.reply_json({"replies": []})
    llm.reply_json(replies_json("八点"))
    async with harness(tmp_path, llm) as bot:
        await bot.say("明天几点？")
        await bot.platform.wait_for_sends(1)
    assert len(llm.requests) == 2
    assert bot.platform.texts() == ["八点"]


async def test_empty_reply_to_ok_in_private_is_silence(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A lone "ok" may go unanswered: one call, nothing sent."""
    llm.reply_json({"replies": []})
    async with harness(tmp_path, llm) as bot:
        await bot.say("ok")
        await bot.settle()
    assert len(llm.requests) == 1
    assert bot.platform.sent == []


async def test_fenced_json_is_read(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Fenced JSON with prose around it is parsed without a second call."""
    llm.reply('好的！\n```json\n{"replies": [{"content": "收到", "send_delay_seconds": 0}]}\n```')
    async with harness(tmp_path, llm) as bot:
        await bot.say("hi")
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["收到"]
    assert len(llm.requests) == 1


async def test_prose_goes_to_the_splitter(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Prose instead of JSON makes one splitter call whose JSON is used."""
    llm.reply("当然可以。我们明天见！")
    llm.reply_json(replies_json("当然可以。", "我们明天见！"))
    async with harness(tmp_path, llm) as bot:
        await bot.say("明天见？")
        await bot.platform.wait_for_sends(2)
    assert len(llm.requests) == 2
    assert "当然可以。我们明天见！" in json.dumps(llm.requests[1]["messages"], ensure_ascii=False)
    assert bot.platform.texts() == ["当然可以。", "我们明天见！"]


async def test_garbage_everywhere_falls_back_to_text_split(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """When the splitter fails too, the prose is split on sentences and no JSON reaches the chat."""
    llm.reply("第一句话。第二句话！")
    llm.reply("still not json")
    async with harness(tmp_path, llm) as bot:
        await bot.say("hi")
        await bot.platform.wait_for_sends(2)
    assert bot.platform.texts() == ["第一句话。", "第二句话！"]


async def test_truncated_json_never_reaches_the_chat(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A reply cut off at the token limit is invalid; what is sent is never raw JSON."""
    llm.reply(
        '{"replies": [{"content": "完整的一句", "send_delay_seconds": 0}, {"content": "被截',
        finish_reason="length",
    )
    llm.fail(500)  # the splitter is down as well
    async with harness(tmp_path, llm) as bot:
        await bot.say("hi")
        await bot.settle()
    assert len(llm.requests) == 2
    assert all("{" not in text and "replies" not in text for text in bot.platform.texts())
    assert bot.platform.texts()[:1] == ["完整的一句"]


def thinking(llm: FakeLLMServer, *contents: str) -> None:
    """Script an answer of several replies that takes the LLM 0.3 s to think out."""
    plan = replies_json(*contents, delay=0.2)
    llm.hang(0.3, content=json.dumps(plan, ensure_ascii=False))


@pytest.mark.parametrize("mode", ["cancel", "finish"])
@pytest.mark.parametrize("when", ["sending", "thinking"])
async def test_writing_again_cancels_or_finishes(
    tmp_path: Path, llm: FakeLLMServer, mode: str, when: str
) -> None:
    """Writing again, while the replies go out or while the answer is still thought out:
    in ``cancel`` mode only the first line is said and the next batch is told the rest;
    ``finish`` sends all."""
    if when == "sending":
        llm.reply_json(replies_json("一", "二", "三", delay=0.3))
    else:
        thinking(llm, "一", "二", "三")
    llm.reply_json(replies_json("好"))
    async with harness(tmp_path, llm, pacing={"on_new_message": mode}) as bot:
        await bot.say("讲个故事")
        if when == "sending":
            await bot.platform.wait_for_sends(1)
        else:
            await llm.wait_for_requests(1)
        await bot.say("算了不用了")
        await bot.settle()
    if mode == "cancel":
        assert bot.platform.texts() == ["一", "好"]
        assert "- 二\n- 三" in user_prompt(llm.requests[1])
    else:
        assert bot.platform.texts() == ["一", "二", "三", "好"]
    assert "算了不用了" in user_prompt(llm.requests[1]).split("New messages")[1]


async def test_group_cancel_only_for_the_people_answered(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """In a group, a bystander's message does not cancel replies meant for someone else."""
    llm.reply_json(replies_json("一", "二", delay=0.2))
    async with harness(tmp_path, llm) as bot:
        await bot.say("小满在吗", chat=GROUP, sender_id="1", addresses_bot=True)
        await bot.platform.wait_for_sends(1)
        await bot.say("路过", chat=GROUP, sender_id="99")
        await bot.settle()
    assert bot.platform.texts() == ["一", "二"]


async def test_chatter_that_joined_the_batch_cancels_nothing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Bob's chatter joined the batch that answers Alice as context: his next line while
    the replies go out cancels none of them and is not answered as a follow-up."""
    llm.reply_json(replies_json("一", "二", delay=0.2))
    async with harness(tmp_path, llm) as bot:
        await bot.say("今天好热", chat=GROUP, sender_id="bob")
        await bot.say("小满在吗", chat=GROUP, sender_id="alice", addresses_bot=True)
        await bot.say("是啊", chat=GROUP, sender_id="bob")
        await bot.platform.wait_for_sends(1)
        await bot.say("我先走了", chat=GROUP, sender_id="bob")
        await bot.settle()
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    assert ("今天好热" in new, "是啊" in new) == (True, True)
    assert (bot.platform.texts(), len(llm.requests)) == (["一", "二"], 1)


async def test_a_busy_rooms_context_does_not_split_the_askers_batch(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With max_batch 3, Bob's five lines around Alice's question and her follow-up all go
    in her one batch: his words are context and count toward no cap, so neither is her
    wait cut short nor her follow-up left to a second batch."""
    llm.reply_json(replies_json("在的"))
    async with harness(tmp_path, llm, pacing={"max_batch": 3}) as bot:
        for text in ("一", "二"):
            await bot.say(f"Bob {text}", chat=GROUP, sender_id="bob")
        await bot.say("小满在吗", chat=GROUP, sender_id="alice", addresses_bot=True)
        for text in ("三", "四", "五"):
            await bot.say(f"Bob {text}", chat=GROUP, sender_id="bob")
        await bot.say("想问个事", chat=GROUP, sender_id="alice")
        await bot.settle()
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    assert [line.split(": ", 1)[1] for line in new.strip().splitlines()[1:]] == [
        "Bob 一",
        "Bob 二",
        "小满在吗",
        "Bob 三",
        "Bob 四",
        "Bob 五",
        "想问个事",
    ]
    assert (len(llm.requests), bot.platform.texts()) == (1, ["在的"])


async def test_max_batch_splits_a_flood(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Five messages with max_batch 3 are answered as a batch of three, then one of two."""
    async with harness(tmp_path, llm, pacing={"max_batch": 3}) as bot:
        for n in range(5):
            await bot.say(f"消息{n}")
        await bot.settle()
    assert len(llm.requests) == 2
    first, second = (user_prompt(r).split("New messages")[1] for r in llm.requests)
    assert ("消息0" in first, "消息2" in first, "消息3" in first) == (True, True, False)
    assert ("消息3" in second, "消息4" in second) == (True, True)


async def test_long_reply_is_split_at_the_platform_limit(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A reply longer than the platform limit is sent as several messages within it."""
    llm.reply_json(replies_json("长" * 250))
    async with harness(tmp_path, llm, platform=RecordingPlatform(text_limit=100)) as bot:
        await bot.say("说点长的")
        await bot.settle()
    assert [len(t) for t in bot.platform.texts()] == [100, 100, 50]


async def test_commands_skip_the_llm_and_the_timer(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/status is answered directly, is not stored as chat, and does not restart the wait."""
    pacing = {"debounce_min_s": 0.3, "debounce_max_s": 0.3}
    async with harness(tmp_path, llm, pacing=pacing, bot={"admins": ["test:7"]}) as bot:
        await bot.say("你好")
        await asyncio.sleep(0.15)
        # Loop timers fire in deadline order, however late: the wait that began with 你好
        # ends before this one, and a wait the command restarted would end after it.
        phase_then: list[Phase] = []
        asyncio.get_running_loop().call_later(
            0.3, lambda: phase_then.append(bot.ops.status.phase(PRIVATE))
        )
        await bot.say("/status", chat=PRIVATE)
        await llm.wait_for_requests(1)
        await wait_until(lambda: phase_then)
        await bot.settle()
    assert [phase is Phase.WAITING for phase in phase_then] == [False]
    status = bot.platform.texts()[0]
    assert "waiting messages: 1" in status
    assert "/status" not in user_prompt(llm.requests[0])


async def test_non_admin_command_is_refused(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A non-admin's /prompt gets a short refusal and reveals nothing."""
    async with harness(tmp_path, llm, bot={"admins": ["test:1"]}) as bot:
        refused = await bot.say("/prompt", sender_id="2")
        allowed = await bot.say("/prompt", sender_id="1")
        await bot.settle()
    answers = {s.reply_to: s.text for s in bot.platform.sent}
    assert answers[refused.message_id] == "Sorry, only admins can use that command."
    assert "system prompt of test:private:42" in answers[allowed.message_id]
    assert llm.requests == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "啊" * 100_000,
        "😀😂🎉",
        "\u202eمرحبا بالعالم\u202c",
        "{}%s{0}",
        "%(name)s {0!r}",
        "\x00\x07bin",
    ],
)
async def test_bad_input_is_answered_normally(
    tmp_path: Path, llm: FakeLLMServer, text: str
) -> None:
    """Empty, huge, emoji, RTL, format strings and control characters never break the chat."""
    async with harness(tmp_path, llm) as bot:
        await bot.say(text)
        await bot.say("正常消息")
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["好的"]
    assert "正常消息" in user_prompt(llm.requests[0])


async def test_duplicate_delivery_is_answered_once(tmp_path: Path, llm: FakeLLMServer) -> None:
    """The same platform message delivered twice is stored and answered once."""
    async with harness(tmp_path, llm) as bot:
        await bot.say("你好", message_id="77")
        await bot.say("你好", message_id="77")
        await bot.settle()
    assert user_prompt(llm.requests[0]).count("你好") == 1


async def test_rate_limit_is_honoured(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A RateLimited send waits retry_after and then goes out once."""
    platform = RecordingPlatform(failures=[RateLimited("slow down", retry_after_s=0.1)])
    async with harness(tmp_path, llm, platform=platform) as bot:
        await bot.say("hi")
        loop = asyncio.get_running_loop()
        asked = loop.time()
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["好的"]
    assert bot.platform.sent[0].at - asked >= 0.1


async def test_a_reply_sent_late_keeps_the_pause_before_the_next(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The first reply is held back 0.5 s by a rate limit; the second, planned 0.3 s after
    it, still comes 0.3 s after it went out, not at once on its heels."""
    llm.reply_json(replies_json("第一句", "第二句", delay=0.3))
    platform = RecordingPlatform(failures=[RateLimited("slow down", retry_after_s=0.5)])
    async with harness(tmp_path, llm, platform=platform) as bot:
        await bot.say("hi")
        await bot.platform.wait_for_sends(2)
    first, second = bot.platform.sent
    assert (first.text, second.text) == ("第一句", "第二句")
    assert second.at - first.at >= 0.29


async def test_chat_unavailable_drops_its_queue(tmp_path: Path, llm: FakeLLMServer) -> None:
    """When the bot was removed from a chat, its queued replies are dropped and nothing crashes."""
    llm.reply_json(replies_json("一", "二"))
    platform = RecordingPlatform(failures=[ChatUnavailable("kicked")])
    async with harness(tmp_path, llm, platform=platform) as bot:
        await bot.say("hi")
        await bot.settle()
        assert await bot.ops.status.queued_replies(PRIVATE) == 0
        await bot.say("我又把你加回来了")
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["好的"]


async def test_maybe_delivered_is_not_resent(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A send that timed out after leaving is never repeated; the next reply still goes."""
    llm.reply_json(replies_json("一", "二"))
    platform = RecordingPlatform(failures=[SendFailed("timed out", maybe_delivered=True)])
    async with harness(tmp_path, llm, platform=platform) as bot:
        await bot.say("hi")
        await bot.settle()
    assert bot.platform.texts() == ["二"]


async def test_typing_shows_while_the_llm_thinks_for_those_owed_an_answer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A private question shows typing during the LLM call; an unaddressed group batch does not."""
    llm.hang(0.1, content=json.dumps(replies_json("好的")))
    llm.hang(0.1, content=json.dumps({"replies": []}))
    smart = {"reply_mode": "smart", "talk_value": 1.0}
    async with harness(tmp_path, llm, groups=smart) as bot:
        await bot.say("在吗？")
        await bot.settle()
        private_typing = [t for chat, t in bot.platform.typing if chat == PRIVATE]
        await bot.say("有人一起聊聊吗？", chat=GROUP)
        await bot.settle()
    assert len(llm.requests) == 2
    assert len(private_typing) >= 3
    assert private_typing[-1] <= bot.platform.sent[0].at
    assert [chat for chat, _ in bot.platform.typing if chat == GROUP] == []


@pytest.mark.parametrize("ticks", range(5))
async def test_typing_stops_whenever_its_block_ends(store: SqliteStore, ticks: int) -> None:
    """Ending the block in any loop tick, even the one a typing call finishes in, stops
    the indicator at once; a lost cancel once kept a batch (and its chat) waiting forever."""

    platform = RecordingPlatform()

    async def think() -> None:
        async with sender_for(store, platform).typing(PRIVATE, platform):
            for _ in range(ticks):
                await asyncio.sleep(0)

    thinking = asyncio.create_task(think())
    done, _ = await asyncio.wait({thinking}, timeout=1.0)
    shown = len(platform.typing)
    await asyncio.sleep(5 * platform.typing_refresh_s)
    assert (thinking in done, len(platform.typing)) == (True, shown)


async def test_typing_costs_the_platform_no_more_requests_than_its_send_rate(
    store: SqliteStore,
) -> None:
    """Thirty chats typing at once show it at most ``overall_per_s`` times a second in all."""
    limits = PacingLimits(chat_interval_s=0.0, group_per_minute=1000, overall_per_s=10.0)
    platform = RecordingPlatform(typing_refresh_s=0.01, limits=limits)
    chats = [ChatKey("test", ChatKind.PRIVATE, str(n)) for n in range(30)]
    sender = sender_for(store, platform)
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as blocks:
        started = loop.time()
        for chat in chats:
            await blocks.enter_async_context(sender.typing(chat, platform))
        await asyncio.sleep(0.2)
        elapsed_s = loop.time() - started
    allowed = 10 + int(elapsed_s * 10.0)  # one second's burst, then the refill
    assert 10 <= len(platform.typing) <= allowed, (len(platform.typing), allowed)


async def test_cancelling_a_typing_block_cancels_its_task(store: SqliteStore) -> None:
    """A cancel that arrives while the block is winding up still reaches its task."""
    winding_up = asyncio.Event()

    class SlowToStop(RecordingPlatform):
        async def show_typing(self, chat: ChatKey, *, kind: ItemKind = ItemKind.CONTENT) -> None:
            await super().show_typing(chat)
            try:
                await asyncio.Event().wait()  # typing shows until cancelled
            except asyncio.CancelledError:
                winding_up.set()
                await asyncio.sleep(0.05)  # a request that takes a moment to abort
                raise

    platform = SlowToStop(typing_refresh_s=10.0)

    async def think() -> None:
        async with sender_for(store, platform).typing(PRIVATE, platform):
            await wait_until(lambda: platform.typing)

    thinking = asyncio.create_task(think())
    await winding_up.wait()
    thinking.cancel()
    done, _ = await asyncio.wait({thinking}, timeout=1.0)
    assert (thinking in done, thinking.cancelled()) == (True, True)


async def test_a_long_chat_fills_the_prompt_budget_with_its_recent_conversation(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Hundreds of messages back, the recent conversation still fills what the budget
    leaves, so a busy chat's prompt on its first day is as big as after a year."""
    budget = 6000
    async with harness(tmp_path, llm, memory={"context_budget_tokens": budget}) as bot:
        async with await SqliteStore.open(bot.config.database_path) as store:
            now = datetime.now(UTC)
            for n in range(800):
                old = bot.message(f"第{n}句：今天也很开心。", message_id=f"old-{n}")
                await store.add_message(old, received_at=now)
            batch = await store.open_batch(PRIVATE, limit=800, now=now)
            assert batch is not None
            await store.close_batch(batch.id, BatchOutcome.SILENT, now=now)
        await bot.say("还在吗？")
        await bot.platform.wait_for_sends(1)
    request = llm.requests[0]["messages"]
    tokens = estimate_prompt_tokens([ChatMessage(m["role"], m["content"]) for m in request])
    prompt = user_prompt(llm.requests[0])
    assert budget * 0.95 <= tokens <= budget
    assert "第799句" in prompt
    assert prompt.count("今天也很开心") > 250  # not cut at a fixed number of messages
    assert "第0句" not in prompt


def refuse_writes(path: Path) -> sqlite3.Connection:
    """Make the real database refuse new messages, as a full disk would."""
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON messages"
        " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    db.commit()
    return db


def stored_ids(path: Path) -> list[tuple[str, str]]:
    """Return the (chat key, message id) of every chatter's message in the database."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT chat_key, message_id FROM messages WHERE from_bot = 0 ORDER BY id"
        ).fetchall()
    return [(chat_key, message_id) for chat_key, message_id in rows]


async def test_messages_handed_over_together_are_stored_and_armed_together(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A page is stored once per message id, commands apart, and every chat waits for it."""
    async with harness(tmp_path, llm, pacing={"debounce_min_s": 60, "debounce_max_s": 60}) as bot:
        await bot.say("早", message_id="m-0")
        other = ChatKey("telegram", PRIVATE.kind, "8")
        page = [
            bot.message("在吗", message_id="m-1"),
            bot.message("早", message_id="m-0"),  # delivered again: stored before
            bot.message("你好", chat=other, sender_id="8", message_id="o-1"),
            bot.message("在吗", message_id="m-1"),  # twice in the same page
            bot.message("/status", message_id="m-2"),
            bot.message("明天见", message_id="m-3"),
        ]
        await bot.inbox.receive_many(page)
        waiting = [await waiting_in(bot, chat) for chat in (PRIVATE, other)]
        await bot.platform.wait_for_sends(1)  # the command's answer
        ids = stored_ids(bot.config.database_path)
    assert (ids, waiting) == (
        [(str(PRIVATE), "m-0"), (str(PRIVATE), "m-1"), (str(other), "o-1"), (str(PRIVATE), "m-3")],
        [(3, Phase.WAITING), (1, Phase.WAITING)],
    )


async def test_a_page_is_stored_all_or_none(tmp_path: Path, llm: FakeLLMServer) -> None:
    """While the database refuses one message of a page, none of it is stored; then all is."""
    quiet = {"debounce_min_s": 60, "debounce_max_s": 60, "max_wait_s": 60, "max_batch": 200}
    with captured_logs() as logs:
        async with harness(tmp_path, llm, pacing=quiet) as bot:  # no batch forms
            path = bot.config.database_path
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute(
                    "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.message_id = 'p-2'"
                    " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
                )
                db.commit()
            page = [bot.message(f"第{n}句", message_id=f"p-{n}") for n in range(150)]
            receiving = asyncio.create_task(bot.pipeline.receive_many(page))
            await wait_until(lambda: any("cannot store message" in line for line in logs))
            # In threads: the store's transaction goes on while these wait for its lock.
            held = await asyncio.to_thread(stored_ids, path)
            await asyncio.to_thread(drop_trigger, path, "refuse")
            await receiving
            stored = stored_ids(path)
            waiting = await waiting_in(bot, PRIVATE)
    assert (held, len(stored), len(set(stored)), waiting) == ([], 150, 150, (150, Phase.WAITING))


async def waiting_in(bot: Harness, chat: ChatKey) -> tuple[int, Phase]:
    """Return how many of ``chat``'s messages wait, and its phase, as ``/status`` reads them."""
    phase = bot.ops.status.phase(chat)
    return await bot.ops.status.waiting_messages(chat), phase


def sender_for(store: SqliteStore, platform: RecordingPlatform) -> Sender:
    """Return a sender of ``platform``'s chats on ``store``, as the pipeline is handed one."""
    return Sender(store, {platform.name: platform}, PacingConfig(), bot_name="小满", now=utc_now)


def drop_trigger(path: Path, name: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(f"DROP TRIGGER {name}")
        db.commit()


async def test_a_message_waits_out_a_failing_database(tmp_path: Path, llm: FakeLLMServer) -> None:
    """While writes fail the message is held and retried, not lost; once the database takes
    it again it is stored once and answered."""
    llm.reply_json(replies_json("在的"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm) as bot:
            with contextlib.closing(refuse_writes(bot.config.database_path)) as db:
                receiving = asyncio.create_task(
                    bot.pipeline.receive_many((bot.message("还在吗？"),))
                )
                await wait_until(lambda: sum("cannot store message" in line for line in logs) >= 2)
                assert not receiving.done()
                db.execute("DROP TRIGGER refuse")
                db.commit()
            await receiving
            await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["在的"]
    assert not logs.tracebacks()
    assert not any("lost" in line for line in logs)


async def test_a_message_the_database_never_takes_is_reported_lost(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Past ``store_patience_s`` the message is given up with an error naming it; the
    patience is per outage, so the next one only gets what is left of it; and the chat
    works again as soon as the database does."""
    llm.reply_json(replies_json("好了"))
    with captured_logs() as logs:
        async with harness(tmp_path, llm, retries=Retries(store_patience_s=0.5)) as bot:
            with contextlib.closing(refuse_writes(bot.config.database_path)) as db:
                await bot.pipeline.receive_many((bot.message("第一句", message_id="m-1"),))
                await bot.pipeline.receive_many((bot.message("第二句", message_id="m-2"),))
                db.execute("DROP TRIGGER refuse")
                db.commit()
            await bot.say("第三句", message_id="m-3")
            await bot.platform.wait_for_sends(1)
    lost = [line for line in logs if "lost" in line]
    assert [line.startswith("ERROR ") for line in lost] == [True, True]
    assert lost[0].endswith(
        "message m-1 lost, it could not be stored: database "
        f"{bot.config.database_path}: database or disk is full"
    )
    assert "message m-2 lost" in lost[1]
    tries = [
        sum(f"cannot store message {message_id} " in line for line in logs)
        for message_id in ("m-1", "m-2")
    ]
    # m-1 retried through the outage's 0.5 s; m-2 got what was left of it: one try, no wait.
    assert (tries[0] >= 2, tries[1]) == (True, 1)
    assert ("第一句" in user_prompt(llm.requests[0]), "第三句" in user_prompt(llm.requests[0])) == (
        False,
        True,
    )
    assert bot.platform.texts() == ["好了"]


async def test_group_follow_up_from_the_person_answered_is_answered(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """In a group, the person being answered writes again without naming the bot: the
    unsent replies are cancelled and the follow-up is answered, told what was unsaid."""
    llm.reply_json(replies_json("一", "二", "三", delay=0.3))
    llm.reply_json(replies_json("那就不讲了"))
    async with harness(tmp_path, llm) as bot:
        await bot.say("小满讲个故事", chat=GROUP, sender_id="1", addresses_bot=True)
        await bot.platform.wait_for_sends(1)
        await bot.say("算了不用了", chat=GROUP, sender_id="1")
        await bot.settle()
    assert bot.platform.texts() == ["一", "那就不讲了"]
    assert "- 二\n- 三" in user_prompt(llm.requests[1])
    assert "算了不用了" in user_prompt(llm.requests[1]).split("New messages")[1]


async def test_group_follow_up_while_it_thinks_is_answered_and_a_bystander_is_not(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """In a group, a bystander writing while the bot thinks changes nothing; the person
    it is answering writing again (without naming it) is answered next, told the rest."""
    thinking(llm, "一", "二", "三")
    async with harness(tmp_path, llm) as bot:
        await bot.say("小满讲个故事", chat=GROUP, sender_id="1", addresses_bot=True)
        await llm.wait_for_requests(1)
        await bot.say("路过", chat=GROUP, sender_id="99")
        await bot.settle()
        bystander = bot.platform.texts(GROUP)
        thinking(llm, "四", "五")
        llm.reply_json(replies_json("那就不讲了"))
        await bot.say("小满再讲一个", chat=GROUP, sender_id="1", addresses_bot=True)
        await llm.wait_for_requests(2)
        await bot.say("算了", chat=GROUP, sender_id="1")
        await bot.settle()
    assert bystander == ["一", "二", "三"]
    assert bot.platform.texts(GROUP)[3:] == ["四", "那就不讲了"]
    assert "- 五" in user_prompt(llm.requests[2])
    assert len(llm.requests) == 3


async def test_each_chat_phase_is_live_and_a_quiet_chat_is_forgotten(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The pipeline shows each chat waiting, thinking and sending as it happens, and keeps
    nothing of a chat (not even its title) once its replies are out."""
    thinking(llm, "一", "二")
    async with harness(tmp_path, llm) as bot:
        await bot.say("小满在吗", chat=GROUP, addresses_bot=True, chat_title="爬山群")
        waiting = bot.ops.status.live_chats()
        await llm.wait_for_requests(1)
        thought = bot.ops.status.phase(GROUP)
        await bot.platform.wait_for_sends(1)
        sent = bot.ops.status.phase(GROUP)
        await bot.settle()
        await wait_until(lambda: not bot.ops.status.live_chats())
        after = (bot.ops.status.phase(GROUP), bot.ops.status.live_chats())
    assert (waiting, thought, sent, after) == (
        {GROUP: Phase.WAITING},
        Phase.THINKING,
        Phase.SENDING,
        (Phase.IDLE, {}),
    )


@dataclass
class BackAtOnce(RecordingPlatform):
    """A platform that says it is back right after a send failed, while that is recorded."""

    pipeline: Pipeline | None = None

    async def send(
        self, chat: ChatKey, item: Outgoing, *, answers: str | None = None
    ) -> str | None:
        if self.failures and self.pipeline is not None:
            asyncio.get_running_loop().call_soon(self.pipeline.platform_ready, self.name)
        return await super().send(chat, item)


async def test_a_platform_back_while_a_failed_send_is_recorded_is_not_missed(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """The platform comes back while the outbox still records the failed send: the reply
    goes out at once, not after the back-off (here 10 s)."""
    llm.reply_json(replies_json("在的"))
    platform = BackAtOnce(failures=[SendFailed("down", maybe_delivered=False)])
    long_back_off = Retries(send_wait_initial_s=10.0)
    async with harness(tmp_path, llm, platform=platform, retries=long_back_off) as bot:
        platform.pipeline = bot.pipeline
        await bot.say("在吗")
        await platform.wait_for_sends(1, within_s=2.0)
    assert platform.texts() == ["在的"]


async def test_a_store_failing_while_answering_fails_the_batch_without_a_traceback(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A database error while the prompt is built (a table gone) is the store's trouble,
    not a bug: the batch fails with the store's words in one warning, no traceback, no
    call, and the chat answers again once the store is whole."""
    with captured_logs() as logs:
        async with harness(tmp_path, llm) as bot:
            path = bot.config.database_path
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("ALTER TABLE person_facts RENAME TO person_facts_away")
                db.commit()
            await bot.say("在吗")
            await bot.settle()
            failed_calls = len(llm.requests)
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("ALTER TABLE person_facts_away RENAME TO person_facts")
                db.commit()
            await bot.say("还在吗")
            await bot.platform.wait_for_sends(1)
    failures = logs.about("answering failed")
    assert (failed_calls, len(llm.requests), len(failures)) == (0, 1, 1)
    assert failures[0].startswith("WARNING answering failed: ")
    assert "person_facts" in failures[0]
    assert logs.tracebacks() == []
