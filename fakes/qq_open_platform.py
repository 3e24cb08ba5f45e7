"""The QQ Open Platform (the official QQ bot API) for tests, on 127.0.0.1.

It plays what ``nonebot-adapter-qq`` talks to, by the platform's rules:

- **Access token**: ``POST /app/getAppAccessToken`` with JSON ``{appId, clientSecret}``
  answers ``{access_token, expires_in}`` (``expires_in`` a string of seconds, as the
  platform writes it); a wrong app id answers ``{"code": 100007, "message": "appid
  invalid"}``, a wrong secret ``{"code": 100016, ...}``. Asking again within the token's
  life returns the same token; in its last 60 s a new one (the old one still works).
- **REST**: every other call wants ``Authorization: QQBot <token>`` (else 401, code 11244).
  ``GET /gateway`` and ``GET /gateway/bot`` give the WebSocket URL.
- **Gateway** (``/websocket``): Hello (op 10) first; Identify (op 2) checks the token and
  the intents (bits the app may not use close with 4014), then READY; Heartbeat (op 1) is
  answered with op 11; Resume (op 6) redelivers every event of that session after ``seq``,
  then RESUMED; an unknown session or a bad token gets Invalid Session (op 9). A test can
  drop the connection, send Reconnect (op 7) or Invalid Session on demand.
- **Chatters**: :meth:`FakeQQOpenPlatform.group_at`, :meth:`~FakeQQOpenPlatform.group_message`
  (needs the group's "all messages" grant) and :meth:`~FakeQQOpenPlatform.c2c_message`
  dispatch events shaped like the platform's, to a session subscribed to bit 25; while the
  connection is down they wait in the session for a Resume.
- **Sending** (``/v2/groups/{group_openid}/messages``, ``/v2/users/{openid}/messages``): a
  passive reply names a ``msg_id`` the platform delivered in that chat (else 40034024),
  within 5 minutes in a group and 60 in C2C on the fake's clock (else 40034005), at most 5
  per ``msg_id`` (else 40034128), each ``msg_seq`` once per ``msg_id`` (else 40054005; no
  ``msg_seq`` counts as 1). A send without ``msg_id`` is proactive: refused in a group the
  test did not grant it (40034102), and counted per chat and calendar month against
  ``proactive_per_month`` (else 40034100). ``msg_type`` 7 must name a ``file_info`` from
  the same kind of chat's ``/files`` upload (a URL or base64 ``file_data``).

Refusals are HTTP 400 with ``{"message", "code", "err_code", "trace_id"}``. Everything
received is recorded (:attr:`~FakeQQOpenPlatform.sends`, ``uploads``, ``identifies``,
``resumes``, ``heartbeats``, ``token_requests``); windows are measured on an injectable
:class:`~fakes.clock.Clock`, so a test jumps it instead of waiting::

    async with FakeQQOpenPlatform() as platform:
        # nonebot: qq_auth_base=platform.auth_url, qq_api_base=platform.api_base
        await platform.wait_until(lambda: platform.identifies)
        message = await platform.group_at(GROUP, openid("alice"), "hi")
        await platform.wait_until(lambda: platform.sent_to(GROUP))
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import itertools
import json
import secrets
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Any, Final, Literal, Self, TypeVar

from aiohttp import WSMsgType, web

from fakes.clock import Clock

ChatKind = Literal["group", "c2c"]
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Delivery = Literal["sent", "queued", "withheld"]
T = TypeVar("T")

BEIJING: Final = timezone(timedelta(hours=8))  # the platform writes its times in +08:00

# Intent bits, named as the platform's documentation names them.
GUILDS: Final = 1 << 0
GUILD_MEMBERS: Final = 1 << 1
GUILD_MESSAGE_REACTIONS: Final = 1 << 10
GROUP_AND_C2C_EVENT: Final = 1 << 25  # C2C_MESSAGE_CREATE, GROUP_AT_MESSAGE_CREATE, ...
MESSAGE_AUDIT: Final = 1 << 27
PUBLIC_GUILD_MESSAGES: Final = 1 << 30

PASSIVE_WINDOW: Final[dict[ChatKind, timedelta]] = {
    "group": timedelta(minutes=5),
    "c2c": timedelta(minutes=60),
}
MAX_REPLIES_PER_MSG_ID: Final = 5
TOKEN_RENEWAL_S: Final = 60  # a token asked for in its last minute is a new one

_MESSAGE_TYPES: Final = frozenset({0, 2, 3, 4, 7})
_OPEN_PATHS: Final = frozenset({"/app/getAppAccessToken", "/websocket"})  # no token wanted
_FILE_TYPES: Final = frozenset({1, 2, 3, 4})  # picture, video, voice (SILK), file

# Gateway close codes (the platform's list).
CLOSE_INVALID_OPCODE: Final = 4001
CLOSE_INVALID_PAYLOAD: Final = 4002
CLOSE_SEQ_ERROR: Final = 4007
CLOSE_SESSION_TIMED_OUT: Final = 4009  # "reconnect and Resume"
CLOSE_INTENT_NOT_ALLOWED: Final = 4014


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error the platform answers with: its code and its words."""

    code: int
    message: str
    status: int = 400


APPID_INVALID: Final = Refusal(100007, "appid invalid", 200)
WRONG_SECRET: Final = Refusal(100016, "invalid appid or secret", 200)
TOKEN_INVALID: Final = Refusal(11244, "token not exist or expire", 401)
MSG_ID_INVALID: Final = Refusal(40034024, "请求参数msg_id无效或越权")
REPLY_EXPIRED: Final = Refusal(40034005, "回复消息已过期")
TOO_MANY_REPLIES: Final = Refusal(40034128, "被动回复时间或次数超限")
DUPLICATE_SEQ: Final = Refusal(40054005, "消息被去重，请检查请求msgseq")
PROACTIVE_REFUSED: Final = Refusal(40034102, "主动消息失败, 无权限")
PROACTIVE_QUOTA: Final = Refusal(40034100, "主动消息发送超过频控限制")
EMPTY_MESSAGE: Final = Refusal(50006, "消息为空")
BAD_REQUEST: Final = Refusal(12002, "请求体错误")


def openid(name: str) -> str:
    """Return a stable openid for ``name``: 32 upper-case hex digits, as the platform's."""
    return hashlib.md5(name.encode(), usedforsecurity=False).hexdigest().upper()


# --- attachments, as the platform writes them ------------------------------------------------


def image(
    url: str = "https://multimedia.nt.qq.com.cn/download?appid=1407&fileid=EhSk&rkey=CAQS",
    *,
    content_type: str = "image/jpeg",
    width: int = 640,
    height: int = 480,
    size: int = 48211,
    filename: str = "8E2F1C0A9B7D4E3F.jpg",
) -> dict[str, Any]:
    """An image attachment; ``url`` is where the picture is fetched from."""
    return {
        "content_type": content_type,
        "filename": filename,
        "height": height,
        "width": width,
        "size": size,
        "url": url,
    }


def voice(
    url: str = "https://multimedia.nt.qq.com.cn/download?appid=1402&fileid=EhQx&rkey=CAES",
    *,
    wav_url: str | None = "https://multimedia.nt.qq.com.cn/download?appid=1402&fileid=EhQw",
    asr_text: str | None = None,
    size: int = 5120,
    filename: str = "2B9E0C41A7D3.amr",
) -> dict[str, Any]:
    """A voice attachment: ``url`` serves SILK, ``wav_url`` the platform's WAV of it."""
    attachment: dict[str, Any] = {
        "content_type": "voice",
        "filename": filename,
        "size": size,
        "url": url,
    }
    if wav_url is not None:
        attachment["voice_wav_url"] = wav_url
    if asr_text is not None:
        attachment["asr_refer_text"] = asr_text
    return attachment


# --- what the platform records -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenRequest:
    """One ask for an access token, and whether it was granted (else the code)."""

    app_id: str
    code: int | None


@dataclass(frozen=True, slots=True)
class Identify:
    """One Identify (op 2): the intents asked for, the shard, whether its token held."""

    intents: int
    shard: tuple[int, int]
    token_valid: bool
    properties: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Resume:
    """One Resume (op 6): the session and the last sequence the client had."""

    session_id: str
    seq: int
    accepted: bool


@dataclass(frozen=True, slots=True)
class Sent:
    """One message post, accepted (``code is None``, ``id`` set) or refused."""

    kind: ChatKind
    target: str
    msg_type: int | None
    content: str | None
    msg_id: str | None
    msg_seq: int | None
    file_info: str | None
    body: dict[str, Any]
    at: datetime
    code: int | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Upload:
    """One rich-media upload: where from (``url`` or the decoded ``data``), what it gave."""

    kind: ChatKind
    target: str
    file_type: int
    url: str | None
    data: bytes | None
    srv_send_msg: bool
    file_info: str | None


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One chatter's message: its ids, the sequence it got and how far it went.

    ``sent``: written to the live connection; ``queued``: kept in the session for a Resume
    (the connection was down); ``withheld``: no session subscribed to it.
    """

    event_type: str
    event_id: str
    message_id: str
    kind: ChatKind
    target: str
    seq: int | None
    delivery: Delivery
    data: dict[str, Any]


@dataclass(slots=True)
class _Inbound:
    """A chatter's message the bot may reply to, and the replies it had."""

    kind: ChatKind
    target: str
    created: datetime
    seqs: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Session:
    """A gateway session: what it subscribed to and every dispatch it was given."""

    id: str
    intents: int
    shard: tuple[int, int]
    seq: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)  # dispatches a Resume replays
    socket: web.WebSocketResponse | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


@dataclass(frozen=True, slots=True)
class _Scripted:
    refusal: Refusal
    data: dict[str, Any] | None


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class FakeQQOpenPlatform:
    """The QQ Open Platform on a free port of 127.0.0.1, for one bot (``app_id``)."""

    def __init__(
        self,
        *,
        app_id: str = "102000001",
        secret: str = "fake-app-secret-0123",
        bot_name: str = "小满",
        bot_user_id: str = "6158788878435714165",
        heartbeat_interval_ms: int = 41250,
        token_lifetime_s: int = 7200,
        permitted_intents: int | None = None,
        proactive_per_month: int = 4,
        clock: Clock | None = None,
    ) -> None:
        self.app_id = app_id
        self.secret = secret
        self.bot_name = bot_name
        self.bot_user_id = bot_user_id
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.token_lifetime_s = token_lifetime_s
        self.permitted_intents = permitted_intents  # None: the app may use every intent
        self.proactive_per_month = proactive_per_month
        self.clock = clock or Clock()
        self.token_requests: list[TokenRequest] = []
        self.gateway_requests: list[str] = []  # paths of the gateway look-ups
        self.unauthorized: list[str] = []  # paths called without a valid token
        self.identifies: list[Identify] = []
        self.resumes: list[Resume] = []
        self.heartbeats: list[int | None] = []
        self.sends: list[Sent] = []
        self.uploads: list[Upload] = []
        self.dispatched: list[Dispatched] = []
        self.all_messages_groups: set[str] = set()  # groups whose owner granted every message
        self.proactive_groups: set[str] = set()  # groups whose owner let the bot speak first
        self.proactive_quota: dict[tuple[ChatKind, str], int] = {}  # per chat, beyond default
        self._tokens: dict[str, datetime] = {}  # access token → when it expires
        self._sessions: dict[str, _Session] = {}
        self._current: _Session | None = None  # the session chatters' events go to
        self._inbound: dict[str, _Inbound] = {}  # message id → the chat it was said in
        self._proactive_used: Counter[tuple[ChatKind, str, str]] = Counter()
        self._file_infos: dict[str, ChatKind] = {}
        self._scripts: defaultdict[str, deque[_Scripted]] = defaultdict(deque)
        self._sockets: set[web.WebSocketResponse] = set()  # every open gateway connection
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._port = 0

    # --- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application(middlewares=[self._require_token])
        app.router.add_post("/app/getAppAccessToken", self._token)
        app.router.add_get("/gateway", self._gateway_url)
        app.router.add_get("/gateway/bot", self._gateway_url)
        app.router.add_get("/websocket", self._websocket)
        app.router.add_post("/v2/groups/{target}/messages", self._post_message)
        app.router.add_post("/v2/users/{target}/messages", self._post_message)
        app.router.add_post("/v2/groups/{target}/files", self._post_file)
        app.router.add_post("/v2/users/{target}/files", self._post_file)
        runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True
        )
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self._port = runner.addresses[0][1]

    async def close(self) -> None:
        """Close every connection and stop listening."""
        for session in self._sessions.values():
            session.socket = None
        for socket in list(self._sockets):
            await socket.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @property
    def api_base(self) -> str:
        """The REST base (``qq_api_base`` of the adapter)."""
        return f"http://127.0.0.1:{self._require_port()}/"

    @property
    def auth_url(self) -> str:
        """The token endpoint (``qq_auth_base`` of the adapter: the whole URL)."""
        return f"{self.api_base}app/getAppAccessToken"

    @property
    def gateway_url(self) -> str:
        """The WebSocket gateway ``/gateway/bot`` names."""
        return f"ws://127.0.0.1:{self._require_port()}/websocket"

    def _require_port(self) -> int:
        if not self._port:
            raise RuntimeError("start the FakeQQOpenPlatform first")
        return self._port

    # --- what group owners and tests allow -------------------------------------------------

    def grant_all_messages(self, group_openid: str) -> None:
        """The owner lets the bot read every message of the group (GROUP_MESSAGE_CREATE)."""
        self.all_messages_groups.add(group_openid)

    def grant_proactive(self, group_openid: str) -> None:
        """The owner lets the bot speak in the group without being asked."""
        self.proactive_groups.add(group_openid)

    def set_proactive_quota(self, kind: ChatKind, target: str, per_month: int) -> None:
        """Give one chat a monthly quota of proactive messages other than the default."""
        self.proactive_quota[kind, target] = per_month

    def fail_next(
        self,
        endpoint: Literal["token", "gateway", "messages", "files"],
        *,
        code: int,
        message: str,
        status: int = 400,
        data: dict[str, Any] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``endpoint`` with this error; nothing happens.

        ``status=202`` with ``data={"message_audit": {"audit_id": ...}}`` plays a message
        held for the platform's content review.
        """
        scripted = _Scripted(Refusal(code, message, status), data)
        self._scripts[endpoint].extend(scripted for _ in range(times))

    # --- what chatters say -----------------------------------------------------------------

    async def group_at(
        self,
        group_openid: str,
        member_openid: str,
        text: str,
        *,
        username: str | None = "群友",
        role: str = "member",
        attachments: Sequence[dict[str, Any]] = (),
    ) -> Dispatched:
        """A member @-mentions the bot in a group: GROUP_AT_MESSAGE_CREATE (the @ left out
        of ``content``, which starts with a space as the platform's does)."""
        data = self._group_data(group_openid, member_openid, f" {text}", username, role)
        return await self._say("GROUP_AT_MESSAGE_CREATE", "group", group_openid, data, attachments)

    async def group_message(
        self,
        group_openid: str,
        member_openid: str,
        text: str,
        *,
        mentions_bot: bool = False,
        username: str | None = "群友",
        role: str = "member",
        attachments: Sequence[dict[str, Any]] = (),
    ) -> Dispatched:
        """A member speaks in a group: GROUP_MESSAGE_CREATE, which only a group that granted
        every message sends (else it is withheld). Mentioning the bot adds
        ``mentions[{"is_you": true, ...}]`` and leaves the @ out of ``content``."""
        content = f" {text}" if mentions_bot else text
        data = self._group_data(group_openid, member_openid, content, username, role)
        if mentions_bot:
            bot = self.bot_openid(group_openid)
            data["mentions"] = [
                {
                    "scope": "single",
                    "bot": True,
                    "id": bot,
                    "member_openid": bot,
                    "is_you": True,
                    "username": self.bot_name,
                }
            ]
        granted = group_openid in self.all_messages_groups
        return await self._say(
            "GROUP_MESSAGE_CREATE", "group", group_openid, data, attachments, allowed=granted
        )

    async def c2c_message(
        self,
        user_openid: str,
        text: str,
        *,
        username: str | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> Dispatched:
        """A user writes to the bot in a private chat: C2C_MESSAGE_CREATE."""
        author: dict[str, Any] = {"id": user_openid, "user_openid": user_openid, "union_openid": ""}
        if username is not None:
            author["username"] = username
        data = {"author": author, "content": text, **self._message_basics()}
        return await self._say("C2C_MESSAGE_CREATE", "c2c", user_openid, data, attachments)

    def bot_openid(self, group_openid: str) -> str:
        """The bot's member openid in a group (what a mention of it carries)."""
        return openid(f"{self.app_id}:{group_openid}")

    def _group_data(
        self, group_openid: str, member_openid: str, content: str, username: str | None, role: str
    ) -> dict[str, Any]:
        author: dict[str, Any] = {
            "id": member_openid,
            "member_openid": member_openid,
            "union_openid": "",
            "bot": False,
            "member_role": role,
        }
        if username is not None:
            author["username"] = username
        return {
            "author": author,
            "content": content,
            "group_id": group_openid,
            "group_openid": group_openid,
            **self._message_basics(),
        }

    def _message_basics(self) -> dict[str, Any]:
        number = next(self._ids)
        return {
            "id": f"ROBOT1.0_{secrets.token_urlsafe(30)}{number}!",
            "timestamp": self._now().isoformat(timespec="seconds"),
            "message_type": 0,
            "message_scene": {"source": "default", "ext": [f"msg_idx=REFIDX_{number}"]},
        }

    async def _say(
        self,
        event_type: str,
        kind: ChatKind,
        target: str,
        data: dict[str, Any],
        attachments: Sequence[dict[str, Any]],
        *,
        allowed: bool = True,
    ) -> Dispatched:
        if attachments:
            data["attachments"] = [dict(attachment) for attachment in attachments]
        event_id = f"{event_type}:{secrets.token_hex(30)}"
        session = self._current
        if not allowed or session is None or not session.intents & GROUP_AND_C2C_EVENT:
            dispatched = Dispatched(
                event_type, event_id, data["id"], kind, target, None, "withheld", data
            )
        else:
            self._inbound[data["id"]] = _Inbound(kind, target, self._now())
            seq = session.next_seq()
            frame = {"op": 0, "s": seq, "t": event_type, "id": event_id, "d": data}
            session.log.append(frame)
            sent = await _send(session.socket, frame)
            delivery: Delivery = "sent" if sent else "queued"
            dispatched = Dispatched(
                event_type, event_id, data["id"], kind, target, seq, delivery, data
            )
        self.dispatched.append(dispatched)
        await self._notify()
        return dispatched

    # --- the gateway, driven by the test ------------------------------------------------------

    async def drop_connection(self, *, code: int = CLOSE_SESSION_TIMED_OUT) -> None:
        """Close the live connection; its session stays, for a Resume."""
        session = self._live_session()
        socket, session.socket = session.socket, None
        if socket is not None:
            await socket.close(code=code)

    async def ask_to_reconnect(self) -> None:
        """Send Reconnect (op 7) on the live connection."""
        session = self._live_session()
        await _send(session.socket, {"op": 7})

    async def invalidate_session(self) -> None:
        """Send Invalid Session (op 9) on the live connection and forget its session."""
        session = self._live_session()
        self._forget(session)
        await _send(session.socket, {"op": 9, "d": False})

    def forget_sessions(self) -> None:
        """Forget every session, as the platform does some time after a drop."""
        for session in list(self._sessions.values()):
            self._forget(session)

    @property
    def session_id(self) -> str | None:
        """The id of the session chatters' events go to, if any."""
        return None if self._current is None else self._current.id

    @property
    def connected(self) -> bool:
        """Whether a session has a live connection."""
        session = self._current
        return session is not None and session.socket is not None and not session.socket.closed

    def _live_session(self) -> _Session:
        if not self.connected or self._current is None:
            raise RuntimeError("no live gateway connection")
        return self._current

    def _forget(self, session: _Session) -> None:
        self._sessions.pop(session.id, None)
        if self._current is session:
            self._current = None

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._sockets.add(socket)
        try:
            hello = {"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}}
            await _send(socket, hello)
            async for frame in socket:
                if frame.type == WSMsgType.TEXT:
                    await self._on_frame(socket, frame.data)
        finally:
            self._sockets.discard(socket)
            await self._notify()  # ``connected`` may have changed
        return socket

    async def _on_frame(self, socket: web.WebSocketResponse, text: str) -> None:
        try:
            payload = json.loads(text)
            op, data = payload["op"], payload.get("d")
        except (ValueError, TypeError, KeyError, AttributeError):
            await socket.close(code=CLOSE_INVALID_PAYLOAD)
            return
        await self._on_payload(socket, op, data)

    async def _on_payload(self, socket: web.WebSocketResponse, op: object, data: Any) -> None:
        if op == 1:
            self.heartbeats.append(data if isinstance(data, int) else None)
            await _send(socket, {"op": 11})
        elif op == 2:
            await self._identify(socket, data if isinstance(data, dict) else {})
        elif op == 6:
            await self._resume(socket, data if isinstance(data, dict) else {})
        else:
            await socket.close(code=CLOSE_INVALID_OPCODE)
        await self._notify()

    async def _identify(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> None:
        intents = data.get("intents")
        try:
            shard_id, shard_count = data.get("shard") or (0, 1)
            shard = (int(shard_id), int(shard_count))
        except (TypeError, ValueError):
            await socket.close(code=CLOSE_INVALID_PAYLOAD)
            return
        token_valid = self._valid_gateway_token(data.get("token"))
        properties = data.get("properties")
        if not isinstance(properties, dict):
            properties = {}
        self.identifies.append(
            Identify(intents if isinstance(intents, int) else -1, shard, token_valid, properties)
        )
        if not token_valid or not isinstance(intents, int):
            await _send(socket, {"op": 9, "d": False})
            return
        permitted = self.permitted_intents
        if permitted is not None and intents & ~permitted:
            await socket.close(code=CLOSE_INTENT_NOT_ALLOWED)
            return
        session = _Session(str(uuid.uuid4()), intents, shard, socket=socket)
        self._sessions[session.id] = session
        self._current = session
        user = {"id": self.bot_user_id, "username": self.bot_name, "bot": True}
        ready = {"version": 1, "session_id": session.id, "user": user, "shard": list(shard)}
        await _send(socket, {"op": 0, "s": session.next_seq(), "t": "READY", "d": ready})

    async def _resume(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> None:
        session = self._sessions.get(str(data.get("session_id")))
        seq = data.get("seq")
        valid = (
            session is not None
            and isinstance(seq, int)
            and self._valid_gateway_token(data.get("token"))
        )
        self.resumes.append(
            Resume(str(data.get("session_id")), seq if isinstance(seq, int) else -1, valid)
        )
        if session is None or not valid or not isinstance(seq, int):
            await _send(socket, {"op": 9, "d": False})
            return
        if seq > session.seq:
            await socket.close(code=CLOSE_SEQ_ERROR)
            return
        old, session.socket = session.socket, socket
        if old is not None and old is not socket:
            await old.close(code=CLOSE_SESSION_TIMED_OUT)
        self._current = session
        for frame in session.log:
            if frame["s"] > seq:
                await _send(socket, frame)
        await _send(socket, {"op": 0, "s": session.next_seq(), "t": "RESUMED", "d": ""})

    def _valid_gateway_token(self, token: object) -> bool:
        if not isinstance(token, str) or not token.startswith("QQBot "):
            return False
        return self._token_alive(token.removeprefix("QQBot "))

    # --- HTTP: the token and the gateway URL ------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        scripted = self._next_script("token")
        if scripted is not None:
            return _refusal(scripted.refusal, data=scripted.data)
        try:
            body = await request.json() if request.content_type == "application/json" else {}
        except ValueError:
            body = {}
        app_id = str(body.get("appId", "")) if isinstance(body, dict) else ""
        refusal = None
        if app_id != self.app_id:
            refusal = APPID_INVALID
        elif body.get("clientSecret") != self.secret:
            refusal = WRONG_SECRET
        self.token_requests.append(TokenRequest(app_id, None if refusal is None else refusal.code))
        await self._notify()
        if refusal is not None:
            return web.json_response(
                {"code": refusal.code, "message": refusal.message}, status=refusal.status
            )
        token, expires = self._current_token()
        remaining_s = int((expires - self._now()).total_seconds())
        return web.json_response({"access_token": token, "expires_in": str(remaining_s)})

    def _current_token(self) -> tuple[str, datetime]:
        now = self._now()
        live = [(t, exp) for t, exp in self._tokens.items() if exp > now]
        fresh = [item for item in live if item[1] - now > timedelta(seconds=TOKEN_RENEWAL_S)]
        if fresh:
            return max(fresh, key=lambda item: item[1])
        token = secrets.token_urlsafe(24)
        self._tokens[token] = now + timedelta(seconds=self.token_lifetime_s)
        return token, self._tokens[token]

    def _token_alive(self, token: str) -> bool:
        expires = self._tokens.get(token)
        return expires is not None and expires > self._now()

    @web.middleware
    async def _require_token(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """Let a REST call through only with ``Authorization: QQBot <live token>``."""
        if request.path in _OPEN_PATHS:
            return await handler(request)
        header = request.headers.get("Authorization", "")
        if header.startswith("QQBot ") and self._token_alive(header.removeprefix("QQBot ")):
            return await handler(request)
        self.unauthorized.append(request.path)
        return _refusal(TOKEN_INVALID)

    async def _gateway_url(self, request: web.Request) -> web.Response:
        scripted = self._next_script("gateway")
        if scripted is not None:
            return _refusal(scripted.refusal, data=scripted.data)
        self.gateway_requests.append(request.path)
        await self._notify()
        if request.path == "/gateway":
            return web.json_response({"url": self.gateway_url})
        limit = {"total": 1000, "remaining": 1000, "reset_after": 86400000, "max_concurrency": 1}
        return web.json_response(
            {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}
        )

    # --- HTTP: sending ----------------------------------------------------------------------

    async def _post_message(self, request: web.Request) -> web.Response:
        kind, target = _chat_of(request)
        sent = _sent_from(kind, target, await _json_body(request), self._now())
        sent, response = self._answer_message(sent)
        self.sends.append(sent)
        await self._notify()
        return response

    def _answer_message(self, sent: Sent) -> tuple[Sent, web.Response]:
        """Return ``sent`` as the platform took it (its id, or its refusal's code) and the
        answer."""
        scripted = self._next_script("messages")
        if scripted is not None:
            return replace(sent, code=scripted.refusal.code), _refusal(
                scripted.refusal, data=scripted.data
            )
        try:
            self._check_message(sent)
        except _Refused as refused:
            return replace(sent, code=refused.refusal.code), _refusal(refused.refusal)
        sent = replace(sent, id=self._message_id())
        return sent, web.json_response({"id": sent.id, "timestamp": int(sent.at.timestamp())})

    def _check_message(self, sent: Sent) -> None:
        """Raise ``_Refused`` if the platform would refuse ``sent``; count it if not."""
        if sent.msg_type not in _MESSAGE_TYPES:
            raise _Refused(BAD_REQUEST)
        if sent.msg_type == 0 and not sent.content:
            raise _Refused(EMPTY_MESSAGE)
        if sent.msg_type == 7 and self._file_infos.get(sent.file_info or "") != sent.kind:
            raise _Refused(BAD_REQUEST)
        if sent.body.get("event_id") is not None:
            raise _Refused(BAD_REQUEST)  # replies to events are not played here
        if sent.msg_id is None:
            self._count_proactive(sent.kind, sent.target)
        else:
            self._count_passive(sent)

    def _count_passive(self, sent: Sent) -> None:
        inbound = self._inbound.get(sent.msg_id or "")
        if inbound is None or (inbound.kind, inbound.target) != (sent.kind, sent.target):
            raise _Refused(MSG_ID_INVALID)
        if self._now() - inbound.created > PASSIVE_WINDOW[sent.kind]:
            raise _Refused(REPLY_EXPIRED)
        seq = 1 if sent.msg_seq is None else sent.msg_seq
        if seq in inbound.seqs:
            raise _Refused(DUPLICATE_SEQ)
        if len(inbound.seqs) >= MAX_REPLIES_PER_MSG_ID:
            raise _Refused(TOO_MANY_REPLIES)
        inbound.seqs.add(seq)

    def _count_proactive(self, kind: ChatKind, target: str) -> None:
        if kind == "group" and target not in self.proactive_groups:
            raise _Refused(PROACTIVE_REFUSED)
        month = self._now().strftime("%Y-%m")
        quota = self.proactive_quota.get((kind, target), self.proactive_per_month)
        if self._proactive_used[kind, target, month] >= quota:
            raise _Refused(PROACTIVE_QUOTA)
        self._proactive_used[kind, target, month] += 1

    async def _post_file(self, request: web.Request) -> web.Response:
        kind, target = _chat_of(request)
        body = await _json_body(request)
        scripted = self._next_script("files")
        if scripted is not None:
            return _refusal(scripted.refusal, data=scripted.data)
        try:
            upload = _upload_from(kind, target, body)
            if upload.srv_send_msg:
                self._count_proactive(kind, target)
        except _Refused as refused:
            return _refusal(refused.refusal)
        file_info = base64.b64encode(secrets.token_bytes(24)).decode()
        self._file_infos[file_info] = kind
        self.uploads.append(replace(upload, file_info=file_info))
        await self._notify()
        answer: dict[str, Any] = {"file_uuid": uuid.uuid4().hex, "file_info": file_info, "ttl": 0}
        if upload.srv_send_msg:
            answer["id"] = self._message_id()
        return web.json_response(answer)

    def _message_id(self) -> str:
        return f"ROBOT1.0_sent_{next(self._ids)}"

    def _next_script(self, endpoint: str) -> _Scripted | None:
        script = self._scripts.get(endpoint)
        return script.popleft() if script else None

    # --- what happened ----------------------------------------------------------------------

    def sent_to(self, target: str) -> list[Sent]:
        """The messages the platform accepted for a group or user, oldest first."""
        return [sent for sent in self.sends if sent.target == target and sent.code is None]

    def refused(self) -> list[Sent]:
        """The message posts the platform refused, oldest first."""
        return [sent for sent in self.sends if sent.code is not None]

    async def wait_until(self, condition: Callable[[], T], *, within_s: float = 5.0) -> T:
        """Wait until ``condition()`` is truthy (checked on every record); return it."""
        async with asyncio.timeout(within_s), self._changed:
            await self._changed.wait_for(condition)
        return condition()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _now(self) -> datetime:
        return self.clock.now().astimezone(BEIJING)


# --- wire helpers ------------------------------------------------------------------------------


async def _send(socket: web.WebSocketResponse | None, payload: dict[str, Any]) -> bool:
    """Write ``payload`` if the connection is open; say whether it was written."""
    if socket is None or socket.closed:
        return False
    with contextlib.suppress(ConnectionResetError):
        await socket.send_str(json.dumps(payload, ensure_ascii=False))
        return True
    return False


def _refusal(refusal: Refusal, *, data: dict[str, Any] | None = None) -> web.Response:
    """Answer as the platform refuses: its code twice, a trace id in body and header."""
    trace = secrets.token_hex(16)
    body: dict[str, Any] = {
        "message": refusal.message,
        "code": refusal.code,
        "err_code": refusal.code,
        "trace_id": trace,
    }
    if data is not None:
        body["data"] = data
    return web.json_response(body, status=refusal.status, headers={"X-Tps-trace-ID": trace})


def _chat_of(request: web.Request) -> tuple[ChatKind, str]:
    kind: ChatKind = "group" if request.path.startswith("/v2/groups/") else "c2c"
    return kind, request.match_info["target"]


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _sent_from(kind: ChatKind, target: str, body: dict[str, Any], at: datetime) -> Sent:
    media = body.get("media")
    file_info = media.get("file_info") if isinstance(media, dict) else None
    msg_type, msg_seq, content, msg_id = (
        body.get("msg_type"),
        body.get("msg_seq"),
        body.get("content"),
        body.get("msg_id"),
    )
    return Sent(
        kind=kind,
        target=target,
        msg_type=msg_type if isinstance(msg_type, int) else None,
        content=content if isinstance(content, str) else None,
        msg_id=msg_id if isinstance(msg_id, str) and msg_id else None,
        msg_seq=msg_seq if isinstance(msg_seq, int) else None,
        file_info=file_info if isinstance(file_info, str) else None,
        body=body,
        at=at,
    )


def _upload_from(kind: ChatKind, target: str, body: dict[str, Any]) -> Upload:
    """Read an upload; raise ``_Refused`` for a bad type, neither or both of url and data."""
    file_type, url, data = body.get("file_type"), body.get("url"), body.get("file_data")
    if file_type not in _FILE_TYPES or (url is None) == (data is None):
        raise _Refused(BAD_REQUEST)
    decoded = None
    if data is not None:
        try:
            decoded = base64.b64decode(str(data), validate=True)
        except binascii.Error as error:
            raise _Refused(BAD_REQUEST) from error
    return Upload(
        kind=kind,
        target=target,
        file_type=int(file_type),
        url=str(url) if url is not None else None,
        data=decoded,
        srv_send_msg=bool(body.get("srv_send_msg", False)),
        file_info=None,
    )
