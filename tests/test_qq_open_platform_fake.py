"""The QQ Open Platform fake, driven by the real ``nonebot-adapter-qq`` and by plain HTTP.

nonebot is initialised once per process, and pacebot's OneBot wiring initialises it with
the ``~fastapi`` driver (``adapters/qq/wire.py``), while the QQ adapter needs an HTTP and a
WebSocket client driver. So the adapter runs here in a child process of its own (this
module, run with ``python -m``): nonebot with ``~none+~httpx+~websockets``, the QQ adapter
pointed at the fake, and one matcher that reports each event on stdout as a JSON line and
answers a few commands ("reply 3", "hold", "release", "picture <url>", "voice"). The
adapter waits ``RECONNECT_INTERVAL`` (3 s, a module constant) before every reconnect; the
child lowers it to 50 ms so that resume tests take milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from nonebot.adapters.qq import (
    ActionFailed,
    Bot,
    C2CMessageCreateEvent,
    Event,
    GroupAtMessageCreateEvent,
    GroupMessageCreateEvent,
    MessageSegment,
    QQMessageEvent,
    ResumedEvent,
)

from fakes.clock import Clock
from fakes.qq_open_platform import (
    CLOSE_INTENT_NOT_ALLOWED,
    GROUP_AND_C2C_EVENT,
    GUILD_MEMBERS,
    GUILD_MESSAGE_REACTIONS,
    GUILDS,
    MESSAGE_AUDIT,
    PUBLIC_GUILD_MESSAGES,
    FakeQQOpenPlatform,
    Identify,
    Resume,
    TokenRequest,
    image,
    openid,
    voice,
)

ROOT = Path(__file__).resolve().parent.parent
GROUP = openid("group-1")
ALICE = openid("alice")
BOB = openid("bob")
VOICE_SILK = b"\x02#!SILK_V3 a second of voice"
# The adapter's default intents: its Intents model switches these five on.
DEFAULT_INTENTS = (
    GUILDS | GUILD_MEMBERS | GUILD_MESSAGE_REACTIONS | MESSAGE_AUDIT | PUBLIC_GUILD_MESSAGES
)
WITH_GROUP_AND_C2C = {"c2c_group_at_messages": True}


# --- the child: nonebot with the QQ adapter, reporting on stdout ----------------------------


def report(kind: str, **fields: Any) -> None:
    """Tell the test what happened, one JSON line on stdout."""
    print(json.dumps({"kind": kind, **fields}, ensure_ascii=False), flush=True)


async def answer(bot: Bot, event: Event, held: list[QQMessageEvent]) -> None:
    """Report an event; carry out the command a chatter's message names."""
    if not isinstance(event, QQMessageEvent):
        report("event", cls=type(event).__name__)
        return
    message = event.get_message()
    words = message.extract_plain_text().strip()
    report(
        "event",
        cls=type(event).__name__,
        id=event.id,
        text=words,
        to_me=event.is_tome(),
        user=event.get_user_id(),
        attachments=[[seg.type, seg.data["url"]] for seg in message if "url" in seg.data],
    )
    command, _, argument = words.partition(" ")
    if command == "reply":
        for number in range(1, int(argument) + 1):
            await send_reporting(bot, event, f"reply {number}")
    elif command == "hold":
        held.append(event)
        report("held")
    elif command == "release":
        for earlier in held:
            await send_reporting(bot, earlier, "late")
    elif command == "picture":
        await send_reporting(bot, event, MessageSegment.image(argument))
    elif command == "voice":
        await send_reporting(bot, event, MessageSegment.file_audio(VOICE_SILK))


async def send_reporting(bot: Bot, event: QQMessageEvent, message: str | MessageSegment) -> None:
    """Send with ``bot.send``; report what the platform answered."""
    try:
        await bot.send(event, message)
    except ActionFailed as error:
        report("refused", exception=type(error).__name__, status=error.status_code, code=error.code)
    else:
        report("sent")


def serve_adapter(settings: dict[str, Any]) -> None:
    """Run nonebot with the QQ adapter against the fake until SIGTERM (the child's side)."""
    import nonebot
    from loguru import logger
    from nonebot.adapters.qq import Adapter
    from nonebot.adapters.qq import adapter as qq_adapter

    logger.remove()  # nonebot logs to stdout, which carries the reports
    logger.add(sys.stderr, level="INFO", colorize=False)
    nonebot.init(
        _env_file=(os.devnull,),
        driver="~none+~httpx+~websockets",
        log_level="INFO",
        qq_api_base=settings["api_base"],
        qq_auth_base=settings["auth_url"],
        qq_bots=[
            {"id": settings["app_id"], "secret": settings["secret"], "intent": settings["intents"]}
        ],
    )
    qq_adapter.RECONNECT_INTERVAL = 0.05
    driver = nonebot.get_driver()
    driver.register_adapter(Adapter)
    held: list[QQMessageEvent] = []

    @driver.on_bot_connect
    async def _connected(bot: Bot) -> None:
        report("connected", name=bot.self_info.username, id=bot.self_info.id)

    @driver.on_bot_disconnect
    async def _disconnected(bot: Bot) -> None:
        report("disconnected")

    @nonebot.on(priority=1, block=True).handle()
    async def _every_event(bot: Bot, event: Event) -> None:
        await answer(bot, event, held)

    nonebot.run()


# --- the test's side -----------------------------------------------------------------------


class AdapterHost:
    """The child process and the reports it printed, in order."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log
        self.reports: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read(), name="qq-adapter-host:stdout")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [item for item in self.reports if item["kind"] == kind]

    def events(self) -> list[dict[str, Any]]:
        """The message events the adapter handed to nonebot, oldest first."""
        return [item for item in self.of("event") if "id" in item]

    async def wait_for(
        self, kind: str, count: int = 1, *, within_s: float = 5.0
    ) -> list[dict[str, Any]]:
        """Wait until ``kind`` was reported ``count`` times; return those reports."""
        try:
            async with asyncio.timeout(within_s), self._changed:
                await self._changed.wait_for(lambda: len(self.of(kind)) >= count)
        except TimeoutError:
            tail = self.log.read_text(encoding="utf-8")[-3000:]
            msg = f"no {count} x {kind!r}; reports: {self.reports}\n--- adapter log ---\n{tail}"
            raise AssertionError(msg) from None
        return self.of(kind)

    async def wait_for_events(self, count: int) -> list[dict[str, Any]]:
        """Wait until ``count`` message events arrived; return them."""
        async with asyncio.timeout(5.0), self._changed:
            await self._changed.wait_for(lambda: len(self.events()) >= count)
        return self.events()

    async def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), 5.0)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        stdout = self.process.stdout
        if stdout is None:
            return
        async for line in stdout:
            with contextlib.suppress(ValueError):
                self.reports.append(json.loads(line))
                async with self._changed:
                    self._changed.notify_all()


@contextlib.asynccontextmanager
async def hosted_adapter(
    platform: FakeQQOpenPlatform, log: Path, *, intents: dict[str, bool] | None = None
) -> AsyncIterator[AdapterHost]:
    """Run the adapter in a child process against ``platform``; wait until it connected."""
    settings = {
        "api_base": platform.api_base,
        "auth_url": platform.auth_url,
        "app_id": platform.app_id,
        "secret": platform.secret,
        "intents": WITH_GROUP_AND_C2C if intents is None else intents,
    }
    with log.open("w", encoding="utf-8") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.test_qq_open_platform_fake",
            json.dumps(settings),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=log_file,
        )
    host = AdapterHost(process, log)
    try:
        await host.wait_for("connected", within_s=15.0)  # a cold start imports nonebot
        yield host
    finally:
        await host.stop()


@pytest.fixture
def clock() -> Clock:
    """The platform's clock, standing still between a test's jumps."""
    return Clock(running=False)


@pytest.fixture
async def platform(clock: Clock) -> AsyncIterator[FakeQQOpenPlatform]:
    async with FakeQQOpenPlatform(clock=clock, heartbeat_interval_ms=50) as server:
        yield server


@pytest.fixture
async def host(platform: FakeQQOpenPlatform, tmp_path: Path) -> AsyncIterator[AdapterHost]:
    async with hosted_adapter(platform, tmp_path / "adapter.log") as running:
        yield running


# --- the adapter against the fake --------------------------------------------------------------


async def test_the_adapter_gets_a_token_and_the_gateway_then_identifies_with_bit_25(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """Configured with c2c_group_at_messages, the adapter asks for a token, looks up
    /gateway/bot, identifies with the default intents plus bit 25, and heartbeats."""
    await platform.wait_until(lambda: platform.heartbeats)
    assert platform.token_requests == [TokenRequest(platform.app_id, None)]
    assert platform.gateway_requests == ["/gateway/bot"]
    [identify] = platform.identifies
    assert (identify.intents, identify.shard, identify.token_valid) == (
        DEFAULT_INTENTS | GROUP_AND_C2C_EVENT,
        (0, 1),
        True,
    )
    assert host.of("connected") == [
        {"kind": "connected", "name": platform.bot_name, "id": platform.bot_user_id}
    ]
    assert platform.heartbeats[0] == 1  # the READY dispatch was sequence 1


async def test_the_adapters_default_intents_leave_out_group_and_c2c_events(
    platform: FakeQQOpenPlatform, tmp_path: Path
) -> None:
    """Without c2c_group_at_messages the adapter identifies without bit 25, and the
    platform sends it no group or C2C message."""
    async with hosted_adapter(platform, tmp_path / "adapter.log", intents={}):
        [identify] = platform.identifies
        said = await platform.group_at(GROUP, ALICE, "anyone there?")
    assert identify.intents == DEFAULT_INTENTS
    assert said.delivery == "withheld"


async def test_group_at_group_message_and_c2c_arrive_as_the_adapters_event_classes(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """An @, a granted group's messages (one mentioning the bot) and a private message
    reach nonebot as the adapter's event classes, addressed or not, with attachments."""
    platform.grant_all_messages(GROUP)
    picture = image("https://multimedia.nt.qq.com.cn/download?fileid=cat")
    note = voice("https://multimedia.nt.qq.com.cn/download?fileid=hi", asr_text="你好")
    await platform.group_at(GROUP, ALICE, "hello bot")
    await platform.group_message(GROUP, BOB, "hi there", mentions_bot=True)
    await platform.group_message(GROUP, BOB, "just chatting", attachments=[picture])
    await platform.c2c_message(ALICE, "private words", attachments=[note])
    events = await host.wait_for_events(4)
    assert [(e["cls"], e["text"], e["to_me"], e["user"]) for e in events] == [
        (GroupAtMessageCreateEvent.__name__, "hello bot", True, ALICE),
        (GroupMessageCreateEvent.__name__, "hi there", True, BOB),
        (GroupMessageCreateEvent.__name__, "just chatting", False, BOB),
        (C2CMessageCreateEvent.__name__, "private words", True, ALICE),
    ]
    assert [e["attachments"] for e in events[2:]] == [
        [["image", picture["url"]]],
        [["file", note["url"]]],  # a voice note's content_type "voice" becomes a file
    ]


async def test_bot_send_lands_as_passive_replies_numbered_from_one(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """Each ``bot.send(event, text)`` posts a text (msg_type 0) naming the event's msg_id,
    with msg_seq 1, 2, 3 for that message, in C2C and in a group."""
    private = await platform.c2c_message(ALICE, "reply 3")
    await host.wait_for("sent", 3)
    in_group = await platform.group_at(GROUP, BOB, "reply 2")
    await host.wait_for("sent", 5)
    assert [(s.msg_type, s.content, s.msg_id, s.msg_seq) for s in platform.sent_to(ALICE)] == [
        (0, "reply 1", private.message_id, 1),
        (0, "reply 2", private.message_id, 2),
        (0, "reply 3", private.message_id, 3),
    ]
    assert [(s.msg_id, s.msg_seq) for s in platform.sent_to(GROUP)] == [
        (in_group.message_id, 1),
        (in_group.message_id, 2),
    ]


async def test_a_sixth_reply_to_one_message_is_refused_and_the_adapter_raises_action_failed(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """Five replies to one message land; the sixth is refused with HTTP 400 and code
    40034128, which the adapter raises as ``ActionFailed``."""
    await platform.group_at(GROUP, ALICE, "reply 6")
    [refusal] = await host.wait_for("refused")
    assert len(host.of("sent")) == 5
    assert refusal == {
        "kind": "refused",
        "exception": "ActionFailed",
        "status": 400,
        "code": 40034128,
    }
    assert [(s.msg_seq, s.code) for s in platform.refused()] == [(6, 40034128)]


async def test_a_reply_after_the_window_is_refused_in_a_group_but_not_yet_in_c2c(
    platform: FakeQQOpenPlatform, host: AdapterHost, clock: Clock
) -> None:
    """Six minutes after a message (on the platform's clock) a reply to it is refused as
    expired (40034005) in a group, while C2C's window of 60 minutes is still open."""
    await platform.group_at(GROUP, ALICE, "hold")
    await platform.c2c_message(ALICE, "hold")
    await host.wait_for("held", 2)
    clock.jump(minutes=6)
    await platform.c2c_message(ALICE, "release")
    await host.wait_for("sent")
    assert host.of("refused") == [
        {"kind": "refused", "exception": "ActionFailed", "status": 400, "code": 40034005}
    ]
    assert [s.content for s in platform.sent_to(ALICE)] == ["late"]


async def test_after_a_dropped_connection_the_adapter_resumes_and_gets_what_was_said_meanwhile(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """The fake drops the connection; what chatters say meanwhile waits in the session; the
    adapter resumes (op 6) with its session and last sequence, gets those events, then
    RESUMED, and replies to them as passive replies."""
    first = await platform.c2c_message(ALICE, "first")
    await host.wait_for_events(1)
    session_id = platform.session_id
    await platform.drop_connection()
    meanwhile = [
        await platform.c2c_message(ALICE, "reply 1"),
        await platform.group_at(GROUP, BOB, "said while you were away"),
    ]
    events = await host.wait_for_events(3)
    await host.wait_for("sent")
    assert [said.delivery for said in meanwhile] == ["queued", "queued"]
    assert platform.resumes == [Resume(str(session_id), first.seq or 0, True)]
    assert len(platform.identifies) == 1
    assert [e["id"] for e in events] == [first.message_id] + [m.message_id for m in meanwhile]
    assert host.of("event")[-1]["cls"] == ResumedEvent.__name__
    assert [(s.msg_id, s.msg_seq) for s in platform.sent_to(ALICE)] == [
        (meanwhile[0].message_id, 1)
    ]


async def test_reconnect_op7_makes_the_adapter_resume_its_session(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """On Reconnect (op 7) the adapter closes and resumes the same session."""
    session_id = platform.session_id
    await platform.ask_to_reconnect()
    await host.wait_for("connected", 2)
    assert [(r.session_id, r.accepted) for r in platform.resumes] == [(session_id, True)]
    assert len(platform.identifies) == 1


async def test_invalid_session_op9_makes_the_adapter_identify_afresh(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """On Invalid Session (op 9) the adapter forgets its session and identifies again."""
    first_session = platform.session_id
    await platform.invalidate_session()
    await platform.wait_until(lambda: len(platform.identifies) == 2)
    await host.wait_for("connected", 2)
    said = await platform.c2c_message(ALICE, "after")
    await host.wait_for_events(1)
    assert platform.resumes == []
    assert platform.session_id not in (None, first_session)
    assert said.delivery == "sent"


async def test_a_forgotten_session_answers_resume_with_op9_and_the_gap_is_lost(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """When the platform no longer knows the session, Resume gets op 9, the adapter
    identifies afresh, and what was said in between never arrives."""
    await platform.drop_connection()
    platform.forget_sessions()
    lost = await platform.c2c_message(ALICE, "lost in the gap")
    await platform.wait_until(lambda: len(platform.identifies) == 2)
    await host.wait_for("connected", 2)
    await platform.c2c_message(ALICE, "after")
    [event] = await host.wait_for_events(1)
    assert [r.accepted for r in platform.resumes] == [False]
    assert lost.delivery == "withheld"
    assert event["text"] == "after"


async def test_pictures_and_voice_go_up_as_files_then_as_msg_type_7(
    platform: FakeQQOpenPlatform, host: AdapterHost
) -> None:
    """A picture by URL and a voice note by bytes are uploaded to /v2/users/{id}/files
    (srv_send_msg false, base64 for bytes), then sent as msg_type 7 naming the file_info
    and carrying no text."""
    await platform.c2c_message(ALICE, "picture https://example.invalid/cat.png")
    await host.wait_for("sent")
    await platform.c2c_message(ALICE, "voice")
    await host.wait_for("sent", 2)
    assert [(u.kind, u.file_type, u.url, u.data, u.srv_send_msg) for u in platform.uploads] == [
        ("c2c", 1, "https://example.invalid/cat.png", None, False),
        ("c2c", 3, None, VOICE_SILK, False),
    ]
    assert [(s.msg_type, s.file_info, s.content) for s in platform.sent_to(ALICE)] == [
        (7, u.file_info, None) for u in platform.uploads
    ]


async def test_an_expired_token_is_renewed_after_a_401_and_the_send_retried(
    platform: FakeQQOpenPlatform, host: AdapterHost, clock: Clock
) -> None:
    """Two hours on, the adapter's token is refused (401); it asks for a new one once and
    the same post goes through."""
    clock.jump(hours=2, minutes=1)
    await platform.c2c_message(ALICE, "reply 1")
    await host.wait_for("sent")
    assert len(platform.token_requests) == 2
    assert platform.unauthorized == [f"/v2/users/{ALICE}/messages"]
    assert [s.content for s in platform.sent_to(ALICE)] == ["reply 1"]


# --- the platform's rules over plain HTTP and WebSocket ----------------------------------------


class RawBot:
    """A bare client of the fake: a token, a gateway session, JSON posts."""

    def __init__(self, platform: FakeQQOpenPlatform, http: aiohttp.ClientSession) -> None:
        self.platform = platform
        self.http = http
        self.token = ""

    async def get_token(self, *, app_id: str | None = None, secret: str | None = None) -> Any:
        body = {
            "appId": self.platform.app_id if app_id is None else app_id,
            "clientSecret": self.platform.secret if secret is None else secret,
        }
        async with self.http.post(self.platform.auth_url, json=body) as response:
            answer = await response.json()
        self.token = answer.get("access_token", self.token)
        return answer

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        headers = {"Authorization": f"QQBot {self.token}"}
        async with self.http.post(self.platform.api_base + path, json=body, headers=headers) as r:
            return r.status, await r.json()

    @contextlib.asynccontextmanager
    async def gateway(self, *, intents: int = GROUP_AND_C2C_EVENT) -> AsyncIterator[Any]:
        """Connect and identify; yield the READY payload."""
        async with self.http.ws_connect(self.platform.gateway_url) as socket:
            await socket.receive_json()  # Hello
            identify = {"token": f"QQBot {self.token}", "intents": intents, "shard": [0, 1]}
            await socket.send_json({"op": 2, "d": identify})
            yield await socket.receive_json()


@pytest.fixture
async def raw(platform: FakeQQOpenPlatform) -> AsyncIterator[RawBot]:
    async with aiohttp.ClientSession() as http:
        bot = RawBot(platform, http)
        await bot.get_token()
        yield bot


def code_of(answer: tuple[int, Any]) -> tuple[int, int | None]:
    status, body = answer
    return status, body.get("code")


async def test_the_token_endpoint_answers_a_wrong_app_id_and_a_wrong_secret_with_their_codes(
    raw: RawBot,
) -> None:
    """A wrong app id answers code 100007, a wrong secret 100016, neither with a token."""
    assert await raw.get_token(app_id="999") == {"code": 100007, "message": "appid invalid"}
    assert await raw.get_token(secret="nope") == {
        "code": 100016,
        "message": "invalid appid or secret",
    }
    assert [request.code for request in raw.platform.token_requests] == [None, 100007, 100016]


async def test_a_token_is_the_same_within_its_life_and_new_in_its_last_minute(
    raw: RawBot, clock: Clock
) -> None:
    """Asking again returns the same token; in its last minute a new one, the old one
    still working until it expires."""
    first = raw.token
    again = await raw.get_token()
    clock.jump(seconds=7200 - 30)
    renewed = await raw.get_token()
    raw.token = first
    assert (again["access_token"], again["expires_in"]) == (first, "7200")
    assert renewed["access_token"] != first
    assert code_of(
        await raw.post(f"v2/users/{ALICE}/messages", {"msg_type": 0, "content": "x"})
    ) == (
        200,
        None,
    )


async def test_rest_calls_without_a_valid_token_are_refused_with_401(raw: RawBot) -> None:
    """The gateway look-up and sends want ``QQBot <token>``: without it, 401 and 11244."""
    raw.token = "forged"
    async with raw.http.get(raw.platform.api_base + "gateway/bot") as response:
        assert (response.status, (await response.json())["code"]) == (401, 11244)
    assert code_of(await raw.post(f"v2/groups/{GROUP}/messages", {"msg_type": 0})) == (401, 11244)


async def test_proactive_messages_need_the_groups_grant_and_fit_a_monthly_quota(
    raw: RawBot, clock: Clock
) -> None:
    """Without msg_id a group refuses until granted (40034102); a chat's monthly quota
    then refuses the next one (40034100) until the next month."""
    text = {"msg_type": 0, "content": "hello, all"}
    path = f"v2/groups/{GROUP}/messages"
    refused = code_of(await raw.post(path, text))
    raw.platform.grant_proactive(GROUP)
    raw.platform.set_proactive_quota("group", GROUP, 2)
    answers = [code_of(await raw.post(path, text)) for _ in range(3)]
    clock.jump(days=31)
    await raw.get_token()  # the old one expired meanwhile
    next_month = code_of(await raw.post(path, text))
    c2c = code_of(await raw.post(f"v2/users/{ALICE}/messages", text))
    assert refused == (400, 40034102)
    assert answers == [(200, None), (200, None), (400, 40034100)]
    assert (next_month, c2c) == ((200, None), (200, None))


async def test_passive_replies_name_a_message_of_that_chat_once_per_msg_seq(
    raw: RawBot, clock: Clock
) -> None:
    """A msg_id unknown or of another chat is refused (40034024), a repeated msg_seq too
    (40054005), and a C2C reply is still accepted at 59 minutes but not at 61 (40034005)."""
    async with raw.gateway():
        said = await raw.platform.c2c_message(ALICE, "hi")

    def reply(seq: int, msg_id: str = said.message_id) -> dict[str, Any]:
        return {"msg_type": 0, "content": "hey", "msg_id": msg_id, "msg_seq": seq}

    alice, bob = f"v2/users/{ALICE}/messages", f"v2/users/{BOB}/messages"
    assert code_of(await raw.post(alice, reply(1, "ROBOT1.0_unknown"))) == (400, 40034024)
    assert code_of(await raw.post(bob, reply(1))) == (400, 40034024)
    assert code_of(await raw.post(alice, reply(1))) == (200, None)
    assert code_of(await raw.post(alice, reply(1))) == (400, 40054005)
    clock.jump(minutes=59)
    assert code_of(await raw.post(alice, reply(2))) == (200, None)
    clock.jump(minutes=2)
    assert code_of(await raw.post(alice, reply(3))) == (400, 40034005)


async def test_msg_type_7_must_name_a_file_info_uploaded_for_that_kind_of_chat(
    raw: RawBot,
) -> None:
    """An upload returns a file_info that a message of the same kind of chat can send;
    an unknown one, or a group's in C2C, is refused (12002)."""
    raw.platform.grant_proactive(GROUP)
    status, uploaded = await raw.post(
        f"v2/groups/{GROUP}/files",
        {"file_type": 1, "url": "https://e.invalid/a.png", "srv_send_msg": False},
    )
    media = {"msg_type": 7, "content": " ", "media": {"file_info": uploaded["file_info"]}}
    unknown = {**media, "media": {"file_info": "made-up"}}
    assert (status, uploaded["ttl"]) == (200, 0)
    assert code_of(await raw.post(f"v2/groups/{GROUP}/messages", media)) == (200, None)
    assert code_of(await raw.post(f"v2/groups/{GROUP}/messages", unknown)) == (400, 12002)
    assert code_of(await raw.post(f"v2/users/{ALICE}/messages", media)) == (400, 12002)


async def test_a_scripted_failure_answers_one_post_and_leaves_the_next_alone(raw: RawBot) -> None:
    """``fail_next`` refuses the next post with the code given (a rate limit here), records
    it as refused, and the post after it goes through."""
    raw.platform.fail_next("messages", code=22009, message="msg limit exceed")
    text = {"msg_type": 0, "content": "hello"}
    path = f"v2/users/{ALICE}/messages"
    answers = [code_of(await raw.post(path, text)) for _ in range(2)]
    assert answers == [(400, 22009), (200, None)]
    assert [sent.code for sent in raw.platform.sends] == [22009, None]


async def test_a_group_message_reaches_the_bot_only_where_the_owner_granted_every_message(
    raw: RawBot,
) -> None:
    """GROUP_MESSAGE_CREATE is withheld from a group without the "all messages" grant and
    delivered once granted; a session without bit 25 gets no @ either."""
    async with raw.gateway():
        before = await raw.platform.group_message(GROUP, ALICE, "chatting")
        raw.platform.grant_all_messages(GROUP)
        after = await raw.platform.group_message(GROUP, ALICE, "chatting on")
    async with raw.gateway(intents=PUBLIC_GUILD_MESSAGES):
        unsubscribed = await raw.platform.group_at(GROUP, ALICE, "hello?")
    assert [before.delivery, after.delivery, unsubscribed.delivery] == [
        "withheld",
        "sent",
        "withheld",
    ]


async def test_the_gateway_refuses_intents_the_app_may_not_use_and_unknown_sessions(
    platform: FakeQQOpenPlatform, raw: RawBot
) -> None:
    """Identify with an intent the app lacks closes with 4014; Resume of a session the
    platform does not know is answered with Invalid Session (op 9)."""
    platform.permitted_intents = DEFAULT_INTENTS
    async with raw.http.ws_connect(platform.gateway_url) as socket:
        await socket.receive_json()
        identify = {"token": f"QQBot {raw.token}", "intents": GROUP_AND_C2C_EVENT, "shard": [0, 1]}
        await socket.send_json({"op": 2, "d": identify})
        closed = await socket.receive()
    async with raw.http.ws_connect(platform.gateway_url) as socket:
        hello = await socket.receive_json()
        resume = {"token": f"QQBot {raw.token}", "session_id": "gone", "seq": 3}
        await socket.send_json({"op": 6, "d": resume})
        invalid = await socket.receive_json()
    assert (closed.type, closed.data) == (aiohttp.WSMsgType.CLOSE, CLOSE_INTENT_NOT_ALLOWED)
    assert hello == {"op": 10, "d": {"heartbeat_interval": 50}}
    assert invalid == {"op": 9, "d": False}
    assert platform.identifies[0] == Identify(GROUP_AND_C2C_EVENT, (0, 1), True, {})
    assert platform.resumes == [Resume("gone", 3, False)]


# --- run as the child ---------------------------------------------------------------------------

if __name__ == "__main__":
    serve_adapter(json.loads(sys.argv[1]))
