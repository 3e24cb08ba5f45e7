"""The official QQ bot's events read into pacebot's messages, from the platform's payloads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adapters.qqbot.normalise import normalise
from bot.addressing import BotNames
from bot.models import ChatKey, ChatKind, Picture, VoiceNote
from fakes.qq_open_platform import image, openid, voice

NAMES = BotNames.of("小满", ["xiaoman"])
GROUP, ALICE, BOT = openid("group"), openid("alice"), openid("the-bot-in-group")


def group_event(content: str, **more: Any) -> dict[str, Any]:
    """A group message's ``d`` as the platform sends it."""
    author = {"id": ALICE, "member_openid": ALICE, "bot": False, "member_role": "member"}
    return {
        "author": {**author, **more.pop("author", {})},
        "content": content,
        "group_openid": GROUP,
        "id": "ROBOT1.0_abc!",
        "timestamp": "2026-11-28T20:15:03+08:00",
        **more,
    }


def test_a_group_at_addresses_the_bot_and_names_the_member_by_username() -> None:
    """GROUP_AT_MESSAGE_CREATE is the group's chat, addressed, its leading space gone."""
    message = normalise(
        "GROUP_AT_MESSAGE_CREATE", group_event(" 你好", author={"username": "小明"}), names=NAMES
    )
    assert message is not None
    assert (message.chat, message.sender_id, message.sender_name, message.text) == (
        ChatKey("qqbot", ChatKind.GROUP, GROUP),
        ALICE,
        "小明",
        "你好",
    )
    assert (message.addresses_bot, message.sent_at) == (
        True,
        datetime.fromisoformat("2026-11-28T20:15:03+08:00"),
    )


def test_a_mention_that_is_you_addresses_the_bot_and_others_become_names() -> None:
    """A mention with ``is_you`` addresses the bot (its markup dropped at either end);
    another member's becomes ``@name``; without a username a member is named by the head
    of their openid."""
    mentions = [
        {"id": BOT, "member_openid": BOT, "is_you": True, "username": "小满"},
        {"id": "B0B", "member_openid": "B0B", "is_you": False, "username": "阿强"},
    ]
    message = normalise(
        "GROUP_MESSAGE_CREATE",
        group_event(f"<@{BOT}> 问问 <@B0B> 吧", mentions=mentions),
        names=NAMES,
    )
    assert message is not None
    assert (message.text, message.addresses_bot, message.sender_name) == (
        "问问 @阿强 吧",
        True,
        f"member {ALICE[:4].lower()}",
    )


def test_unaddressed_group_talk_is_kept_unless_only_ats_are_wanted() -> None:
    """A group message that does not address the bot is context; with
    ``group_all_messages`` off it is not taken at all, while one naming the bot is."""
    talk, named = group_event("今天好热"), group_event("小满在吗")
    taken = normalise("GROUP_MESSAGE_CREATE", talk, names=NAMES)
    assert taken is not None
    assert taken.addresses_bot is False
    assert normalise("GROUP_MESSAGE_CREATE", talk, names=NAMES, all_group_messages=False) is None
    kept = normalise("GROUP_MESSAGE_CREATE", named, names=NAMES, all_group_messages=False)
    assert kept is not None
    assert kept.addresses_bot is True


def test_c2c_is_a_private_chat_with_its_pictures_and_voice_by_url() -> None:
    """C2C_MESSAGE_CREATE is qqbot:private:<user_openid>; a picture is kept by URL and a
    voice note by its WAV URL (the field the adapter's models drop)."""
    picture, note = image("https://multimedia.nt.qq.com.cn/p"), voice("https://x.qq.com/v.silk")
    data = {
        "author": {"id": ALICE, "user_openid": ALICE},
        "content": "看",
        "id": "ROBOT1.0_c2c!",
        "timestamp": "2026-11-28T20:15:03+08:00",
        "attachments": [picture, note],
    }
    message = normalise("C2C_MESSAGE_CREATE", data, names=NAMES)
    assert message is not None
    assert (message.chat, message.text, message.addresses_bot) == (
        ChatKey("qqbot", ChatKind.PRIVATE, ALICE),
        "看 [image] [voice]",
        True,
    )
    assert message.pictures == (Picture(picture["url"], "[image]"),)
    assert message.voice == VoiceNote(
        ref=note["url"], placeholder="[voice]", url=note["voice_wav_url"], size_bytes=5120
    )


def test_other_bots_and_other_events_are_ignored() -> None:
    """A message whose author is a bot, and an event that is no message, give nothing."""
    from_bot = group_event("hi", author={"bot": True})
    assert normalise("GROUP_MESSAGE_CREATE", from_bot, names=NAMES) is None
    assert normalise("GROUP_ADD_ROBOT", {"group_openid": GROUP}, names=NAMES) is None
