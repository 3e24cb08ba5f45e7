"""The Telegram adapter with the real PTB client against the local fake Bot API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import stamina.instrumentation
from telegram import Update

from adapters.telegram.platform import TelegramPlatform
from bot.errors import ChatUnavailable, ConfigError, MessageRefused, RateLimited, SendFailed
from bot.models import ChatKey, ChatKind, IncomingMessage
from bot.ports import PacingLimits, Platform
from bot.replies.items import Text
from fakes.bot_api import (
    FakeBotAPI,
    document,
    entity,
    forwarded,
    photo,
    sticker,
    user_dict,
    voice,
)
from fakes.harness import RecordingSink
from tests.log_capture import LogLines, captured_logs

PRIVATE_CHAT = 42
GROUP_CHAT = -100555
PRIVATE_KEY = ChatKey("telegram", ChatKind.PRIVATE, str(PRIVATE_CHAT))
GROUP_KEY = ChatKey("telegram", ChatKind.GROUP, str(GROUP_CHAT))


@pytest.fixture
def logs() -> Iterator[LogLines]:
    """Capture loguru output at DEBUG, stdlib logging (PTB, httpx) routed into it."""
    # The adapter logs each retry with its reason; stamina's own bare line would repeat it.
    old_hooks = stamina.instrumentation.get_on_retry_hooks()
    stamina.instrumentation.set_on_retry_hooks([])
    try:
        with captured_logs(stdlib_level=logging.DEBUG) as lines:
            yield lines
    finally:
        stamina.instrumentation.set_on_retry_hooks(old_hooks)


@pytest.fixture
def retry_waits() -> Iterator[list[float]]:
    """Record each wait, in seconds, that stamina schedules before a retry."""
    waits: list[float] = []

    def record(details: stamina.instrumentation.RetryDetails) -> None:
        waits.append(details.wait_for)

    old_hooks = stamina.instrumentation.get_on_retry_hooks()
    stamina.instrumentation.set_on_retry_hooks([record])
    try:
        yield waits
    finally:
        stamina.instrumentation.set_on_retry_hooks(old_hooks)


def make_platform(api: FakeBotAPI, **overrides: Any) -> TelegramPlatform:
    """Build a platform pointed at the fake, with test-speed timings."""
    options: dict[str, Any] = {
        "token": api.token,
        "api_base_url": api.base_url,
        "bot_name": "小满",
        "aliases": ("XiaoMan",),
        "poll_timeout_s": 0.2,
        "retry_initial_s": 0.02,
        "retry_max_s": 0.1,
        **overrides,
    }
    return TelegramPlatform(**options)


@pytest.fixture
def sink() -> RecordingSink:
    """A fresh recording sink."""
    return RecordingSink()


@pytest.fixture
async def platform(api: FakeBotAPI) -> AsyncIterator[TelegramPlatform]:
    """A platform that is stopped after the test."""
    platform = make_platform(api)
    yield platform
    await platform.stop()


@pytest.fixture
async def tg(platform: TelegramPlatform, sink: RecordingSink) -> TelegramPlatform:
    """A platform that is polling the fake."""
    await platform.start(sink)
    async with asyncio.timeout(3):
        await platform.wait_ready()
    return platform


async def received(api: FakeBotAPI, sink: RecordingSink, count: int = 1) -> list[IncomingMessage]:
    """Wait until the sink holds ``count`` messages and return them."""
    await api.wait_for(lambda: len(sink.received) >= count)
    return sink.received


async def settled(api: FakeBotAPI) -> None:
    """Wait until the client confirmed every queued update.

    PTB handles updates one at a time in order, so once a later message reached the sink,
    every earlier update was handled too.
    """
    await api.wait_for(lambda: not api.pending_updates)


# --- identity and contract ------------------------------------------------------------------


def test_platform_declares_telegram_limits() -> None:
    """The adapter states Telegram's name, text limit, typing refresh and posting limits."""
    platform: Platform = TelegramPlatform(token="1:x", bot_name="小满")

    assert (
        platform.name,
        platform.text_limit,
        platform.typing_refresh_s,
        platform.limits,
    ) == ("telegram", 4096, 4.0, PacingLimits(1.0, 20, 25.0))


def test_empty_token_is_a_config_error() -> None:
    """An empty token is reported as configuration, naming where it comes from."""
    with pytest.raises(ConfigError, match=r"telegram\.token_env"):
        TelegramPlatform(token=" ", bot_name="小满")


async def test_bot_identity_is_learned_from_get_me(tg: TelegramPlatform, api: FakeBotAPI) -> None:
    """Once ready, the bot's id and username come from getMe."""
    assert (tg.bot_id, tg.bot_username) == (api.bot_id, api.bot_username)


async def test_the_sink_hears_once_polling_has_started(
    tg: TelegramPlatform, sink: RecordingSink
) -> None:
    """Ready once: replies that waited for Telegram can go out at once, not after a back-off."""
    assert sink.ready == ["telegram"]


# --- receiving ------------------------------------------------------------------------------


async def test_private_text_reaches_the_sink(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """A private text arrives as one addressed IncomingMessage with the platform's timestamp."""
    when = datetime(2026, 3, 5, 23, 59, 30, tzinfo=UTC)
    message_id = api.push_message(
        PRIVATE_CHAT, "hello", user_id=555, first_name="Li", last_name="Lei", date=when
    )

    assert await received(api, sink) == [
        IncomingMessage(
            chat=PRIVATE_KEY,
            message_id=str(message_id),
            sender_id="555",
            sender_name="Li Lei",
            text="hello",
            sent_at=when,
            addresses_bot=True,
        )
    ]


async def test_group_messages_are_addressed_only_when_they_name_the_bot(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """In a group, a mention, a text_mention, a reply to the bot or its name address it."""
    bot_message = await tg.send(GROUP_KEY, Text("I am here"))
    group: dict[str, Any] = {"chat_type": "supergroup", "title": "Friends"}
    mention_text = "Pacebot?"
    text_mention = entity("text_mention", mention_text, "Pacebot", user=api.bot_user)
    api.push_message(GROUP_CHAT, "lunch anyone?", **group)
    api.push_message(GROUP_CHAT, "@pacebot_test_bot lunch?", **group)
    api.push_message(GROUP_CHAT, mention_text, entities=[text_mention], **group)
    api.push_message(GROUP_CHAT, "sure", reply_to=int(bot_message), **group)
    api.push_message(GROUP_CHAT, "小满 come", **group)
    api.push_message(GROUP_CHAT, "xiaoman come", **group)

    messages = await received(api, sink, count=6)

    assert [(m.chat, m.text, m.addresses_bot, m.chat_title) for m in messages] == [
        (GROUP_KEY, "lunch anyone?", False, "Friends"),
        (GROUP_KEY, "@pacebot_test_bot lunch?", True, "Friends"),
        (GROUP_KEY, "Pacebot?", True, "Friends"),
        (GROUP_KEY, "sure", True, "Friends"),
        (GROUP_KEY, "小满 come", True, "Friends"),
        (GROUP_KEY, "xiaoman come", True, "Friends"),
    ]


async def test_reply_to_id_is_the_quoted_message(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """A reply carries the id of the message it quotes."""
    first = api.push_message(GROUP_CHAT, "lunch?", chat_type="group", user_id=7)
    api.push_message(GROUP_CHAT, "yes", chat_type="group", reply_to=first)

    messages = await received(api, sink, count=2)

    assert [m.reply_to_id for m in messages] == [None, str(first)]


async def test_messages_from_bots_are_ignored(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """Another bot's message (and the bot's own) never reaches the sink."""
    api.push_message(GROUP_CHAT, "beep", chat_type="group", user_id=999, is_bot=True)
    api.push_message(
        GROUP_CHAT, "me", chat_type="group", user_id=api.bot_id, first_name="Pacebot", is_bot=True
    )
    human = api.push_message(GROUP_CHAT, "hi", chat_type="group")

    messages = await received(api, sink)
    await settled(api)

    assert [m.message_id for m in messages] == [str(human)]


async def test_content_becomes_placeholders(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """Photos, stickers, voice, files, unknown content and forwards arrive as readable text."""
    api.push_message(PRIVATE_CHAT, extra=photo("our cat"))
    api.push_message(PRIVATE_CHAT, extra=sticker("😀"))
    api.push_message(PRIVATE_CHAT, extra=voice())
    api.push_message(PRIVATE_CHAT, extra=document("name.pdf"))
    api.push_message(PRIVATE_CHAT, extra={"hologram": {"id": 1}})
    api.push_message(PRIVATE_CHAT, "read this", extra=forwarded("Bob"))

    messages = await received(api, sink, count=6)

    assert [m.text for m in messages] == [
        "[photo] our cat",
        "[sticker 😀]",
        "[voice 0:03]",
        "[file name.pdf]",
        "[unsupported message]",
        "[forwarded] read this",
    ]


async def test_service_messages_and_channel_posts_are_skipped(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """A join, a pin and a channel post are skipped; the next real message still arrives."""
    first = api.push_message(GROUP_CHAT, "rules: be nice", chat_type="group")
    api.push_message(GROUP_CHAT, chat_type="group", extra={"new_chat_members": [user_dict(8, "N")]})
    api.push_message(GROUP_CHAT, chat_type="group", extra={"pinned_message": api.message(first)})
    api.push_update(
        {"channel_post": {"message_id": 1, "date": 1, "chat": {"id": -1009, "type": "channel"}}}
    )
    last = api.push_message(GROUP_CHAT, "welcome", chat_type="group")

    messages = await received(api, sink, count=2)
    await settled(api)

    assert (
        [m.message_id for m in messages],
        [list(u) for u in api.dropped_updates],  # not even fetched: not in allowed_updates
    ) == ([str(first), str(last)], [["channel_post", "update_id"]])


async def test_an_update_ptb_cannot_read_is_skipped_not_refetched(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink, logs: LogLines
) -> None:
    """An update PTB cannot parse (an older Bot API's poll) is skipped with a warning."""
    old_poll = {
        "id": "p",
        "question": "Lunch?",
        "options": [{"text": "yes", "voter_count": 0}],  # no persistent_id (Bot API < 9.6)
        "total_voter_count": 0,
        "is_closed": False,
        "is_anonymous": True,
        "type": "regular",
        "allows_multiple_answers": False,
    }
    api.push_message(PRIVATE_CHAT, extra={"poll": old_poll})
    after = api.push_message(PRIVATE_CHAT, "still there?")

    messages = await received(api, sink)
    await settled(api)

    assert (
        [m.message_id for m in messages],
        [line.message.split(" (")[0] for line in logs.at("WARNING")],
    ) == ([str(after)], ["skipping Telegram update 1 that PTB cannot read"])


async def test_a_readable_page_is_parsed_once(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a page PTB failed to read is checked update by update: others are read once."""
    parsed: list[object] = []
    real = Update.de_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Update], data: Any, bot: Any = None) -> Update:
        parsed.append(data.get("update_id") if isinstance(data, dict) else data)
        return real(cls, data, bot)  # type: ignore[no-any-return]

    monkeypatch.setattr(Update, "de_json", classmethod(counting))
    for n in range(3):
        api.push_message(PRIVATE_CHAT, f"message {n}")

    await received(api, sink, count=3)
    await settled(api)

    assert len(parsed) == len(set(parsed)) == 3


async def test_edited_message_goes_to_receive_edit_only(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """An edit reaches ``receive_edit`` with the new text and never ``receive`` again."""
    message_id = api.push_message(PRIVATE_CHAT, "helo")
    await received(api, sink)
    api.push_edit(message_id, "hello")

    await api.wait_for(lambda: sink.edits)
    await settled(api)

    assert (len(sink.received), sink.edits) == (1, [(PRIVATE_KEY, str(message_id), "hello")])


async def test_commands_for_this_bot_are_stripped_and_others_ignored(
    tg: TelegramPlatform, api: FakeBotAPI, sink: RecordingSink
) -> None:
    """``/status@<bot>`` arrives as ``/status``; ``/status@otherbot`` does not arrive."""
    api.push_message(GROUP_CHAT, "/status@other_bot", chat_type="group")
    api.push_message(GROUP_CHAT, f"/status@{api.bot_username} now", chat_type="group")

    messages = await received(api, sink)
    await settled(api)

    assert [(m.text, m.addresses_bot) for m in messages] == [("/status now", True)]


async def test_a_failing_sink_is_logged_with_the_chat_and_polling_goes_on(
    api: FakeBotAPI, platform: TelegramPlatform, logs: LogLines
) -> None:
    """A page that fails is handed over again one by one: only the failing message is lost.

    The failure is logged with its chat key, and the next page still arrives.
    """
    sink = RecordingSink(failures=2)  # the page, then its first message alone
    first = api.push_message(PRIVATE_CHAT, "first")
    second = api.push_message(PRIVATE_CHAT, "second")
    await platform.start(sink)
    await received(api, sink)
    third = api.push_message(PRIVATE_CHAT, "third")
    messages = await received(api, sink, 2)
    errors = logs.at("ERROR")

    assert (
        [m.message_id for m in messages],
        sink.handovers,
        [(line.chat, f"message {first} failed" in line) for line in errors],
    ) == ([str(second), str(third)], [2, 1, 1, 1], [(str(PRIVATE_KEY), True)])


async def test_a_page_of_updates_is_handed_over_at_once_and_confirmed_after(
    api: FakeBotAPI, platform: TelegramPlatform
) -> None:
    """Fifty updates waiting at start-up reach the sink in one call, and one poll confirms them."""
    sink = RecordingSink()
    pushed = [api.push_message(PRIVATE_CHAT + n, f"m{n}") for n in range(50)]
    last_update = api.pending_updates[-1]["update_id"]
    await platform.start(sink)
    await received(api, sink, 50)
    await api.wait_for(lambda: api.confirmed_offset > last_update)

    polls = api.calls_to("getUpdates")
    assert (
        sink.handovers,
        [m.message_id for m in sink.received],
        [p.get("offset") for p in polls[:2]],
    ) == ([50], [str(i) for i in pushed], [None, last_update + 1])


# --- sending --------------------------------------------------------------------------------


async def test_send_text_posts_and_returns_the_message_id(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A plain send reaches sendMessage without a quote and returns the new message's id."""
    message_id = await tg.send(PRIVATE_KEY, Text("hi there"))

    sent = api.sent_messages(PRIVATE_CHAT)
    assert (
        message_id,
        [m["text"] for m in sent],
        "reply_parameters" in api.calls_to("sendMessage")[0],
    ) == (
        str(sent[0]["message_id"]),
        ["hi there"],
        False,
    )


async def test_send_text_with_quote_sends_reply_parameters(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A quoted send passes ``reply_parameters`` and the message quotes the original."""
    original = api.push_message(GROUP_CHAT, "what's up", chat_type="group")

    await tg.send(GROUP_KEY, Text("not much", str(original)))

    assert (
        api.calls_to("sendMessage")[0]["reply_parameters"],
        api.sent_messages(GROUP_CHAT)[0]["reply_to_message"]["message_id"],
    ) == ({"message_id": original}, original)


async def test_missing_quote_is_dropped_and_the_text_sent_anyway(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """When the quoted message is gone, the text is sent again once without the quote."""
    message_id = await tg.send(PRIVATE_KEY, Text("answer", "999999"))

    calls = api.calls_to("sendMessage")
    assert (
        len(calls),
        "reply_parameters" in calls[1],
        [(m["message_id"], m["text"]) for m in api.sent_messages(PRIVATE_CHAT)],
    ) == (2, False, [(int(message_id), "answer")])


async def test_429_becomes_rate_limited_with_its_wait(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A 429 with ``retry_after`` becomes ``RateLimited`` carrying those seconds."""
    api.fail_next(
        "sendMessage", status=429, description="Too Many Requests: retry after 7", retry_after=7
    )

    with pytest.raises(RateLimited) as caught:
        await tg.send(PRIVATE_KEY, Text("hi"))

    assert caught.value.retry_after_s == 7.0


async def test_403_becomes_chat_unavailable(tg: TelegramPlatform, api: FakeBotAPI) -> None:
    """A bot blocked or kicked (403) gets ``ChatUnavailable``."""
    api.block_chat(PRIVATE_CHAT)

    with pytest.raises(ChatUnavailable, match="blocked"):
        await tg.send(PRIVATE_KEY, Text("hi"))


async def test_chat_not_found_becomes_chat_unavailable(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A 400 "chat not found" means the chat is gone: ``ChatUnavailable``."""
    api.block_chat(GROUP_CHAT, status=400, description="Bad Request: chat not found")

    with pytest.raises(ChatUnavailable, match="not found"):
        await tg.send(GROUP_KEY, Text("hi"))


async def test_migrated_group_becomes_chat_unavailable_naming_the_new_chat(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A group upgraded to a supergroup is unavailable under its old id; the new id is named."""
    api.fail_next(
        "sendMessage",
        status=400,
        description="Bad Request: group chat was upgraded to a supergroup chat",
        migrate_to_chat_id=-1001234,
    )

    with pytest.raises(ChatUnavailable, match="telegram:group:-1001234"):
        await tg.send(GROUP_KEY, Text("hi"))


async def test_other_bad_request_refuses_that_message_for_good(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """Any other 400 (here: too long) is ``MessageRefused``: sending it again cannot help."""
    with pytest.raises(MessageRefused, match="too long"):
        await tg.send(PRIVATE_KEY, Text("x" * 5000))


async def test_server_error_is_a_certain_failure(tg: TelegramPlatform, api: FakeBotAPI) -> None:
    """A 5xx answer (a NetworkError) is ``SendFailed`` that did not deliver."""
    api.fail_next("sendMessage", status=502, description="Bad Gateway")

    with pytest.raises(SendFailed) as caught:
        await tg.send(PRIVATE_KEY, Text("hi"))

    assert caught.value.maybe_delivered is False


async def test_timeout_may_have_delivered(api: FakeBotAPI, sink: RecordingSink) -> None:
    """A read timeout is ``SendFailed(maybe_delivered=True)``: the server may have posted it."""
    async with make_platform(api, request_timeout_s=0.1) as tg:
        await tg.start(sink)
        async with asyncio.timeout(3):
            await tg.wait_ready()
        api.delay_next("sendMessage", 0.4)

        with pytest.raises(SendFailed) as caught:
            await tg.send(PRIVATE_KEY, Text("slow"))

    assert (caught.value.maybe_delivered, [m["text"] for m in api.sent_messages()]) == (
        True,
        ["slow"],
    )


async def test_send_before_ready_fails_without_a_request(
    platform: TelegramPlatform, api: FakeBotAPI
) -> None:
    """Sending before the connection is up fails certainly and calls nothing."""
    with pytest.raises(SendFailed) as caught:
        await platform.send(PRIVATE_KEY, Text("too early"))

    assert (caught.value.maybe_delivered, api.calls_to("sendMessage")) == (False, [])


async def test_typing_sends_a_chat_action(tg: TelegramPlatform, api: FakeBotAPI) -> None:
    """``show_typing`` posts the typing chat action to the chat."""
    await tg.show_typing(GROUP_KEY)

    assert api.chat_actions(GROUP_CHAT) == ["typing"]


@pytest.mark.parametrize(
    ("status", "description"),
    [(403, "Forbidden: bot was kicked"), (429, "Too Many Requests"), (500, "Internal")],
)
async def test_failing_typing_is_swallowed(
    tg: TelegramPlatform, api: FakeBotAPI, status: int, description: str
) -> None:
    """Any failure of the typing indicator is swallowed: it is cosmetic."""
    api.fail_next(
        "sendChatAction",
        status=status,
        description=description,
        retry_after=3 if status == 429 else None,
    )

    await tg.show_typing(PRIVATE_KEY)

    assert (len(api.calls_to("sendChatAction")), api.chat_actions()) == (1, [])


async def test_set_commands_publishes_the_menu(tg: TelegramPlatform, api: FakeBotAPI) -> None:
    """``set_commands`` sends the command menu to setMyCommands."""
    accepted = await tg.set_commands([("status", "pacing and queues"), ("pop", "drop a summary")])

    assert (accepted, api.commands) == (
        True,
        [
            {"command": "status", "description": "pacing and queues"},
            {"command": "pop", "description": "drop a summary"},
        ],
    )


async def test_set_commands_failure_is_reported_not_raised(
    tg: TelegramPlatform, api: FakeBotAPI
) -> None:
    """A refused command menu returns False instead of raising."""
    api.fail_next("setMyCommands", status=400, description="Bad Request: bad command")

    assert await tg.set_commands([("status", "x")]) is False


# --- lifecycle --------------------------------------------------------------------------


async def test_start_returns_at_once_and_waits_for_an_unreachable_api(
    api: FakeBotAPI, platform: TelegramPlatform, sink: RecordingSink, logs: LogLines
) -> None:
    """With the API down, start returns; once it is back, polling starts and messages flow."""
    await api.stop_listening()
    await platform.start(sink)
    await api.wait_for(lambda: len(logs.at("WARNING")) >= 2)
    assert not platform.ready.is_set()

    await api.start_listening()
    async with asyncio.timeout(3):
        await platform.wait_ready()
    message_id = api.push_message(PRIVATE_CHAT, "you're back")
    messages = await received(api, sink)
    warnings = logs.at("WARNING")

    assert (
        [m.message_id for m in messages],
        all("unreachable" in line for line in warnings),
        ["Traceback" in line for line in warnings],
    ) == ([str(message_id)], True, [False] * len(warnings))


async def test_server_errors_at_start_are_retried_with_one_warning_each(
    api: FakeBotAPI, platform: TelegramPlatform, sink: RecordingSink, logs: LogLines
) -> None:
    """Two 502s on getMe give two warnings and a third, successful attempt."""
    api.fail_next("getMe", status=502, description="Bad Gateway", times=2)

    await platform.start(sink)
    async with asyncio.timeout(3):
        await platform.wait_ready()

    assert (len(api.calls_to("getMe")), len(logs.at("WARNING"))) == (3, 2)


async def test_connection_waits_double_from_the_initial_wait_up_to_the_cap(
    api: FakeBotAPI, sink: RecordingSink, retry_waits: list[float]
) -> None:
    """Retry waits start at retry_initial_s, double, carry a jitter and stop at retry_max_s."""
    api.fail_next("getMe", status=502, description="Bad Gateway", times=5)
    initial, cap = 0.02, 0.1
    # Each wait lies between the doubled wait and that plus a jitter of up to initial.
    bounds = [(min(cap, initial * 2**n), min(cap, initial * 2**n + initial)) for n in range(5)]

    async with make_platform(api, retry_initial_s=initial, retry_max_s=cap) as platform:
        await platform.start(sink)
        async with asyncio.timeout(3):
            await platform.wait_ready()

    pairs = zip(retry_waits, bounds, strict=False)  # a missing wait shows in the count
    within = [low - 1e-9 <= wait <= high + 1e-9 for wait, (low, high) in pairs]
    assert (len(api.calls_to("getMe")), len(retry_waits), within) == (6, 5, [True] * 5)


async def test_a_429_at_start_waits_as_long_as_telegram_asked(
    api: FakeBotAPI, platform: TelegramPlatform, sink: RecordingSink, retry_waits: list[float]
) -> None:
    """A 429 on getMe is retried after its ``retry_after``, not after the shorter back-off."""
    api.fail_next(
        "getMe", status=429, description="Too Many Requests: retry after 1", retry_after=1
    )

    await platform.start(sink)
    async with asyncio.timeout(3):
        await platform.wait_ready()

    assert (len(api.calls_to("getMe")), retry_waits) == (2, [1.0])


async def test_rejected_token_is_a_config_error_and_not_retried(
    api: FakeBotAPI, sink: RecordingSink, logs: LogLines
) -> None:
    """A token the server rejects stops the start with a clear error, once, without the token."""
    wrong_token = "999:WRONG-token-value"
    async with make_platform(api, token=wrong_token) as platform:
        await platform.start(sink)
        with pytest.raises(ConfigError, match="rejected the bot token"):
            async with asyncio.timeout(3):
                await platform.wait_ready()

    assert (
        api.unauthorized,
        len(logs.at("ERROR")),
        [line for line in logs if wrong_token in line],
    ) == (["getMe"], 1, [])


async def test_stop_is_clean_and_idempotent(
    api: FakeBotAPI, tg: TelegramPlatform, sink: RecordingSink
) -> None:
    """Stop confirms fetched updates, stops polling, can be repeated, and sends then fail."""
    api.push_message(PRIVATE_CHAT, "bye")
    update_id = api.pending_updates[-1]["update_id"]
    await received(api, sink)

    await asyncio.gather(tg.stop(), tg.stop())
    await tg.stop()
    polls = len(api.calls_to("getUpdates"))
    await asyncio.sleep(0.3)  # longer than one poll: a live poller would have called again

    with pytest.raises(SendFailed):
        await tg.send(PRIVATE_KEY, Text("after stop"))
    assert (len(api.calls_to("getUpdates")), api.confirmed_offset, tg.ready.is_set()) == (
        polls,
        update_id + 1,
        False,
    )


async def test_stop_while_retrying_ends_the_attempts(
    api: FakeBotAPI, platform: TelegramPlatform, sink: RecordingSink, logs: LogLines
) -> None:
    """Stopping while the API is unreachable cancels the retries promptly."""
    await api.stop_listening()
    await platform.start(sink)
    await api.wait_for(lambda: logs.at("WARNING"))

    async with asyncio.timeout(5):  # retrying on, stop would never return
        await platform.stop()
    await api.start_listening()
    await asyncio.sleep(0.2)  # several retry intervals

    assert (api.calls, platform.ready.is_set()) == ([], False)


async def test_start_twice_is_refused(tg: TelegramPlatform, sink: RecordingSink) -> None:
    """A platform starts once."""
    with pytest.raises(RuntimeError, match="only once"):
        await tg.start(sink)


async def test_token_never_appears_in_debug_logs(
    api: FakeBotAPI, sink: RecordingSink, logs: LogLines
) -> None:
    """A full start, receive, send, error and stop cycle at DEBUG never logs the token."""
    async with make_platform(api) as platform:
        logging.getLogger("httpx").setLevel(logging.INFO)  # a careless logging setup
        try:
            await platform.start(sink)
            async with asyncio.timeout(3):
                await platform.wait_ready()
            message_id = api.push_message(PRIVATE_CHAT, "hi")
            await received(api, sink)
            await platform.send(PRIVATE_KEY, Text("hello", str(message_id)))
            api.fail_next("sendMessage", status=502, description=f"Bad Gateway for {api.token}")
            with pytest.raises(SendFailed) as caught:
                await platform.send(PRIVATE_KEY, Text("again"))
        finally:
            logging.getLogger("httpx").setLevel(logging.WARNING)

    leaks = [line for line in logs if api.token in line]
    assert (
        leaks,
        api.token in str(caught.value),
        any("getUpdates" in line for line in logs),  # PTB's DEBUG lines were captured,
        any("HTTP Request" in line for line in logs),  # httpx's INFO lines too,
        any("Set Bot API URL" in line and "***" in line for line in logs),  # redacted
    ) == ([], False, True, True, True)
