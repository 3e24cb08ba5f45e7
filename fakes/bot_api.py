"""A local fake of the Telegram Bot API, for running the real PTB client in tests.

It speaks the wire format PTB uses: form-encoded POSTs to ``/bot<token>/<method>`` (each
non-string field JSON-encoded; JSON bodies are accepted too), answers
``{"ok": true, "result": ...}`` on success and real HTTP status codes on errors
(400, 401, 403, 404, 429 with ``parameters.retry_after``).

Typical use::

    async with FakeBotAPI() as api:
        platform = TelegramPlatform(token=api.token, api_base_url=api.base_url, ...)
        await platform.start(sink)
        api.push_message(42, "hello")            # a private chat with user 1001
        await api.wait_for("sendMessage")        # until the bot answered
        assert api.sent_messages(42)[0]["text"] == "..."

Every call is recorded in :attr:`FakeBotAPI.calls`; failures and slow answers can be
scripted per method (:meth:`FakeBotAPI.fail_next`, :meth:`FakeBotAPI.delay_next`); the
whole server can go away and come back on the same port
(:meth:`FakeBotAPI.stop_listening`, :meth:`FakeBotAPI.start_listening`).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import copy
import json
import re
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from http import HTTPStatus
from types import TracebackType
from typing import Any, NamedTuple, Self

from aiohttp import web

DEFAULT_TOKEN = "123456:TEST-fake-token"
DEFAULT_USER_ID = 1001
DEFAULT_FIRST_NAME = "Alice"
TEXT_LIMIT = 4096

# Fields Telegram documents as strings: a form value "123" there must stay "123".
_STRING_FIELDS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "action",
        "language_code",
        "url",
        "secret_token",
        "business_connection_id",
        "message_effect_id",
        "name",
        "description",
        "short_description",
        "emoji",
        "question",
        "title",
    }
)

_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{5,32}\b")
_COMMAND = re.compile(r"(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{5,32})?\b")


class ApiCall(NamedTuple):
    """One request the fake received: the method name as sent, its decoded fields and
    when it arrived (``time.monotonic()``)."""

    method: str
    params: dict[str, Any]
    at: float = 0.0


REACTION_EMOJI = frozenset(
    {
        "👍",
        "👎",
        "❤",
        "🔥",
        "🥰",
        "👏",
        "😁",
        "🤔",
        "🤯",
        "😱",
        "🤬",
        "😢",
        "🎉",
        "🤩",
        "🤮",
        "💩",
        "🙏",
        "👌",
        "🕊",
        "🤡",
        "🥱",
        "🥴",
        "😍",
        "🐳",
        "❤️\u200d🔥",
        "🌚",
        "🌭",
        "💯",
        "🤣",
        "⚡",
        "🍌",
        "🏆",
        "💔",
        "🤨",
        "😐",
        "🍓",
        "🍾",
        "💋",
        "🖕",
        "😈",
        "😴",
        "😭",
        "🤓",
        "👻",
        "👨\u200d💻",
        "👀",
        "🎃",
        "🙈",
        "😇",
        "😨",
        "🤝",
        "✍",
        "🤗",
        "🫡",
        "🎅",
        "🎄",
        "☃",
        "💅",
        "🤪",
        "🗿",
        "🆒",
        "💘",
        "🙉",
        "🦄",
        "😘",
        "💊",
        "🙊",
        "😎",
        "👾",
        "🤷\u200d♂️",
        "🤷",
        "🤷\u200d♀️",
        "😡",
    }
)
"""The emoji a bot may react with (the Bot API's ``ReactionTypeEmoji`` list)."""


@dataclass
class _Failure:
    status: int
    description: str
    retry_after: int | None
    migrate_to_chat_id: int | None


# --- building Telegram objects -------------------------------------------------------------


def utf16_len(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units, as Telegram counts offsets."""
    return len(text.encode("utf-16-le")) // 2


def entity(kind: str, text: str, part: str, **fields: Any) -> dict[str, Any]:
    """Return a MessageEntity dict of type ``kind`` covering the first ``part`` of ``text``."""
    start = text.index(part)
    return {
        "type": kind,
        "offset": utf16_len(text[:start]),
        "length": utf16_len(part),
        **fields,
    }


def auto_entities(text: str) -> list[dict[str, Any]]:
    """Find @mentions and /commands in ``text`` the way Telegram marks them up."""
    found = [(match.start(), "mention", match.group()) for match in _MENTION.finditer(text)] + [
        (match.start(), "bot_command", match.group()) for match in _COMMAND.finditer(text)
    ]
    return [
        {"type": kind, "offset": utf16_len(text[:start]), "length": utf16_len(part)}
        for start, kind, part in sorted(found)
    ]


def user_dict(
    user_id: int = DEFAULT_USER_ID,
    first_name: str = DEFAULT_FIRST_NAME,
    *,
    last_name: str | None = None,
    username: str | None = None,
    is_bot: bool = False,
) -> dict[str, Any]:
    """Return a Telegram User dict."""
    user: dict[str, Any] = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
    if last_name is not None:
        user["last_name"] = last_name
    if username is not None:
        user["username"] = username
    return user


def chat_dict(
    chat_id: int, *, chat_type: str = "private", title: str | None = None, first_name: str = ""
) -> dict[str, Any]:
    """Return a Telegram Chat dict; groups and channels get a title."""
    if chat_type == "private":
        return {"id": chat_id, "type": "private", "first_name": first_name or "User"}
    return {"id": chat_id, "type": chat_type, "title": title or "Test group"}


def _timestamp(date: datetime | float | None) -> int:
    if date is None:
        return int(time.time())
    if isinstance(date, datetime):
        return int(date.timestamp())
    return int(date)


def make_message(
    message_id: int,
    chat_id: int,
    text: str | None = None,
    *,
    user_id: int = DEFAULT_USER_ID,
    first_name: str = DEFAULT_FIRST_NAME,
    last_name: str | None = None,
    username: str | None = None,
    is_bot: bool = False,
    chat_type: str = "private",
    title: str | None = None,
    reply_to: dict[str, Any] | None = None,
    entities: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    date: datetime | float | None = None,
) -> dict[str, Any]:
    """Return a Telegram Message dict as a user would send it.

    ``entities=None`` marks up @mentions and /commands like Telegram does; pass ``[]``
    for none. ``extra`` is merged last (``photo``, ``sticker``, ``caption``, ...).
    """
    message: dict[str, Any] = {
        "message_id": message_id,
        "from": user_dict(
            user_id, first_name, last_name=last_name, username=username, is_bot=is_bot
        ),
        "chat": chat_dict(chat_id, chat_type=chat_type, title=title, first_name=first_name),
        "date": _timestamp(date),
    }
    if text is not None:
        message["text"] = text
        marked = auto_entities(text) if entities is None else entities
        if marked:
            message["entities"] = marked
    if reply_to is not None:
        parent = dict(reply_to)
        parent.pop("reply_to_message", None)  # Telegram quotes one level deep
        message["reply_to_message"] = parent
    if extra:
        message.update(extra)
    return message


# Content a user can send instead of text, for ``extra=``.


def photo(caption: str | None = None, *, sides: Iterable[int] = (90, 320)) -> dict[str, Any]:
    """Return the fields of a photo message: one square size per side, ids ``photo-<side>``."""
    sizes = [
        {"file_id": f"photo-{w}", "file_unique_id": f"up-{w}", "width": w, "height": w}
        for w in sides
    ]
    return _with_caption({"photo": sizes}, caption)


def sticker(
    emoji: str | None = "😀",
    *,
    animated: bool = False,
    number: int = 1,
    set_name: str | None = None,
    thumbnail: bool = False,
) -> dict[str, Any]:
    """Return the fields of a sticker message (a static WEBP one unless ``animated``):
    sticker ``number`` has ids ``sticker-<n>`` and ``us-<n>``; with ``thumbnail`` Telegram's
    small picture of it, ``sticker-thumb-<n>``."""
    body: dict[str, Any] = {
        "file_id": f"sticker-{number}",
        "file_unique_id": f"us-{number}",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": animated,
        "is_video": False,
    }
    if emoji is not None:
        body["emoji"] = emoji
    if set_name is not None:
        body["set_name"] = set_name
    if thumbnail:
        body["thumbnail"] = {
            "file_id": f"sticker-thumb-{number}",
            "file_unique_id": f"ust-{number}",
            "width": 128,
            "height": 128,
        }
    return {"sticker": body}


def voice(
    caption: str | None = None,
    *,
    file_id: str = "voice-1",
    duration: int = 3,
    file_size: int | None = None,
) -> dict[str, Any]:
    """Return the fields of a voice message (Ogg/Opus, as Telegram's clients record)."""
    body = _sound(file_id, duration, "audio/ogg", file_size=file_size)
    return _with_caption({"voice": body}, caption)


def audio(
    *, file_id: str = "audio-1", duration: int = 200, performer: str = "", title: str = ""
) -> dict[str, Any]:
    """Return the fields of an audio (music) file message."""
    return {"audio": _sound(file_id, duration, "audio/mpeg", performer=performer, title=title)}


def _sound(file_id: str, duration: int, mime_type: str, **optional: Any) -> dict[str, Any]:
    """Return a voice note's or audio file's fields; the optional ones only when given."""
    body: dict[str, Any] = {
        "file_id": file_id,
        "file_unique_id": f"u{file_id}",
        "duration": duration,
        "mime_type": mime_type,
    }
    return body | {key: value for key, value in optional.items() if value}


def document(
    file_name: str | None, caption: str | None = None, *, mime_type: str | None = None
) -> dict[str, Any]:
    """Return the fields of a file message."""
    body: dict[str, Any] = {"file_id": "doc-1", "file_unique_id": "ud-1"}
    if file_name is not None:
        body["file_name"] = file_name
    if mime_type is not None:
        body["mime_type"] = mime_type
    return _with_caption({"document": body}, caption)


def forwarded(sender_name: str = "Bob", *, date: float | None = None) -> dict[str, Any]:
    """Return the fields that mark a message as forwarded from a hidden user."""
    origin = {"type": "hidden_user", "sender_user_name": sender_name, "date": _timestamp(date)}
    return {"forward_origin": origin}


def _with_caption(fields: dict[str, Any], caption: str | None) -> dict[str, Any]:
    if caption is not None:
        fields["caption"] = caption
    return fields


# --- the server --------------------------------------------------------------------------


class FakeBotAPI:
    """A Telegram Bot API server on 127.0.0.1 that records calls and can be scripted."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        bot_username: str = "pacebot_test_bot",
        bot_first_name: str = "Pacebot",
    ) -> None:
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.bot_username = bot_username
        self.bot_user = user_dict(self.bot_id, bot_first_name, username=bot_username, is_bot=True)
        self.calls: list[ApiCall] = []
        self.failed_calls: list[ApiCall] = []  # calls answered with an error
        self.unauthorized: list[str] = []  # methods called with a wrong token
        self.commands: list[dict[str, Any]] = []
        self.reactions: list[tuple[int, int, list[str]]] = []  # chat, message, emoji set
        self.messages: dict[int, dict[str, Any]] = {}  # every message, by id
        self.confirmed_offset = 0  # updates below this id were confirmed by getUpdates
        self.dropped_updates: list[dict[str, Any]] = []  # kinds outside allowed_updates
        self.honour_allowed_updates = True  # False: deliver every kind, as old servers may
        self.files: dict[str, bytes] = {}  # what getFile and the file endpoint serve, by file_id
        self.file_sizes: dict[str, int] = {}  # a file_size getFile announces instead of the real
        self.file_paths: dict[str, str] = {}  # file_id → the file_path getFile gives
        self.downloads: list[str] = []  # file paths fetched from /file/bot<token>/
        self.voices: list[dict[str, Any]] = []  # each sendVoice: its fields, the upload's bytes
        # file_id: the status its download gets, and a page answered instead of JSON
        self.download_failures: dict[str, tuple[int, str | None]] = {}
        self._updates: list[dict[str, Any]] = []
        self._updates_in_order = True  # ids rise along _updates: confirming cuts a prefix
        self._chats: dict[int, dict[str, Any]] = {}
        self._topics: dict[tuple[int, int], dict[str, Any]] = {}  # live ones: root message
        self._blocked: dict[int, tuple[int, str]] = {}
        self._failures: dict[str, deque[_Failure]] = {}
        self._delays: dict[str, deque[float]] = {}
        self._next_message_id = 1
        self._next_update_id = 1
        self._new_update = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "getme": self._get_me,
            "deletewebhook": self._true,
            "getwebhookinfo": self._get_webhook_info,
            "getupdates": self._get_updates,
            "sendmessage": self._send_message,
            "sendchataction": self._send_chat_action,
            "setmycommands": self._set_my_commands,
            "getmycommands": self._get_my_commands,
            "getfile": self._get_file,
            "setmessagereaction": self._set_message_reaction,
            "sendsticker": self._send_sticker,
            "sendvoice": self._send_voice,
            "close": self._true,
            "logout": self._true,
        }

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
        await self.start_listening()

    async def close(self) -> None:
        """Stop listening and drop open connections."""
        await self.stop_listening()

    async def start_listening(self) -> None:
        """Accept connections again, on the same port as before."""
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_route("*", "/{bot_token}/{method}", self._handle)
        app.router.add_get("/file/{bot_token}/{path:.+}", self._download)
        runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port, reuse_address=True)
        await site.start()
        self._runner = runner
        if not self._port:
            self._port = runner.addresses[0][1]

    async def stop_listening(self) -> None:
        """Refuse connections (and close open ones) until :meth:`start_listening`."""
        runner, self._runner = self._runner, None
        self._wake_pollers()  # long polls answer [] at once instead of holding shutdown
        if runner is not None:
            await runner.cleanup()

    @property
    def listening(self) -> bool:
        """Whether the server accepts connections now."""
        return self._runner is not None

    @property
    def port(self) -> int:
        """The TCP port, fixed at the first start."""
        return self._port

    @property
    def base_url(self) -> str:
        """The URL for ``ApplicationBuilder().base_url()`` (PTB appends the token)."""
        if not self._port:
            msg = "start the FakeBotAPI first"
            raise RuntimeError(msg)
        return f"http://127.0.0.1:{self._port}/bot"

    # --- what chatters do ----------------------------------------------------------------

    def push_message(
        self,
        chat_id: int,
        text: str | None = None,
        *,
        user_id: int = DEFAULT_USER_ID,
        first_name: str = DEFAULT_FIRST_NAME,
        last_name: str | None = None,
        username: str | None = None,
        is_bot: bool = False,
        chat_type: str = "private",
        title: str | None = None,
        reply_to: dict[str, Any] | int | None = None,
        entities: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        date: datetime | float | None = None,
        topic: int | None = None,
    ) -> int:
        """Queue a new message as an update; return its message id.

        ``reply_to`` is a message dict or the id of a message the fake knows (pushed, or
        sent by the bot). ``topic`` is a forum topic of the chat (:meth:`open_topic`): the
        message carries its thread and, unless it quotes another, the topic's root as
        Telegram does. See :func:`make_message` for the other arguments.
        """
        if topic is not None:
            root = self._topics[(chat_id, topic)]
            reply_to = root if reply_to is None else reply_to
            topic_fields = {"message_thread_id": topic, "is_topic_message": True}
            extra = {"chat": root["chat"], **topic_fields, **(extra or {})}
        message_id = self._take_message_id()
        if chat_type != "private" and title is None and chat_id in self._chats:
            title = self._chats[chat_id].get("title")
        message = make_message(
            message_id,
            chat_id,
            text,
            user_id=user_id,
            first_name=first_name,
            last_name=last_name,
            username=username,
            is_bot=is_bot,
            chat_type=chat_type,
            title=title,
            reply_to=self.message(reply_to) if isinstance(reply_to, int) else reply_to,
            entities=entities,
            extra=extra,
            date=date,
        )
        self._remember(message)
        self.push_update({"message": message})
        return message_id

    def open_topic(self, chat_id: int, name: str, *, title: str = "Test forum") -> int:
        """Open a topic in forum supergroup ``chat_id``; return its thread id.

        As on Telegram, the thread id is the id of the service message that opened it.
        """
        message_id = self._take_message_id()
        chat = {**chat_dict(chat_id, chat_type="supergroup", title=title), "is_forum": True}
        root = {
            "message_id": message_id,
            "from": user_dict(),
            "chat": chat,
            "date": int(time.time()),
            "message_thread_id": message_id,
            "is_topic_message": True,
            "forum_topic_created": {"name": name, "icon_color": 7322096},
        }
        self._remember(root)
        self._topics[(chat_id, message_id)] = root
        return message_id

    def delete_topic(self, chat_id: int, thread_id: int) -> None:
        """Delete a topic: sends into it fail with "message thread not found" from now on."""
        del self._topics[(chat_id, thread_id)]

    def push_edit(
        self,
        message_id: int,
        text: str,
        *,
        entities: list[dict[str, Any]] | None = None,
        edit_date: datetime | float | None = None,
    ) -> int:
        """Queue an edit of a known message to ``text``; return the update id."""
        message = copy.deepcopy(self.message(message_id))
        key = "text" if "text" in message else "caption"
        message[key] = text
        marked = auto_entities(text) if entities is None else entities
        message.pop("entities", None)
        message.pop("caption_entities", None)
        if marked:
            message["entities" if key == "text" else "caption_entities"] = marked
        message["edit_date"] = _timestamp(edit_date)
        self.messages[message_id] = message
        return self.push_update({"edited_message": message})

    def push_update(self, update: dict[str, Any]) -> int:
        """Queue a raw update (``update_id`` is assigned if missing); return its id."""
        update = dict(update)
        update.setdefault("update_id", self._next_update_id)
        if self._updates and update["update_id"] < self._updates[-1]["update_id"]:
            self._updates_in_order = False
        self._next_update_id = max(self._next_update_id, update["update_id"]) + 1
        self._updates.append(update)
        self._wake_pollers()
        return int(update["update_id"])

    def message(self, message_id: int) -> dict[str, Any]:
        """Return a message the fake knows (pushed, or sent by the bot)."""
        try:
            return self.messages[message_id]
        except KeyError:
            msg = f"the fake knows no message {message_id}"
            raise KeyError(msg) from None

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates queued and not yet confirmed by the client."""
        return list(self._updates)

    def add_file(
        self,
        file_id: str,
        data: bytes,
        *,
        announced_size: int | None = None,
        download_status: int = 200,
        error_page: str | None = None,
        path: str | None = None,
    ) -> None:
        """Serve ``data`` as the file behind ``file_id`` (``getFile``, then the download).

        Another ``download_status`` makes the download fail with it while ``getFile``
        still answers, as when the file is gone from the server's disk; the failure is
        Telegram's JSON, or ``error_page`` as a proxy in front of a server answers.
        ``path`` is its ``file_path`` (``photos/<id>.jpg`` unless told; a voice note's
        is ``voice/<id>.oga`` on Telegram).
        """
        self.files[file_id] = data
        self.file_paths[file_id] = path or f"photos/{file_id}.jpg"
        if announced_size is not None:
            self.file_sizes[file_id] = announced_size
        if download_status != 200:
            self.download_failures[file_id] = (download_status, error_page)

    # --- scripting -----------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        description: str,
        retry_after: int | None = None,
        migrate_to_chat_id: int | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with an error (nothing happens)."""
        failure = _Failure(status, description, retry_after, migrate_to_chat_id)
        self._failures.setdefault(method.casefold(), deque()).extend([failure] * times)

    def delay_next(self, method: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` late; the call itself takes effect."""
        self._delays.setdefault(method.casefold(), deque()).extend([seconds] * times)

    def block_chat(
        self,
        chat_id: int,
        *,
        status: int = 403,
        description: str = "Forbidden: bot was blocked by the user",
    ) -> None:
        """Refuse every send to ``chat_id`` from now on (403 unless told otherwise)."""
        self._blocked[chat_id] = (status, description)

    # --- what happened -------------------------------------------------------------------

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        """Return the fields of every call of ``method``, oldest first."""
        wanted = method.casefold()
        return [call.params for call in self.calls if call.method.casefold() == wanted]

    def sent_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Return the messages the bot sent (as the fake answered them), oldest first."""
        return [
            m
            for m in self.messages.values()
            if m["from"]["id"] == self.bot_id and (chat_id is None or m["chat"]["id"] == chat_id)
        ]

    def chat_actions(self, chat_id: int | None = None) -> list[str]:
        """Return the chat actions (``typing``...) accepted, oldest first."""
        return [
            params["action"]
            for params in self._accepted("sendChatAction")
            if chat_id is None or params["chat_id"] == chat_id
        ]

    async def wait_for(
        self,
        what: str | Callable[[], Any],
        *,
        count: int = 1,
        timeout: float = 2.0,  # noqa: ASYNC109 - the failure message names it
    ) -> Any:
        """Wait until ``count`` calls of method ``what`` arrived, or predicate ``what()`` holds.

        Return the calls' fields (for a method) or the predicate's truthy result; raise
        ``AssertionError`` naming what did happen after ``timeout`` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if isinstance(what, str):
                found: Any = self.calls_to(what)
                if len(found) >= count:
                    return found
            else:
                found = what()
                if found:
                    return found
            if loop.time() >= deadline:
                seen = Counter(call.method for call in self.calls)
                msg = (
                    f"gave up waiting for {what!r} (count={count}) after {timeout} s; "
                    f"calls so far: {dict(seen)}"
                )
                raise AssertionError(msg)
            await asyncio.sleep(0.005)

    # --- HTTP --------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.match_info["bot_token"] != f"bot{self.token}":
            self.unauthorized.append(method)
            return _error(401, "Unauthorized")
        params = await _read_params(request)
        call = ApiCall(method, params, time.monotonic())
        self.calls.append(call)
        response = await self._answer(call)
        delays = self._delays.get(call.method.casefold())
        if delays:
            # The work is done; only the answer is late, as when a client times out.
            await asyncio.sleep(delays.popleft())
        return response

    async def _answer(self, call: ApiCall) -> web.Response:
        key = call.method.casefold()
        failures = self._failures.get(key)
        if failures:
            failure = failures.popleft()
            self.failed_calls.append(call)
            return _error(
                failure.status,
                failure.description,
                retry_after=failure.retry_after,
                migrate_to_chat_id=failure.migrate_to_chat_id,
            )
        handler = self._methods.get(key)
        if handler is None:
            self.failed_calls.append(call)
            return _error(404, "Not Found")
        try:
            result = await handler(call.params)
        except _ApiError as error:
            self.failed_calls.append(call)
            return _error(error.status, error.description)
        return web.json_response({"ok": True, "result": result})

    def _accepted(self, method: str) -> list[dict[str, Any]]:
        """Fields of the calls of ``method`` that were answered with success."""
        failed = {id(call) for call in self.failed_calls}
        wanted = method.casefold()
        return [
            call.params
            for call in self.calls
            if call.method.casefold() == wanted and id(call) not in failed
        ]

    # --- methods -------------------------------------------------------------------------

    async def _get_me(self, params: dict[str, Any]) -> Any:
        return {
            **self.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _true(self, params: dict[str, Any]) -> Any:
        return True

    async def _get_webhook_info(self, params: dict[str, Any]) -> Any:
        return {"url": "", "has_custom_certificate": False, "pending_update_count": 0}

    async def _get_updates(self, params: dict[str, Any]) -> Any:
        offset = int(params.get("offset") or 0)
        if offset > 0:  # confirms every update below the offset
            self.confirmed_offset = max(self.confirmed_offset, offset)
            self._confirm_below(offset)
        limit = int(params.get("limit") or 100)
        allowed = params.get("allowed_updates") or None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + float(params.get("timeout") or 0)
        while True:
            ready = self._page(limit, allowed if self.honour_allowed_updates else None)
            remaining = deadline - loop.time()
            if ready or remaining <= 0 or not self.listening:
                return ready
            event = self._new_update
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    def _confirm_below(self, offset: int) -> None:
        """Forget the updates below ``offset``: a prefix while ids rise (a backlog of tens
        of thousands costs a bisect per poll, not a pass over all of it)."""
        if self._updates_in_order:
            del self._updates[: bisect.bisect_left(self._updates, offset, key=_update_id)]
        else:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]

    def _page(self, limit: int, allowed: Iterable[str] | None) -> list[dict[str, Any]]:
        """Return the next ``limit`` updates of the ``allowed`` kinds.

        As Telegram does, the unasked kinds met on the way are dropped for good; those
        behind the page wait until a poll reaches them.
        """
        if not allowed:
            return self._updates[:limit]
        page: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for update in self._updates:
            if len(page) == limit:
                break
            (page if _is_allowed(update, allowed) else dropped).append(update)
        if dropped:
            self.dropped_updates += dropped
            gone = {id(update) for update in dropped}
            self._updates = [u for u in self._updates if id(u) not in gone]
        return page

    async def _send_message(self, params: dict[str, Any]) -> Any:
        chat_id = self._target_chat(params)
        text = params.get("text")
        if not text:
            raise _ApiError(400, "Bad Request: message text is empty")
        if len(text) > TEXT_LIMIT:
            raise _ApiError(400, "Bad Request: message is too long")
        quoted = self._quoted(chat_id, params)
        message: dict[str, Any] = {
            "message_id": self._take_message_id(),
            "from": dict(self.bot_user),
            "chat": self._chat_for(chat_id),
            "date": int(time.time()),
            "text": text,
            **self._thread(chat_id, params, quoted),
        }
        if params.get("entities"):
            message["entities"] = params["entities"]
        if quoted is not None:
            parent = dict(quoted)
            parent.pop("reply_to_message", None)
            message["reply_to_message"] = parent
        self._remember(message)
        return message

    async def _send_chat_action(self, params: dict[str, Any]) -> Any:
        self._thread(self._target_chat(params), params, None)
        if not params.get("action"):
            raise _ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    async def _send_sticker(self, params: dict[str, Any]) -> Any:
        """Send a sticker by the ``file_id`` of one this fake delivered; others are refused."""
        chat_id = self._target_chat(params)
        file_id = params.get("sticker")
        known = {
            m["sticker"]["file_id"]: m["sticker"] for m in self.messages.values() if "sticker" in m
        }
        if not isinstance(file_id, str) or file_id not in known:
            raise _ApiError(400, "Bad Request: wrong file identifier/HTTP URL specified")
        message: dict[str, Any] = {
            "message_id": self._take_message_id(),
            "from": dict(self.bot_user),
            "chat": self._chat_for(chat_id),
            "date": int(time.time()),
            "sticker": dict(known[file_id]),
            **self._thread(chat_id, params, None),
        }
        self._remember(message)
        return message

    async def _send_voice(self, params: dict[str, Any]) -> Any:
        """Send an uploaded voice note, as Telegram does: an empty upload is refused."""
        chat_id = self._target_chat(params)
        upload = params.get("voice")
        if not isinstance(upload, dict) or not upload.get("data"):
            raise _ApiError(400, "Bad Request: file must be non-empty")
        self.voices.append(params)
        message: dict[str, Any] = {
            "message_id": self._take_message_id(),
            "from": dict(self.bot_user),
            "chat": self._chat_for(chat_id),
            "date": int(time.time()),
            "voice": {
                "file_id": f"sent-voice-{len(self.voices)}",
                "file_unique_id": f"usv-{len(self.voices)}",
                "duration": int(params.get("duration") or 0),
                "mime_type": "audio/ogg",
                "file_size": len(upload["data"]),
            },
            **self._thread(chat_id, params, None),
        }
        self._remember(message)
        return message

    async def _set_message_reaction(self, params: dict[str, Any]) -> Any:
        """Set the bot's reaction as the Bot API does: on a known message of the chat, with
        an emoji of its reaction set (a custom emoji id that is not a number is refused)."""
        chat_id = self._target_chat(params)
        message = self.messages.get(int(params.get("message_id") or 0))
        if message is None or message["chat"]["id"] != chat_id:
            raise _ApiError(400, "Bad Request: message to react not found")
        reaction = params.get("reaction") or []
        for kind in reaction:
            if (
                kind.get("type") == "custom_emoji"
                and not str(kind.get("custom_emoji_id")).isdigit()
            ):
                raise _ApiError(
                    400,
                    'Bad Request: Can\'t parse ReactionType: Field "custom_emoji_id" must be'
                    " a valid Number",
                )
            if kind.get("type") == "emoji" and kind.get("emoji") not in REACTION_EMOJI:
                raise _ApiError(400, "Bad Request: REACTION_INVALID")
        self.reactions.append((chat_id, message["message_id"], [k.get("emoji") for k in reaction]))
        return True

    async def _set_my_commands(self, params: dict[str, Any]) -> Any:
        self.commands = list(params.get("commands") or [])
        return True

    async def _get_my_commands(self, params: dict[str, Any]) -> Any:
        return self.commands

    async def _get_file(self, params: dict[str, Any]) -> Any:
        file_id = params.get("file_id")
        if file_id not in self.files:
            raise _ApiError(400, "Bad Request: invalid file_id")
        size = self.file_sizes.get(file_id, len(self.files[file_id]))
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": size,
            "file_path": self.file_paths[file_id],
        }

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["bot_token"] != f"bot{self.token}":
            self.unauthorized.append("file")
            return web.Response(status=401, text="Unauthorized")
        path = request.match_info["path"]
        self.downloads.append(path)
        by_path = {file_path: file_id for file_id, file_path in self.file_paths.items()}
        file_id = by_path.get(path, "")
        if file_id not in self.files:
            return web.Response(status=404, text="Not Found")
        if file_id in self.download_failures:  # Telegram's file server answers errors in JSON
            status, page = self.download_failures[file_id]
            if page is not None:
                return web.Response(status=status, text=page, content_type="text/html")
            return _error(status, HTTPStatus(status).phrase)
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    # --- helpers -------------------------------------------------------------------------

    def _target_chat(self, params: dict[str, Any]) -> int:
        chat_id = params.get("chat_id")
        if not isinstance(chat_id, int):
            raise _ApiError(400, "Bad Request: chat not found")
        if chat_id in self._blocked:
            raise _ApiError(*self._blocked[chat_id])
        return chat_id

    def _thread(
        self, chat_id: int, params: dict[str, Any], quoted: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Return the topic fields of a message sent with ``params``: into the topic named
        by ``message_thread_id`` (a topic it does not know is refused), else into the topic
        of the message it quotes, as Telegram does."""
        thread = params.get("message_thread_id")
        if thread is None:
            if quoted is None or not quoted.get("is_topic_message"):
                return {}
            thread = quoted["message_thread_id"]
        elif (chat_id, thread) not in self._topics:
            raise _ApiError(400, "Bad Request: message thread not found")
        return {"message_thread_id": thread, "is_topic_message": True}

    def _quoted(self, chat_id: int, params: dict[str, Any]) -> dict[str, Any] | None:
        reply = params.get("reply_parameters")
        if reply is None and params.get("reply_to_message_id") is not None:
            reply = {"message_id": params["reply_to_message_id"]}
        if not isinstance(reply, dict):
            return None
        quoted = self.messages.get(int(reply.get("message_id", 0)))
        if quoted is not None and quoted["chat"]["id"] == chat_id:
            return quoted
        if reply.get("allow_sending_without_reply"):
            return None
        raise _ApiError(400, "Bad Request: message to be replied not found")

    def _chat_for(self, chat_id: int) -> dict[str, Any]:
        if chat_id in self._chats:
            return dict(self._chats[chat_id])
        return chat_dict(chat_id, chat_type="private" if chat_id > 0 else "supergroup")

    def _remember(self, message: dict[str, Any]) -> None:
        self.messages[message["message_id"]] = message
        self._chats[message["chat"]["id"]] = message["chat"]

    def _take_message_id(self) -> int:
        message_id = self._next_message_id
        self._next_message_id += 1
        return message_id

    def _wake_pollers(self) -> None:
        event, self._new_update = self._new_update, asyncio.Event()
        event.set()


class _ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


def _error(
    status: int,
    description: str,
    *,
    retry_after: int | None = None,
    migrate_to_chat_id: int | None = None,
) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    parameters: dict[str, Any] = {}
    if retry_after is not None:
        parameters["retry_after"] = retry_after
    if migrate_to_chat_id is not None:
        parameters["migrate_to_chat_id"] = migrate_to_chat_id
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)


def _update_id(update: dict[str, Any]) -> int:
    return int(update["update_id"])


def _is_allowed(update: dict[str, Any], allowed: Iterable[str] | None) -> bool:
    if not allowed:
        return True
    return any(kind in update for kind in allowed)


async def _read_params(request: web.Request) -> dict[str, Any]:
    """Decode a request's fields the way the Bot API does."""
    params: dict[str, Any] = {name: _decode_field(name, v) for name, v in request.query.items()}
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        body = await request.json()
        if isinstance(body, dict):
            params.update(body)
        return params
    form = await request.post()
    for name, value in form.items():
        if isinstance(value, str):
            params[name] = _decode_field(name, value)
        elif isinstance(value, web.FileField):  # an uploaded file
            data = value.file.read()
            params[name] = {"filename": value.filename, "size": len(data), "data": data}
        else:
            params[name] = _decode_field(name, bytes(value).decode())
    return params


def _decode_field(name: str, value: str) -> Any:
    if name in _STRING_FIELDS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
