"""A OneBot v11 implementation for tests: it connects like NapCat does and answers calls.

It dials nonebot2's reverse WebSocket (``X-Self-ID``, ``X-Client-Role: Universal`` and
``Authorization: Bearer <token>`` when given), sends a lifecycle ``connect`` event and
heartbeats, sends message events shaped like NapCat's, and answers every API call
(``{"action", "params", "echo"}``) with ``{"status", "retcode", "data", "echo"}``. Every
call is recorded in :attr:`FakeOneBot.calls`; failures and silences can be scripted.

Like QQ itself it keeps each chat's history: every message event it was told to send
(also one it could not deliver: sent while the bot was down, ``deliver=False``) and every
message the bot posted, which it serves as NapCat does through ``get_group_msg_history``
and ``get_friend_msg_history`` (the newest ``count``, oldest first; the bot's own as
``post_type = "message_sent"``; an empty history is an error).

    async with FakeOneBot(platform.ws_url, self_id=10001) as onebot:
        await onebot.send_group_message(500, 42, [at(10001), text(" hi")], card="小明")
        [call] = await onebot.wait_for_call("send_group_msg")
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import time as wall_clock
from collections import defaultdict, deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

Segment = dict[str, Any]

# The client library prints request headers (the token too) at DEBUG; keep it quiet.
_QUIET_LOGGER = logging.getLogger("fakes.onebot")
_QUIET_LOGGER.setLevel(logging.INFO)

_SEND_ACTIONS = frozenset({"send_group_msg", "send_private_msg", "send_msg"})
_HISTORY_ACTIONS = {"get_group_msg_history": "group", "get_friend_msg_history": "private"}
_HISTORY_TARGETS = {"group": "group_id", "private": "user_id"}


# --- message segments, as OneBot v11 (and NapCat) writes them -----------------------------


def text(words: str) -> Segment:
    return {"type": "text", "data": {"text": words}}


def at(qq: int | str, *, name: str | None = None) -> Segment:
    data: dict[str, Any] = {"qq": str(qq)}
    if name is not None:
        data["name"] = name
    return {"type": "at", "data": data}


def reply(message_id: int | str) -> Segment:
    return {"type": "reply", "data": {"id": str(message_id)}}


def image(
    *,
    sticker: bool = False,
    url: str = "https://multimedia.nt.qq.com.cn/download?appid=1407&fileid=abc",
) -> Segment:
    """An image segment as NapCat sends it; ``url`` is where the picture is fetched from."""
    return {
        "type": "image",
        "data": {
            "summary": "[动画表情]" if sticker else "",
            "file": "3A1C0E0D.jpg",
            "sub_type": 1 if sticker else 0,
            "url": url,
            "file_size": "48211",
        },
    }


def face(face_id: int = 14) -> Segment:
    return {"type": "face", "data": {"id": str(face_id)}}


def record(file: str = "a1b2.amr", *, url: str | None = None, file_size: int = 5120) -> Segment:
    """A record (voice) segment as NapCat sends it: ``file`` is what ``get_record`` takes,
    ``url`` where its SILK bytes can be downloaded (NapCat's ``path`` is on its own host)."""
    data: dict[str, Any] = {
        "file": file,
        "path": f"/napcat/temp/{file}",
        "file_size": str(file_size),
    }
    if url is not None:
        data["url"] = url
    return {"type": "record", "data": data}


def video() -> Segment:
    return {"type": "video", "data": {"file": "c3d4.mp4", "file_size": "1048576"}}


def file(name: str) -> Segment:
    return {"type": "file", "data": {"file": name, "file_id": "/f-1", "file_size": "2048"}}


def forward(forward_id: str = "7412345678901234567") -> Segment:
    return {"type": "forward", "data": {"id": forward_id}}


def json_card(card: dict[str, Any] | str) -> Segment:
    payload = card if isinstance(card, str) else json.dumps(card, ensure_ascii=False)
    return {"type": "json", "data": {"data": payload}}


def xml_card(payload: str) -> Segment:
    return {"type": "xml", "data": {"data": payload}}


def segment(kind: str, **data: Any) -> Segment:
    """Any other segment, e.g. ``segment("dice", result="4")``."""
    return {"type": kind, "data": data}


def _escape(value: str, *, comma: bool) -> str:
    value = value.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return value.replace(",", "&#44;") if comma else value


def cq_code(segments: Sequence[Segment]) -> str:
    """Render segments the way ``raw_message`` carries them (CQ codes)."""
    out: list[str] = []
    for item in segments:
        data = item.get("data") or {}
        if item["type"] == "text":
            out.append(_escape(str(data.get("text", "")), comma=False))
            continue
        params = ",".join(f"{key}={_escape(str(value), comma=True)}" for key, value in data.items())
        out.append(f"[CQ:{item['type']}{',' + params if params else ''}]")
    return "".join(out)


# --- the fake -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One API request the bot made."""

    action: str
    params: dict[str, Any]
    echo: Any
    at: float = 0.0  # the fake's loop time when the call arrived


@dataclass(frozen=True, slots=True)
class _Failure:
    retcode: int
    wording: str


@dataclass(frozen=True, slots=True)
class _Late:
    seconds: float


_IGNORE = object()  # scripted: read the call, never answer it


class FakeOneBot:
    """Play the OneBot implementation (like NapCat) against a reverse WebSocket URL."""

    def __init__(
        self,
        url: str,
        *,
        self_id: int = 10001,
        access_token: str | None = None,
        nickname: str = "小满",
        heartbeat_interval_s: float = 5.0,
        unsupported: Collection[str] = (),
    ) -> None:
        self.url = url
        self.self_id = self_id
        self.access_token = access_token
        self.nickname = nickname
        self.heartbeat_interval_s = heartbeat_interval_s
        self.unsupported = set(unsupported)
        self.calls: list[ApiCall] = []
        self.posted: dict[int, ApiCall] = {}  # message id → the send call that made it
        self.records: dict[str, bytes] = {}  # what get_record answers, as MP3, by file
        # (message type, group or user id) → the chat's message events, oldest first
        self.history: defaultdict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        self._scripts: defaultdict[str, deque[object]] = defaultdict(deque)
        self._event_ids = itertools.count(1001)
        self._post_ids = itertools.count(50001)
        self._ws: ClientConnection | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- connection ------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._ws.close_code is None

    async def connect_when_listening(self, *, timeout_s: float = 20.0) -> None:
        """Dial until the bot's port accepts: a ``pacebot run`` that is still starting."""
        async with asyncio.timeout(timeout_s):
            while not self.connected:
                with contextlib.suppress(OSError):
                    await self.connect()
                await asyncio.sleep(0.05)

    async def connect(self) -> None:
        """Dial the bot; raise ``websockets.exceptions.InvalidStatus`` if it refuses."""
        if self.connected:
            raise RuntimeError("already connected")
        headers = {"X-Self-ID": str(self.self_id), "X-Client-Role": "Universal"}
        if self.access_token is not None:
            headers["Authorization"] = f"Bearer {self.access_token}"
        self._ws = await connect(
            self.url, additional_headers=headers, open_timeout=3, logger=_QUIET_LOGGER
        )
        self._tasks = [asyncio.create_task(self._answer_calls(self._ws), name="fake-onebot:calls")]
        await self.send_event(self._meta("lifecycle", sub_type="connect"))
        if self.heartbeat_interval_s > 0:
            self._tasks.append(
                asyncio.create_task(self._heartbeat(self._ws), name="fake-onebot:heartbeat")
            )

    async def close(self) -> None:
        """Disconnect, like NapCat being restarted."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def wait_closed(self, within_s: float = 2.0) -> int | None:
        """Wait until the bot closes the connection; return its close code."""
        ws = self._ws
        if ws is None:
            return None
        async with asyncio.timeout(within_s):
            await ws.wait_closed()
        return ws.close_code

    # --- scripting -------------------------------------------------------------------------

    def fail_next(
        self, action: str, *, retcode: int = 1200, wording: str = "发送消息失败", times: int = 1
    ) -> None:
        """Answer the next ``times`` calls of ``action`` with ``status: failed``."""
        self._scripts[action].extend(_Failure(retcode, wording) for _ in range(times))

    def delay_next(self, action: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``action`` late; the call itself takes effect."""
        self._scripts[action].extend(_Late(seconds) for _ in range(times))

    def ignore_next(self, action: str, *, times: int = 1) -> None:
        """Never answer the next ``times`` calls of ``action`` (the bot's call times out)."""
        self._scripts[action].extend(_IGNORE for _ in range(times))

    # --- events ----------------------------------------------------------------------------

    async def send_event(self, event: dict[str, Any]) -> None:
        if self._ws is None:
            raise RuntimeError("not connected")
        await self._ws.send(json.dumps(event, ensure_ascii=False))

    async def send_group_message(
        self,
        group_id: int,
        user_id: int,
        message: str | Sequence[Segment],
        *,
        card: str | None = None,
        nickname: str = "路人甲",
        message_id: int | None = None,
        time: int | None = None,
        role: str = "member",
        sub_type: str = "normal",
        group_name: str | None = "测试群",
        deliver: bool = True,
        **sender_extra: Any,
    ) -> int:
        """Send a group message event from ``user_id``; return its message id.

        The message joins the group's history first, so it is there even when the bot
        could not be told (``deliver=False``, or ``RuntimeError`` when not connected).
        """
        sender = {"user_id": user_id, "nickname": nickname, "card": card or "", "role": role}
        event = self._message_event(
            "group",
            user_id,
            message,
            sender={**sender, **sender_extra},
            sub_type=sub_type,
            message_id=message_id,
            time=time,
        )
        event["group_id"] = group_id
        if group_name is not None:
            event["group_name"] = group_name
        self.history["group", group_id].append(event)
        if deliver:
            await self.send_event(event)
        return int(event["message_id"])

    async def send_private_message(
        self,
        user_id: int,
        message: str | Sequence[Segment],
        *,
        nickname: str = "路人甲",
        message_id: int | None = None,
        time: int | None = None,
        sub_type: str = "friend",
        deliver: bool = True,
    ) -> int:
        """Send a private message event from ``user_id``; return its message id.

        It joins the chat's history first, as :meth:`send_group_message` says.
        """
        sender = {"user_id": user_id, "nickname": nickname, "card": ""}
        event = self._message_event(
            "private",
            user_id,
            message,
            sender=sender,
            sub_type=sub_type,
            message_id=message_id,
            time=time,
        )
        event["target_id"] = user_id
        self.history["private", user_id].append(event)
        if deliver:
            await self.send_event(event)
        return int(event["message_id"])

    def _message_event(
        self,
        message_type: str,
        user_id: int,
        message: str | Sequence[Segment],
        *,
        sender: dict[str, Any],
        sub_type: str,
        message_id: int | None,
        time: int | None,
    ) -> dict[str, Any]:
        segments = [text(message)] if isinstance(message, str) else list(message)
        number = message_id if message_id is not None else next(self._event_ids)
        return {
            "self_id": self.self_id,
            "user_id": user_id,
            "time": time if time is not None else int(wall_clock.time()),
            "message_id": number,
            "message_seq": number,
            "real_id": number,
            "real_seq": str(number),
            "message_type": message_type,
            "sender": sender,
            "raw_message": cq_code(segments),
            "font": 14,
            "sub_type": sub_type,
            "message": segments,
            "message_format": "array",
            "post_type": "message",
        }

    def _meta(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {
            "time": int(wall_clock.time()),
            "self_id": self.self_id,
            "post_type": "meta_event",
            "meta_event_type": kind,
            **fields,
        }

    async def _heartbeat(self, ws: ClientConnection) -> None:
        interval_ms = int(self.heartbeat_interval_s * 1000)
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.heartbeat_interval_s)
                status = {"online": True, "good": True}
                await ws.send(
                    json.dumps(self._meta("heartbeat", status=status, interval=interval_ms))
                )

    # --- API calls -------------------------------------------------------------------------

    def calls_of(self, action: str) -> list[ApiCall]:
        return [call for call in self.calls if call.action == action]

    async def wait_for_call(
        self, action: str, count: int = 1, *, within_s: float = 2.0
    ) -> list[ApiCall]:
        """Wait until ``action`` was called ``count`` times; return those calls."""
        async with asyncio.timeout(within_s), self._changed:
            await self._changed.wait_for(lambda: len(self.calls_of(action)) >= count)
        return self.calls_of(action)

    async def _answer_calls(self, ws: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                request = json.loads(frame)
                if not isinstance(request, dict) or "action" not in request:
                    continue
                call = ApiCall(
                    request["action"],
                    request.get("params") or {},
                    request.get("echo"),
                    asyncio.get_running_loop().time(),
                )
                self.calls.append(call)
                script = self._scripts.get(call.action)
                late = script.popleft() if script and isinstance(script[0], _Late) else None
                answer = self._answer(call, scripted=None if late is None else late)
                if answer is not None and isinstance(late, _Late):
                    self._tasks.append(
                        asyncio.create_task(
                            self._answer_late(ws, answer, late.seconds), name="fake-onebot:late"
                        )
                    )
                elif answer is not None:
                    await ws.send(json.dumps(answer, ensure_ascii=False))
                async with self._changed:
                    self._changed.notify_all()

    async def _answer_late(
        self, ws: ClientConnection, answer: dict[str, Any], seconds: float
    ) -> None:
        await asyncio.sleep(seconds)
        with contextlib.suppress(ConnectionClosed):
            await ws.send(json.dumps(answer, ensure_ascii=False))

    def _answer(self, call: ApiCall, *, scripted: object = None) -> dict[str, Any] | None:
        if scripted is None:
            script = self._scripts.get(call.action)
            scripted = script.popleft() if script else None
        if scripted is _IGNORE:
            return None
        if isinstance(scripted, _Failure):
            return self._failed(call, scripted.retcode, scripted.wording)
        if call.action in self.unsupported:
            return self._failed(call, 1404, f"不支持的Api {call.action}")
        if call.action == "get_record" and str(call.params.get("file")) not in self.records:
            return self._failed(call, 200, "语音文件不存在")
        if call.action in _HISTORY_ACTIONS:
            return self._history_answer(call, _HISTORY_ACTIONS[call.action])
        return {"status": "ok", "retcode": 0, "data": self._data(call), "echo": call.echo}

    def _remember_sent(self, message_id: int, params: dict[str, Any]) -> None:
        """Keep a message the bot posted in its chat's history, as NapCat reports it."""
        group_id = params.get("group_id")
        kind = "group" if group_id is not None else "private"
        message = params.get("message")
        segments = [text(message)] if isinstance(message, str) else list(message or [])
        sender = {"user_id": self.self_id, "nickname": self.nickname, "card": ""}
        event = self._message_event(
            kind,
            self.self_id,
            segments,
            sender=sender,
            sub_type="normal" if kind == "group" else "friend",
            message_id=message_id,
            time=None,
        )
        event.update(post_type="message_sent", message_sent_type="self")
        peer = int(group_id if kind == "group" else params.get("user_id", 0))
        if kind == "group":
            event["group_id"] = peer
        else:
            event["target_id"] = peer
        self.history[kind, peer].append(event)

    def _history_answer(self, call: ApiCall, kind: str) -> dict[str, Any]:
        """Answer a history call as NapCat does without ``message_seq``: the newest
        ``count`` messages, oldest first; none at all is an error."""
        params = call.params
        try:
            peer = int(params[_HISTORY_TARGETS[kind]])
            count = int(params.get("count", 20))
        except (KeyError, TypeError, ValueError):
            return self._failed(call, 1400, f"Key: {_HISTORY_TARGETS[kind]}, Message: Required")
        events = self.history.get((kind, peer), [])[-count:] if count > 0 else []
        if not events:
            anchor = params.get("message_seq", "undefined")
            return self._failed(call, 1200, f"消息{anchor}不存在")
        return {"status": "ok", "retcode": 0, "data": {"messages": events}, "echo": call.echo}

    def _failed(self, call: ApiCall, retcode: int, wording: str) -> dict[str, Any]:
        return {
            "status": "failed",
            "retcode": retcode,
            "data": None,
            "message": wording,
            "wording": wording,
            "echo": call.echo,
        }

    def _data(self, call: ApiCall) -> Any:
        if call.action in _SEND_ACTIONS:
            message_id = next(self._post_ids)
            self.posted[message_id] = call
            self._remember_sent(message_id, call.params)
            return {"message_id": message_id}
        if call.action == "get_login_info":
            return {"user_id": self.self_id, "nickname": self.nickname}
        if call.action == "get_status":
            return {"online": True, "good": True}
        if call.action == "get_version_info":
            return {"app_name": "FakeOneBot", "app_version": "1.0", "protocol_version": "v11"}
        if call.action == "get_msg":
            return self._stored_message(call.params.get("message_id"))
        if call.action == "get_record":
            return self._record(call.params)
        return None

    def _record(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """Answer ``get_record`` as NapCat does once it converted the note: its bytes in
        ``base64``, ``file`` and ``url`` a path on NapCat's own host."""
        name = str(params.get("file", ""))
        data = self.records.get(name)
        if data is None:
            return None
        out = f"/napcat/temp/{name}.{params.get('out_format', 'mp3')}"
        return {
            "file": out,
            "url": out,
            "file_size": str(len(data)),
            "file_name": out.rsplit("/", 1)[-1],
            "base64": base64.b64encode(data).decode("ascii"),
        }

    def _stored_message(self, message_id: Any) -> dict[str, Any] | None:
        try:
            posted = self.posted[int(message_id)]
        except (KeyError, TypeError, ValueError):
            return None
        group_id = posted.params.get("group_id")
        return {
            "time": int(wall_clock.time()),
            "message_type": "group" if group_id is not None else "private",
            "message_id": int(message_id),
            "real_id": int(message_id),
            "sender": {"user_id": self.self_id, "nickname": self.nickname},
            "message": posted.params.get("message"),
        }
