"""Restart: waiting messages get a fresh debounce, fresh replies are sent, none twice."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite

from bot.models import BatchOutcome, ChatKey, ChatKind, IncomingMessage
from bot.replies.items import PlannedReply, Text
from fakes.harness import PRIVATE, harness, make_config, replies_json, user_prompt, wait_waiting
from fakes.openai_api import FakeLLMServer
from storage.sqlite import SqliteStore


def incoming(n: int, text: str) -> IncomingMessage:
    return IncomingMessage(
        chat=PRIVATE,
        message_id=str(n),
        sender_id="7",
        sender_name="小明",
        text=text,
        sent_at=datetime.now(UTC),
        addresses_bot=True,
    )


async def outbox_states(path: Path) -> list[tuple[str, str]]:
    async with aiosqlite.connect(path) as db:
        cursor = await db.execute("SELECT content, state FROM outbox ORDER BY id")
        return [(str(c), str(s)) for c, s in await cursor.fetchall()]


async def test_waiting_messages_are_answered_after_restart(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Messages stored before a crash are answered once, in one batch, after the restart."""
    config = make_config(tmp_path, llm.base_url)
    async with await SqliteStore.open(config.database_path) as store:
        for n, text in enumerate(["在吗", "问你个事"], start=1):
            await store.add_message(incoming(n, text), received_at=datetime.now(UTC))
    async with harness(tmp_path, llm, config=config) as bot:
        await wait_waiting(bot.core, PRIVATE, 2)
        await bot.platform.wait_for_sends(1)
    assert len(llm.requests) == 1
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    assert ("在吗" in new, "问你个事" in new) == (True, True)


async def test_batch_interrupted_mid_answer_is_answered_again(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A batch left open by a crash during the LLM call is abandoned and its messages answered."""
    config = make_config(tmp_path, llm.base_url)
    async with await SqliteStore.open(config.database_path) as store:
        await store.add_message(incoming(1, "你好"), received_at=datetime.now(UTC))
        batch = await store.open_batch(PRIVATE, limit=30, now=datetime.now(UTC))
        assert batch is not None
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.platform.wait_for_sends(1)
    assert "你好" in user_prompt(llm.requests[0]).split("New messages")[1]


async def test_outbox_after_restart(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Fresh queued replies are sent, stale ones dropped, one caught mid-send not resent."""
    config = make_config(tmp_path, llm.base_url, pacing={"stale_after_s": 60.0})
    now = datetime.now(UTC)
    async with await SqliteStore.open(config.database_path) as store:
        await store.add_message(incoming(1, "讲讲"), received_at=now)
        batch = await store.open_batch(PRIVATE, limit=30, now=now)
        assert batch is not None
        items = await store.close_batch(
            batch.id,
            BatchOutcome.ANSWERED,
            now=now,
            replies=[
                PlannedReply(Text("过期的"), now - timedelta(minutes=5)),
                PlannedReply(Text("发送中的"), now - timedelta(seconds=1)),
                PlannedReply(Text("新鲜的"), now),
            ],
        )
        assert await store.claim_for_sending(items[1].id, now=now)  # the crash hits mid-send
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.platform.wait_for_sends(1)
        await bot.settle()
    assert bot.platform.texts() == ["新鲜的"]
    assert await outbox_states(config.database_path) == [
        ("过期的", "dropped"),
        ("发送中的", "dropped"),
        ("新鲜的", "sent"),
    ]
    assert llm.requests == []


async def test_stop_keeps_unanswered_messages_for_next_start(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Stopping while a chat waits answers nothing now, and the next start answers it once."""
    config = make_config(
        tmp_path, llm.base_url, pacing={"debounce_min_s": 5.0, "debounce_max_s": 5.0}
    )
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.say("还没回答的消息")
    assert llm.requests == []
    fast = make_config(tmp_path, llm.base_url)
    async with harness(tmp_path, llm, config=fast) as bot:
        await bot.platform.wait_for_sends(1)
        await bot.settle()
    assert len(llm.requests) == 1
    assert bot.platform.texts() == ["好的"]


async def test_stop_during_llm_call_answers_after_restart(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Stopping mid-call leaves no half batch: the messages are answered on the next start."""
    llm.hang(5.0, content='{"replies": [{"content": "迟到的", "send_delay_seconds": 0}]}')
    llm.reply_json(replies_json("重启后的回答"))
    config = make_config(tmp_path, llm.base_url, llm={"timeout_s": 10.0})
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.say("问题")
        await llm.wait_for_requests(1)
    assert bot.platform.sent == []
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.platform.wait_for_sends(1)
    assert bot.platform.texts() == ["重启后的回答"]


async def test_messages_of_a_platform_that_is_off_keep_waiting(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Waiting messages of a platform not running this time are neither answered nor failed."""
    config = make_config(tmp_path, llm.base_url)
    elsewhere = ChatKey("qq", ChatKind.PRIVATE, "9")
    async with await SqliteStore.open(config.database_path) as store:
        message = replace(incoming(1, "QQ 上的消息"), chat=elsewhere)
        await store.add_message(message, received_at=datetime.now(UTC))
    async with harness(tmp_path, llm, config=config) as bot:
        await bot.settle()
    async with await SqliteStore.open(config.database_path) as store:
        assert await store.waiting_counts() == {elsewhere: 1}
    assert llm.requests == []
