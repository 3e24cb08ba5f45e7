"""Turning Telegram messages into IncomingMessage, without a network."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from telegram import Message
from telegram.error import RetryAfter
from telegram.warnings import PTBDeprecationWarning

from adapters.telegram.errors import retry_after_seconds
from adapters.telegram.normalise import normalise
from bot.addressing import BotNames
from bot.models import ChatKey, ChatKind, IncomingMessage, Picture, VoiceNote
from fakes.bot_api import (
    audio,
    document,
    entity,
    forwarded,
    make_message,
    photo,
    sticker,
    user_dict,
    voice,
)

NAMES = BotNames.of("小满", ("XiaoMan",))

BOT_ID = 123456
BOT_USERNAME = "pacebot_test_bot"
GROUP_ID = -100777
SENT_AT = datetime(2026, 3, 5, 8, 30, tzinfo=UTC)


def message(text: str | None = None, **fields: Any) -> Message:
    """Build a PTB Message from the fake's message dict builder."""
    fields.setdefault("date", SENT_AT)
    message_id = fields.pop("message_id", 10)
    chat_id = fields.pop(
        "chat_id", 42 if fields.get("chat_type", "private") == "private" else GROUP_ID
    )
    return Message.de_json(make_message(message_id, chat_id, text, **fields), None)


def group_message(text: str | None = None, **fields: Any) -> Message:
    """Build a PTB Message in a supergroup."""
    return message(text, chat_type="supergroup", title="Friends", **fields)


def run(msg: Message) -> IncomingMessage | None:
    """Normalise with the test bot's identity, name 小满 and alias XiaoMan."""
    return normalise(msg, bot_id=BOT_ID, bot_username=BOT_USERNAME, names=NAMES)


def kept(msg: Message) -> IncomingMessage:
    """Normalise a message that must not be ignored."""
    result = run(msg)
    assert result is not None, "the message was ignored"
    return result


def text_of(msg: Message) -> str | None:
    """Return the normalised text, or None when the message is ignored."""
    result = run(msg)
    return None if result is None else result.text


def addressed(msg: Message) -> bool | None:
    """Return whether the normalised message addresses the bot."""
    result = run(msg)
    return None if result is None else result.addresses_bot


BOT_MESSAGE = make_message(
    5,
    GROUP_ID,
    "I'm the bot",
    user_id=BOT_ID,
    first_name="Pacebot",
    username=BOT_USERNAME,
    is_bot=True,
    chat_type="supergroup",
    title="Friends",
)


def test_private_text_becomes_one_addressed_message() -> None:
    """A private text keeps its ids, sender name, timestamp and always addresses the bot."""
    msg = message("hello there", message_id=7, user_id=555, first_name="Li", last_name="Lei")

    assert run(msg) == IncomingMessage(
        chat=ChatKey("telegram", ChatKind.PRIVATE, "42"),
        message_id="7",
        sender_id="555",
        sender_name="Li Lei",
        text="hello there",
        sent_at=SENT_AT,
        addresses_bot=True,
        reply_to_id=None,
        chat_title=None,
    )


def test_group_message_has_group_key_and_title() -> None:
    """A supergroup message is keyed by the chat id and carries the group's title."""
    result = kept(group_message("hi all"))

    assert (result.chat, result.chat_title) == (
        ChatKey("telegram", ChatKind.GROUP, str(GROUP_ID)),
        "Friends",
    )


def test_a_forum_topic_is_a_chat_of_its_own_within_its_group() -> None:
    """A topic message is keyed by its thread; a reply outside topics carries a thread id
    too (the General topic, groups without topics), and stays the group's."""
    in_topic = kept(
        group_message("in a topic", extra={"message_thread_id": 5, "is_topic_message": True})
    )
    in_general = kept(group_message("a reply", extra={"message_thread_id": 9}))

    assert in_topic.chat == ChatKey("telegram", ChatKind.GROUP, str(GROUP_ID), "5")
    assert str(in_topic.chat) == f"telegram:group:{GROUP_ID}:5"
    assert (
        in_topic.chat.room == in_general.chat == ChatKey("telegram", ChatKind.GROUP, str(GROUP_ID))
    )


def test_plain_group_text_does_not_address_the_bot() -> None:
    """A group message that names nobody is stored but not addressed."""
    assert addressed(group_message("anyone up for lunch?")) is False


@pytest.mark.parametrize(
    "text",
    ["@pacebot_test_bot what time is it", "hey @PaceBot_Test_Bot!"],
)
def test_group_mention_of_the_bot_addresses_it(text: str) -> None:
    """An @mention entity equal to the bot's username (any case) addresses the bot."""
    assert addressed(group_message(text)) is True


def test_mention_of_someone_else_does_not_address_the_bot() -> None:
    """An @mention of another user leaves the message unaddressed."""
    assert addressed(group_message("@someone_else look")) is False


def test_text_mention_of_the_bot_addresses_it() -> None:
    """A text_mention entity whose user is the bot addresses it."""
    text = "Pacebot, help"
    mention = entity("text_mention", text, "Pacebot", user=user_dict(BOT_ID, "Pacebot"))

    assert addressed(group_message(text, entities=[mention])) is True


def test_mention_in_a_caption_addresses_the_bot() -> None:
    """An @mention in a photo caption addresses the bot too."""
    caption = "@pacebot_test_bot look"
    extra = {
        **photo(caption),
        "caption_entities": [entity("mention", caption, "@pacebot_test_bot")],
    }

    assert addressed(group_message(extra=extra)) is True


def test_reply_to_a_bot_message_addresses_it_and_keeps_the_id() -> None:
    """Replying to the bot's own message addresses it and records what it replies to."""
    result = kept(group_message("yes, that one", reply_to=BOT_MESSAGE))

    assert (result.addresses_bot, result.reply_to_id) == (True, "5")


def test_reply_to_a_person_does_not_address_the_bot() -> None:
    """Replying to another chatter keeps the quote but does not address the bot."""
    parent = make_message(6, GROUP_ID, "lunch?", user_id=77, chat_type="supergroup")

    result = kept(group_message("sure", reply_to=parent))

    assert (result.addresses_bot, result.reply_to_id) == (False, "6")


@pytest.mark.parametrize("text", ["小满你怎么看", "what does xiaoman think", "XIAOMAN?"])
def test_bot_name_or_alias_in_text_addresses_it(text: str) -> None:
    """The bot's name or an alias anywhere in the text (any case) addresses it."""
    assert addressed(group_message(text)) is True


def test_forum_topic_root_is_not_a_reply() -> None:
    """A message in a forum topic does not count as a reply to the topic's root."""
    root = make_message(
        3,
        GROUP_ID,
        None,
        chat_type="supergroup",
        extra={"forum_topic_created": {"name": "General", "icon_color": 7322096}},
    )

    result = kept(group_message("in a topic", reply_to=root, extra={"is_topic_message": True}))

    assert result.reply_to_id is None


@pytest.mark.parametrize("user_id", [BOT_ID, 999])
def test_messages_from_bots_are_ignored(user_id: int) -> None:
    """Messages from the bot itself or from any other bot are ignored."""
    msg = group_message("beep", user_id=user_id, first_name="Bot", is_bot=True)

    assert run(msg) is None


def test_channel_posts_are_ignored() -> None:
    """Channel posts are not chats the bot talks in."""
    assert run(message("news", chat_type="channel", title="News")) is None


@pytest.mark.parametrize(
    "extra",
    [
        {"new_chat_members": [user_dict(77, "Newbie")]},
        {"left_chat_member": user_dict(77, "Gone")},
        {"new_chat_title": "New name"},
        {"pinned_message": make_message(1, GROUP_ID, "old", chat_type="supergroup")},
        {"group_chat_created": True},
    ],
)
def test_service_messages_are_ignored(extra: dict[str, Any]) -> None:
    """Joins, leaves, title changes, pins and the like are not messages to answer."""
    assert run(group_message(extra=extra)) is None


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (photo(), "[photo]"),
        (photo("look at this"), "[photo] look at this"),
        (sticker("😀"), "[sticker 😀]"),
        (sticker(None), "[sticker]"),
        (voice(), "[voice 0:03]"),
        (document("name.pdf"), "[file name.pdf]"),
        (document(None, "the report"), "[file] the report"),
        (
            {
                "animation": {
                    "file_id": "a",
                    "file_unique_id": "ua",
                    "width": 1,
                    "height": 1,
                    "duration": 2,
                },
                "document": {"file_id": "a", "file_unique_id": "ua", "file_name": "x.mp4"},
            },
            "[GIF]",
        ),
        (
            {
                "audio": {
                    "file_id": "au",
                    "file_unique_id": "uau",
                    "duration": 200,
                    "performer": "Faye Wong",
                    "title": "Red Bean",
                }
            },
            "[audio: Faye Wong – Red Bean]",
        ),
        (
            {
                "video": {
                    "file_id": "v",
                    "file_unique_id": "uv",
                    "width": 1,
                    "height": 1,
                    "duration": 5,
                }
            },
            "[video]",
        ),
        (
            {"video_note": {"file_id": "n", "file_unique_id": "un", "length": 1, "duration": 5}},
            "[video message]",
        ),
        ({"location": {"latitude": 31.2, "longitude": 121.5}}, "[location]"),
        (
            {
                "location": {"latitude": 31.2, "longitude": 121.5},
                "venue": {
                    "location": {"latitude": 31.2, "longitude": 121.5},
                    "title": "Cafe",
                    "address": "1 Road",
                },
            },
            "[venue: Cafe]",
        ),
        (
            {"contact": {"phone_number": "+100", "first_name": "Bob", "last_name": "Li"}},
            "[contact: Bob Li]",
        ),
        (
            {
                "poll": {
                    "id": "p",
                    "question": "Lunch?",
                    "options": [{"persistent_id": "o1", "text": "yes", "voter_count": 0}],
                    "total_voter_count": 0,
                    "is_closed": False,
                    "is_anonymous": True,
                    "type": "regular",
                    "allows_multiple_answers": False,
                    "allows_revoting": False,
                    "members_only": False,
                }
            },
            "[poll: Lunch?]",
        ),
        ({"dice": {"emoji": "🎲", "value": 4}}, "[dice 🎲 4]"),
        ({"story": {"chat": {"id": 5, "type": "private"}, "id": 1}}, "[unsupported message]"),
        ({"hologram": {"id": 1}}, "[unsupported message]"),
        ({"text": ""}, "[unsupported message]"),
    ],
)
def test_non_text_content_becomes_a_placeholder(extra: dict[str, Any], expected: str) -> None:
    """Non-text content turns into a short placeholder, caption appended, never an error."""
    assert text_of(message(extra=extra)) == expected


def test_forwarded_messages_are_prefixed() -> None:
    """A forwarded message says so before its text."""
    assert text_of(message("look what Bob said", extra=forwarded("Bob"))) == (
        "[forwarded] look what Bob said"
    )


def test_command_for_this_bot_loses_its_suffix() -> None:
    """``/status@<bot_username>`` reaches the core as ``/status`` with its arguments."""
    result = kept(group_message("/status@PaceBot_Test_Bot telegram:group:-1"))

    assert (result.text, result.addresses_bot) == (
        "/status telegram:group:-1",
        True,
    )


def test_command_for_another_bot_is_ignored() -> None:
    """``/status@otherbot`` is meant for someone else."""
    assert run(group_message("/status@other_bot")) is None


def test_command_without_suffix_is_kept() -> None:
    """A bare ``/status`` is kept as written."""
    assert text_of(group_message("/status")) == "/status"


def test_anonymous_admin_is_kept_under_the_group_name() -> None:
    """An anonymous group admin writes through a helper bot; the chat is the sender."""
    extra = {"sender_chat": {"id": GROUP_ID, "type": "supergroup", "title": "Friends"}}
    msg = group_message(
        "admins here", user_id=1087968824, first_name="Group", is_bot=True, extra=extra
    )

    result = kept(msg)

    assert (result.sender_id, result.sender_name) == (str(GROUP_ID), "Friends")


@pytest.mark.parametrize(
    ("first_name", "username", "expected"),
    [("", "lilei", "lilei"), ("", None, "1001")],
)
def test_sender_name_falls_back_to_username_then_id(
    first_name: str, username: str | None, expected: str
) -> None:
    """A sender without a name is called by username, else by id."""
    result = kept(message("hi", first_name=first_name, username=username))

    assert result.sender_name == expected


def test_sent_at_is_the_platform_timestamp_in_utc() -> None:
    """``sent_at`` is the message's own date, timezone-aware."""
    when = datetime(2026, 1, 1, 3, 59, 59, tzinfo=UTC)

    result = kept(message("late night", date=when))

    assert (result.sent_at, result.sent_at.utcoffset()) == (
        when,
        timedelta(0),
    )


def test_retry_after_as_timedelta_is_read_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB's timedelta form of ``retry_after`` becomes seconds."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")

    assert retry_after_seconds(RetryAfter(timedelta(seconds=2.5))) == 2.5


def test_retry_after_as_deprecated_int_is_read_without_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PTB's deprecated int form of ``retry_after`` becomes seconds without a warning."""
    monkeypatch.delenv("PTB_TIMEDELTA", raising=False)
    with pytest.warns(PTBDeprecationWarning):
        error = RetryAfter(7)  # PTB itself warns when building the error

    assert retry_after_seconds(error) == 7.0


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (photo(sides=(90, 320, 800, 1280, 2560)), (Picture("photo-1280", "[photo]"),)),
        (photo("small", sides=(90, 320)), (Picture("photo-320", "[photo]"),)),
        (sticker("😀"), (Picture("sticker-1", "[sticker 😀]"),)),
        (sticker("😀", animated=True), ()),
        (document("cat.png", mime_type="image/png"), (Picture("doc-1", "[file cat.png]"),)),
        (document("report.pdf", mime_type="application/pdf"), ()),
        (voice(), ()),
    ],
    ids=["photo", "small-photo", "sticker", "animated-sticker", "image-file", "pdf", "voice"],
)
def test_pictures_are_kept_by_file_id(extra: dict[str, Any], expected: tuple[Picture, ...]) -> None:
    """Photos (smallest size covering 1024 px), static stickers and image files keep a file id."""
    assert kept(message(extra=extra)).pictures == expected


@pytest.mark.parametrize(
    ("extra", "text", "expected"),
    [
        (
            voice(duration=7, file_size=5120),
            "[voice 0:07]",
            VoiceNote("voice-1", "[voice 0:07]", 7.0, size_bytes=5120),
        ),
        (
            voice("听听", duration=65),
            "[voice 1:05] 听听",
            VoiceNote("voice-1", "[voice 1:05]", 65.0),
        ),
        (
            audio(performer="王菲", title="红豆"),
            "[audio: 王菲 – 红豆]",
            VoiceNote("audio-1", "[audio: 王菲 – 红豆]", 200.0),
        ),
        (photo(), "[photo]", None),
    ],
    ids=["voice", "voice-with-caption", "audio-file", "photo"],
)
def test_a_voice_note_is_kept_by_file_id_with_its_length(
    extra: dict[str, Any], text: str, expected: VoiceNote | None
) -> None:
    """Voice and audio messages keep their file id, length and placeholder; the text shows
    ``[voice m:ss]`` (its caption after), read from PTB's timedelta durations."""
    incoming = kept(message(extra=extra))
    assert (incoming.text, incoming.voice) == (text, expected)
