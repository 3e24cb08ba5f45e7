"""pacebot on Telegram end to end: real PTB ↔ fake Bot API, real openai SDK ↔ fake LLM, SQLite."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from bot.models import ChatKey, ChatKind
from fakes.bot_api import FakeBotAPI
from fakes.harness import replies_json, telegram_bot, telegram_config, user_prompt, wait_waiting
from fakes.openai_api import FakeLLMServer

GROUP_ID = -100777
GROUP = ChatKey("telegram", ChatKind.GROUP, str(GROUP_ID))
ALICE, BOB = 1001, 1002


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [m["text"] for m in api.sent_messages(chat_id)]


async def test_private_burst_one_call_paced_replies_with_typing(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A 3-message burst → one LLM call with all three → replies in order, typing in
    between, and never two messages to one chat within a second (Telegram's limit)."""
    llm.reply_json(replies_json("在的", "爬山好呀", "几点出发？", delay=0.15))
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        for text in ("在吗", "周末想去爬山", "你去不去"):
            api.push_message(ALICE, text)
        await api.wait_for("sendMessage", count=3, timeout=5)
        await core.inbox.drain()
    assert len(llm.requests) == 1
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    assert [line.split(": ", 1)[1] for line in new.strip().splitlines()[1:]] == [
        "在吗",
        "周末想去爬山",
        "你去不去",
    ]
    assert texts(api, ALICE) == ["在的", "爬山好呀", "几点出发？"]
    methods = [c.method for c in api.calls if c.method in {"sendMessage", "sendChatAction"}]
    first = methods.index("sendMessage")
    assert "sendChatAction" in methods[first : methods.index("sendMessage", first + 1)]
    assert api.chat_actions(ALICE)[0] == "typing"
    sends = [c.at for c in api.calls if c.method == "sendMessage"]
    assert min(later - earlier for earlier, later in itertools.pairwise(sends)) >= 0.95


async def test_group_mention_rules_and_quotes(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Unaddressed group chatter is context only; an @-mention is answered with a quote."""
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        api.push_message(
            GROUP_ID,
            "今天好热",
            user_id=BOB,
            first_name="Bob",
            chat_type="supergroup",
            title="爬山群",
        )
        await wait_waiting(core, GROUP, 1)
        await core.inbox.drain()
        assert llm.requests == []
        asked = api.push_message(
            GROUP_ID,
            f"@{api.bot_username} 周六去哪？",
            user_id=ALICE,
            chat_type="supergroup",
            title="爬山群",
        )
        llm.reply_json(
            {"replies": [{"content": "去香山吧", "send_delay_seconds": 0, "reply_to": str(asked)}]}
        )
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    prompt = user_prompt(llm.requests[0])
    assert "Bob: 今天好热" in prompt.split("New messages")[0]
    assert "爬山群" in llm.requests[0]["messages"][0]["content"]
    sent = api.calls_to("sendMessage")[0]
    assert (sent["text"], sent["reply_parameters"]["message_id"]) == ("去香山吧", asked)


async def test_reply_to_the_bot_addresses_it(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Replying to one of the bot's group messages counts as addressing it."""
    llm.reply_json(replies_json("第一次"))
    llm.reply_json(replies_json("第二次"))
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        api.push_message(GROUP_ID, "小满 你好", chat_type="group")
        await api.wait_for("sendMessage", timeout=5)
        bot_message = api.sent_messages(GROUP_ID)[0]["message_id"]
        api.push_message(GROUP_ID, "真的吗", chat_type="group", user_id=BOB, reply_to=bot_message)
        await api.wait_for("sendMessage", count=2, timeout=5)
        await core.inbox.drain()
    assert texts(api, GROUP_ID) == ["第一次", "第二次"]


async def test_edit_and_placeholders(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI) -> None:
    """A photo becomes a placeholder; an edit updates the text and starts no second answer."""
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        first = api.push_message(ALICE, "明天下鱼")
        api.push_message(
            ALICE,
            extra={
                "photo": [{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}],
                "caption": "看这个",
            },
        )
        api.push_message(ALICE, extra={"sticker": _sticker("😀")})
        api.push_edit(first, "明天下雨")
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert len(llm.requests) == 1
    new = user_prompt(llm.requests[0]).split("New messages")[1]
    assert "明天下雨" in new
    assert "明天下鱼" not in new
    assert "[photo] 看这个" in new
    assert "[sticker 😀]" in new


def _sticker(emoji: str) -> dict[str, Any]:
    return {
        "file_id": "s",
        "file_unique_id": "su",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
        "type": "regular",
        "emoji": emoji,
    }


async def test_telegram_faults(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI) -> None:
    """429 is waited out, a vanished quote is sent without it, and a kicked chat stops cleanly."""
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        api.fail_next(
            "sendMessage", status=429, description="Too Many Requests: retry after 1", retry_after=1
        )
        asked = api.push_message(ALICE, "在吗")
        llm.reply_json(
            {"replies": [{"content": "在", "send_delay_seconds": 0, "reply_to": str(asked)}]}
        )
        await api.wait_for(lambda: texts(api, ALICE) == ["在"], timeout=5)
        attempts = len(api.calls_to("sendMessage"))
        api.fail_next(
            "sendMessage", status=400, description="Bad Request: message to be replied not found"
        )
        again = api.push_message(ALICE, "再问一次")
        llm.reply_json(
            {"replies": [{"content": "好", "send_delay_seconds": 0, "reply_to": str(again)}]}
        )
        await api.wait_for(lambda: texts(api, ALICE) == ["在", "好"], timeout=5)
        api.block_chat(BOB)
        api.push_message(BOB, "hi", user_id=BOB)
        llm.reply_json(replies_json("一", "二"))
        await api.wait_for(lambda: len(api.calls_to("sendMessage")) >= attempts + 3, timeout=5)
        await core.inbox.drain()
    calls = api.calls_to("sendMessage")
    assert attempts == 2  # the 429, then the retry
    assert ("reply_parameters" in calls[-3], "reply_parameters" in calls[-2]) == (True, False)
    assert len(calls) == attempts + 3  # Bob's second reply was dropped, never tried
    assert texts(api, BOB) == []


async def test_command_menu_is_published_to_admins_only(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Once polling runs, the admin command menu is set for each Telegram admin's chat only."""
    config = telegram_config(tmp_path, llm, api, bot={"admins": ["telegram:1001", "qq:5"]})
    async with telegram_bot(config, api):
        [call] = await api.wait_for("setMyCommands", timeout=5)
    assert call["scope"] == {"type": "chat", "chat_id": 1001}
    assert [c["command"] for c in call["commands"]] == [
        "help",
        "summary",
        "pop",
        "prompt",
        "recall",
        "status",
        "people",
        "facts",
        "forget",
        "forgetme",
        "trace",
        "stickers",
        "sticker",
        "later",
        "quiet",
        "bot",
        "tools",
        "whoami",
    ]
