"""Stickers over the real wires: collected from the chat, offered by id, sent back by
Telegram ``file_id``, banned, evicted, captioned from what the model saw, never crossing
chats."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from adapters.app import Core, running_bot
from bot.config import Config
from bot.models import ChatKey, ChatKind
from bot.replies.contract import STICKER_CONTRACT
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI, sticker
from fakes.harness import TEST_KEY, telegram_config
from fakes.images import jpeg
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

ALICE, ADMIN = 1001, 7
GROUP_A, GROUP_B = -100501, -100502
ON = {"enabled": True}


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def system_prompt(llm: FakeLLMServer, index: int = -1) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


def config_with(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, **stickers: Any) -> Config:
    return telegram_config(
        tmp_path,
        llm,
        api,
        stickers={**ON, **stickers},
        bot={"admins": [f"telegram:{ADMIN}"]},
    )


@contextlib.asynccontextmanager
async def telegram_bot(config: Config, api: FakeBotAPI) -> AsyncIterator[Core]:
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    async with running_bot(config, secrets, telegram_poll_timeout_s=0.1) as core:
        await api.wait_for("getUpdates")
        yield core


async def command(api: FakeBotAPI, core: Core, chat_id: int, text: str) -> str:
    """Send a command as the admin in ``chat_id``; return the bot's answer."""
    before = len(api.sent_messages(chat_id))
    chat_type = "private" if chat_id > 0 else "supergroup"
    api.push_message(chat_id, text, user_id=ADMIN, chat_type=chat_type)
    await api.wait_for(lambda: len(api.sent_messages(chat_id)) > before, timeout=5)
    await core.inbox.drain()
    return str(api.sent_messages(chat_id)[before]["text"])


async def collected(core: Core, chat: ChatKey, count: int) -> None:
    """Wait until ``chat``'s collection holds ``count`` stickers."""
    async with asyncio.timeout(5):
        while len(await core.ops.stickers.collection(chat)) != count:  # noqa: ASYNC110 - polls the store
            await asyncio.sleep(0.01)


async def test_a_sticker_sent_in_the_chat_is_sent_back_by_its_id(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Alice's sticker joins the chat's collection (captioned with its emoji and set); the
    next prompt offers it as s<id> with the sticker line of the contract; the model's
    {"sticker": id} goes out as sendSticker with the same file_id, one call, and /stickers
    counts it sent."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    async with telegram_bot(config, api) as core:
        llm.reply_json(plan({"content": "哈哈"}))
        api.push_message(ALICE, extra=sticker("😹", set_name="Cats"))
        await api.wait_for("sendMessage", timeout=5)
        await collected(core, chat, 1)
        [kept] = await core.ops.stickers.collection(chat)
        api.push_message(ALICE, "你也发一个")
        llm.reply_json(plan({"sticker": kept.label}))
        [sent] = await api.wait_for("sendSticker", timeout=5)
        await core.inbox.drain()
        listing = await command(api, core, ALICE, "/stickers")
    assert (kept.caption, kept.file_ref) == ("😹 Cats", "sticker-1")
    assert (sent["sticker"], sent["chat_id"]) == ("sticker-1", ALICE)
    assert f"[{kept.label}] 😹 Cats" in system_prompt(llm)
    assert STICKER_CONTRACT.strip() in system_prompt(llm)
    assert listing.splitlines()[1:] == [f"{kept.label} · 😹 Cats · sent 1×"]
    assert len(llm.requests) == 2


async def test_a_banned_sticker_is_never_offered_sent_or_kept_again(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """/sticker ban takes a sticker out of the prompt; the model naming it anyway sends
    nothing; the same sticker sent again is not collected again; an unknown id is said so."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    with captured_logs() as logs:
        async with telegram_bot(config, api) as core:
            llm.reply_json(plan({"content": "好"}))
            api.push_message(ALICE, extra=sticker("😀"))
            await api.wait_for("sendMessage", timeout=5)
            await collected(core, chat, 1)
            [kept] = await core.ops.stickers.collection(chat)
            banned = await command(api, core, ALICE, f"/sticker ban {kept.label}")
            unknown = await command(api, core, ALICE, "/sticker ban s999")
            llm.reply_json(plan({"sticker": kept.label}, {"content": "嗯"}))
            api.push_message(ALICE, extra=sticker("😀"))
            await api.wait_for(lambda: len(llm.requests) == 2, timeout=5)
            await core.inbox.drain()
            after = await core.ops.stickers.collection(chat)
    assert banned.startswith(f"Banned sticker {kept.label} (😀)")
    assert unknown.startswith("There is no sticker s999 to ban")
    assert api.calls_to("sendSticker") == []
    assert f"[{kept.label}]" not in system_prompt(llm)
    assert [(s.label, s.banned) for s in after] == [(kept.label, True)]
    assert [line for line in logs if "dropped" in line and "sticker" in line] != []


async def test_a_collection_keeps_the_most_recently_used(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With max_per_chat 3, five different stickers leave the three newest; the same one
    sent twice is kept once."""
    chat = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    config = config_with(tmp_path, llm, api, max_per_chat=3)
    async with telegram_bot(config, api) as core:
        for number in (1, 2, 3, 2, 4, 5):
            api.push_message(GROUP_A, extra=sticker("😀", number=number), chat_type="supergroup")
        await collected(core, chat, 3)
        kept = await core.ops.stickers.collection(chat)
    assert sorted(s.file_ref for s in kept) == ["sticker-2", "sticker-4", "sticker-5"]


async def test_a_chats_stickers_never_reach_another_chat(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A sticker collected in group A is not offered in group B (scope "chat"), and the
    model naming it there sends nothing."""
    config = config_with(tmp_path, llm, api)
    group_a = ChatKey("telegram", ChatKind.GROUP, str(GROUP_A))
    async with telegram_bot(config, api) as core:
        api.push_message(GROUP_A, extra=sticker("🐱", number=9), chat_type="supergroup")
        await collected(core, group_a, 1)
        [canary] = await core.ops.stickers.collection(group_a)
        llm.reply_json(plan({"sticker": canary.label}, {"content": "在"}))
        api.push_message(
            GROUP_B, f"@{api.bot_username} 在吗", user_id=ALICE, chat_type="supergroup"
        )
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert "🐱" not in system_prompt(llm)
    assert STICKER_CONTRACT.strip() not in system_prompt(llm)
    assert api.calls_to("sendSticker") == []


async def test_the_models_note_on_a_sticker_becomes_its_caption(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With vision on, a static sticker is shown to the model in the batch's one call, and
    the image note it writes about it replaces the emoji caption; no extra call is made."""
    chat = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
    config = config_with(tmp_path, llm, api)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"vision": True})})
    api.add_file("sticker-1", jpeg(64, 64))
    async with telegram_bot(config, api) as core:
        message_id = api.push_message(ALICE, extra=sticker("😳"))
        llm.reply_json(
            {
                "replies": [{"content": "哈哈"}],
                "image_notes": {str(message_id): "一只震惊的猫"},
            }
        )
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        await collected(core, chat, 1)
        [kept] = await core.ops.stickers.collection(chat)
    assert (kept.caption, len(llm.requests), len(llm.image_urls(0))) == ("一只震惊的猫", 1, 1)
