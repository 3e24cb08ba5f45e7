"""Telegram forum topics over the wire (PTB ↔ fake Bot API, openai SDK ↔ fake LLM, SQLite).

Each topic is a conversation of its own, answered in its own thread: texts, typing,
stickers and command answers. The General topic is the group itself. A topic Telegram has
lost still gets its words into the group. The group's people and stickers belong to the
whole group, whichever topic they were met in. An admin in a private chat can aim a
command at a topic by its chat key.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from adapters.app import Core
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from fakes.bot_api import FakeBotAPI, sticker
from fakes.harness import replies_json, telegram_bot, telegram_config, user_prompt, wait_waiting
from fakes.openai_api import FakeLLMServer
from tests.log_capture import captured_logs

FORUM = -100900
ROOM = ChatKey("telegram", ChatKind.GROUP, str(FORUM))
ALICE, BOB, ADMIN = 1001, 1002, 7


def topic_chat(thread: int) -> ChatKey:
    return ChatKey("telegram", ChatKind.GROUP, str(FORUM), str(thread))


def forum_config(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, **sections: Any) -> Config:
    return telegram_config(tmp_path, llm, api, bot={"admins": [f"telegram:{ADMIN}"]}, **sections)


def ask(api: FakeBotAPI, text: str, *, topic: int | None, user_id: int = ALICE) -> int:
    """Push ``text`` into the forum (into ``topic``, or the General topic)."""
    return api.push_message(FORUM, text, user_id=user_id, chat_type="supergroup", topic=topic)


async def answer(api: FakeBotAPI, core: Core, text: str, *, topic: int, user_id: int) -> str:
    """Push ``text`` into ``topic`` and return the bot's next message there."""
    before = len(api.sent_messages(FORUM))
    ask(api, text, topic=topic, user_id=user_id)
    await api.wait_for(lambda: len(api.sent_messages(FORUM)) > before, timeout=5)
    await core.inbox.drain()
    sent = api.sent_messages(FORUM)[before]
    assert sent.get("message_thread_id") == topic
    return str(sent["text"])


async def test_each_topic_is_its_own_conversation_answered_in_its_thread(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A question in one topic is answered there, with typing there; the next topic's
    prompt holds none of the first's words; the General topic is answered without a
    thread, although its replies carry one."""
    llm.reply_json(replies_json("香山吧"))
    llm.reply_json(replies_json("周五晚上"))
    llm.reply_json(replies_json("在"))
    async with telegram_bot(forum_config(tmp_path, llm, api), api) as core:
        hiking = api.open_topic(FORUM, "Hiking")
        games = api.open_topic(FORUM, "Games")
        ask(api, f"@{api.bot_username} 周六去哪爬山？", topic=hiking)
        await api.wait_for("sendMessage", timeout=5)
        ask(api, f"@{api.bot_username} 什么时候开黑", topic=games, user_id=BOB)
        await api.wait_for("sendMessage", count=2, timeout=5)
        bots_last = api.sent_messages(FORUM)[-1]
        # A reply in General carries a thread id of its own; it is no topic.
        general_reply = {"message_thread_id": bots_last["message_id"]}
        api.push_message(
            FORUM,
            f"@{api.bot_username} 还在吗",
            chat_type="supergroup",
            reply_to=bots_last["message_id"],
            extra=general_reply,
        )
        await api.wait_for("sendMessage", count=3, timeout=5)
        await core.inbox.drain()
        traces = await core.ops.traces.recent(topic_chat(games), count=5)
    hiking_reply, games_reply, general = api.sent_messages(FORUM)
    assert (hiking_reply["text"], hiking_reply["message_thread_id"]) == ("香山吧", hiking)
    assert (games_reply["text"], games_reply["message_thread_id"]) == ("周五晚上", games)
    assert general["text"] == "在"
    assert api.calls_to("sendMessage")[2].get("message_thread_id") is None
    assert "周六去哪爬山" in user_prompt(llm.requests[0])
    assert "周六去哪爬山" not in user_prompt(llm.requests[1])
    typing_threads = {call.get("message_thread_id") for call in api.calls_to("sendChatAction")}
    assert {hiking, games} <= typing_threads
    [shown] = traces
    assert (shown.trace.chat, [fate.content for fate in shown.fates]) == (
        topic_chat(games),
        ["周五晚上"],
    )


async def test_stickers_commands_and_reactions_stay_in_the_topic(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A sticker met in one topic is the group's: offered and sent in another topic, into
    that topic's thread, beside a reaction; /stickers is answered in its topic."""
    config = forum_config(tmp_path, llm, api, stickers={"enabled": True})
    async with telegram_bot(config, api) as core:
        cats = api.open_topic(FORUM, "Cats")
        chatter = api.open_topic(FORUM, "Chatter")
        api.push_message(
            FORUM, chat_type="supergroup", topic=cats, extra=sticker("😹", set_name="Cats")
        )
        async with asyncio.timeout(5):
            while not await core.ops.stickers.collection(topic_chat(chatter)):  # noqa: ASYNC110 - polls the store
                await asyncio.sleep(0.01)
        [kept] = await core.ops.stickers.collection(ROOM)
        asked = ask(api, f"@{api.bot_username} 来个表情", topic=chatter)
        llm.reply_json({"replies": [{"react": "👍", "to": str(asked)}, {"sticker": kept.label}]})
        await api.wait_for("sendSticker", timeout=5)
        await core.inbox.drain()
        listing = await answer(api, core, "/stickers", topic=chatter, user_id=ADMIN)
    [sent] = api.calls_to("sendSticker")
    assert (sent["sticker"], sent["message_thread_id"]) == ("sticker-1", chatter)
    assert api.reactions == [(FORUM, asked, ["👍"])]
    assert kept.label in listing
    assert f"[{kept.label}]" in str(llm.requests[0]["messages"][0]["content"])


async def test_a_topic_telegram_lost_still_gets_its_words_into_the_group(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Telegram answers "message thread not found" for a deleted topic: the reply goes to
    the group instead, quoting its question, and a warning names the topic."""
    async with telegram_bot(forum_config(tmp_path, llm, api), api) as core:
        doomed = api.open_topic(FORUM, "Doomed")
        asked = ask(api, f"@{api.bot_username} 在吗", topic=doomed)
        llm.reply_json(
            {"replies": [{"content": "在呢", "send_delay_seconds": 0, "reply_to": str(asked)}]}
        )
        api.delete_topic(FORUM, doomed)
        with captured_logs() as logs:
            await api.wait_for(lambda: api.sent_messages(FORUM), timeout=5)
            await core.inbox.drain()
    [refused, delivered] = api.calls_to("sendMessage")
    assert refused["message_thread_id"] == doomed
    assert delivered.get("message_thread_id") is None
    [sent] = api.sent_messages(FORUM)
    assert (sent["text"], sent["reply_to_message"]["message_id"]) == ("在呢", asked)
    assert logs.about("cannot find topic") == [
        f"WARNING Telegram cannot find topic {doomed}; posting to the group instead"
    ]


async def test_the_groups_people_are_shared_by_its_topics(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Facts learned from one topic's summary show in another topic's prompt; /forgetme
    in another topic forgets them for the whole group."""
    async with telegram_bot(forum_config(tmp_path, llm, api), api) as core:
        pets = api.open_topic(FORUM, "Pets")
        food = api.open_topic(FORUM, "Food")
        ask(api, "我对花生过敏", topic=pets)
        ask(api, "我家有两只猫", topic=pets, user_id=BOB)
        await wait_waiting(core, topic_chat(pets), 2)
        await core.inbox.drain()
        people = [
            {"user_id": str(ALICE), "facts": ["CANARY-ALICE 对花生过敏"]},
            {"user_id": str(BOB), "facts": ["CANARY-BOB 养了两只猫"]},
        ]
        summary = {"summary": "聊了宠物和吃的。", "topics": [], "key_points": []}
        llm.reply(json.dumps({**summary, "keywords": [], "people": people}, ensure_ascii=False))
        await core.ops.memory.summarise(topic_chat(pets), core.ops.memory.today(), by="test")
        forgot = await answer(api, core, "/forgetme", topic=food, user_id=BOB)
        llm.reply_json(replies_json("好的"))
        await answer(api, core, f"@{api.bot_username} 今天吃什么", topic=food, user_id=ALICE)
        people = await core.ops.memory.people(topic_chat(pets))
    system = str(llm.requests[-1]["messages"][0]["content"])
    assert forgot.startswith("Forgot 1 fact(s) about you in this chat;")
    assert "CANARY-ALICE 对花生过敏" in system
    assert "CANARY-BOB" not in system
    assert [person.user_id for person in people] == [str(ALICE)]


async def test_a_reminder_goes_back_to_the_topic_it_was_asked_in(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Asked in a topic for a reminder a second away: it is kept for that topic, and
    arrives once, in that topic's thread."""
    llm.reply_json(
        {
            "replies": [
                {"content": "好，一会儿提醒你"},
                {"later": {"in_seconds": 1, "note": "提醒报名", "kind": "remind"}},
            ]
        }
    )
    llm.reply_json(replies_json("该报名啦"))
    async with telegram_bot(forum_config(tmp_path, llm, api), api) as core:
        signups = api.open_topic(FORUM, "Sign-ups")
        await answer(api, core, "小满 一秒后提醒我报名", topic=signups, user_id=ALICE)
        [item] = await core.ops.initiative.pending(topic_chat(signups))
        await api.wait_for(lambda: len(api.sent_messages(FORUM)) >= 2, timeout=5)
        await core.inbox.drain()
        await asyncio.sleep(0.3)
    reminder = api.sent_messages(FORUM)[1]
    assert (item.chat, item.asker_id) == (topic_chat(signups), str(ALICE))
    assert (reminder["text"], reminder.get("message_thread_id")) == ("该报名啦", signups)
    assert len(api.sent_messages(FORUM)) == 2


async def ask_privately(api: FakeBotAPI, core: Core, text: str, *, user_id: int) -> str:
    """Push ``text`` into ``user_id``'s private chat with the bot; return the bot's answer."""
    before = len(api.sent_messages(user_id))
    api.push_message(user_id, text, user_id=user_id)
    await api.wait_for(lambda: len(api.sent_messages(user_id)) > before, timeout=5)
    await core.inbox.drain()
    return str(api.sent_messages(user_id)[before]["text"])


async def test_an_admin_in_a_private_chat_aims_commands_at_a_topic(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """From a private chat, /summary list, /trace and /status with a topic's chat key as
    the last argument answer for that topic: its summary, its batch, its state."""
    llm.reply_json(replies_json("香山吧"))
    summary = {"summary": "聊了周六去香山爬山。", "topics": [], "key_points": [], "keywords": []}
    llm.reply(json.dumps({**summary, "people": []}, ensure_ascii=False))
    async with telegram_bot(forum_config(tmp_path, llm, api), api) as core:
        hiking = api.open_topic(FORUM, "Hiking")
        await answer(api, core, f"@{api.bot_username} 周六去哪爬山？", topic=hiking, user_id=ALICE)
        await core.ops.memory.summarise(topic_chat(hiking), core.ops.memory.today(), by="test")
        key = str(topic_chat(hiking))
        answers = [
            await ask_privately(api, core, f"{command} {key}", user_id=ADMIN)
            for command in ("/summary list", "/trace", "/status")
        ]
    listing, trace, status = (text.splitlines() for text in answers)
    assert [listing[0].split(": ")[0], trace[0].split(", ")[0], status[0]] == [
        f"memory of {key}",
        f"batch 1 of {key}",
        f"chat: {key}",
    ]
    assert listing[1].split(" · ")[1] == "聊了周六去香山爬山。"
    assert [line for line in trace if line.startswith("reply")] == ["reply 1: sent · 香山吧"]
    assert [line for line in status if line.startswith("sent today")] == [
        "sent today: 1 text(s), 0 reaction(s), 0 sticker(s), 0 voice message(s)"
    ]
