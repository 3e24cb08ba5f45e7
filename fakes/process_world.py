"""A real ``pacebot run`` process in a world of fakes, to kill and start again at will.

The world holds the fakes of every wire (the Bot API, a OneBot client, the QQ Open
Platform of the official bot, an LLM server scripted by markers in the chatters' words,
all in the test's event loop), a config for them, a seeded random source, and the chats
of Telegram, QQ and official QQ bot chatters; it starts the
process, SIGKILLs or SIGTERMs it, says things as chatters, and reads the SQLite file back
as another process would. ``test_kill.py`` runs its kill suite in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from aiohttp import web
from websockets.exceptions import ConnectionClosed, WebSocketException

from bot.days import chat_day, chat_day_bounds
from fakes.bot_api import FakeBotAPI
from fakes.harness import free_port
from fakes.onebot import FakeOneBot, at, text
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform, openid

SEED = 20260515
LLM_KEY = "sk-kill-suite-llm-key-5f2a9c71e3"
BOT_TOKEN = "987654:KILL-suite-telegram-token-xyz"
ONEBOT_TOKEN = "kill-suite-onebot-token-77aa"
QQBOT_SECRET = "kill-suite-qqbot-secret-3c9d"
QQ_SELF_ID = 10001
ADMIN = 9001
ZONE = ZoneInfo("Asia/Shanghai")
BOUNDARY = time(4, 0)
TAG_RE = re.compile(r"\bk\d{4}\b")
NEW_BLOCK = "New messages (answer these):"


# --- the LLM: scripted by markers in the chatters' words ---------------------------------


def new_block(body: dict[str, Any]) -> str:
    """Return the part of a reply request's prompt that holds the messages to answer."""
    prompt = str(body["messages"][-1]["content"])
    return prompt.split(NEW_BLOCK, 1)[1] if NEW_BLOCK in prompt else ""


class ScriptedLLMServer(FakeLLMServer):
    """Answer every request by what it asks: replies, day summaries, splitting.

    A new message containing ``[hang]`` makes that reply request hang once (until the
    server closes); ``[multi]`` asks for three paced replies. ``hang_summaries`` makes
    every summary request hang. Reply texts are unique (``r<request>.<n>``), so a reply
    sent twice shows up in the fakes' records.
    """

    def __init__(self) -> None:
        super().__init__()
        self.hang_summaries = False
        self.hung: list[str] = []  # kinds of the requests that hung, in order
        self.kinds: list[str] = []
        self._hung_tags: set[str] = set()
        self._numbers = itertools.count(1)

    async def wait_for_hang(
        self, count: int, *, kind: str | None = None, within_s: float = 10.0
    ) -> None:
        """Wait until ``count`` requests (of ``kind``, if given) have hung in all."""

        def hung() -> int:
            return len(self.hung) if kind is None else self.hung.count(kind)

        async with asyncio.timeout(within_s), self._arrived:
            await self._arrived.wait_for(lambda: hung() >= count)

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        system = str(body["messages"][0]["content"])
        if "You keep the diary" in system:
            kind = "summary"
        elif "You turn a chatbot's draft" in system:
            kind = "splitter"
        else:
            kind = "reply"
        number = next(self._numbers)
        new = new_block(body) if kind == "reply" else ""
        hang = kind == "summary" and self.hang_summaries
        if kind == "reply" and "[hang]" in new:
            # Only the [hang] messages count: asked again after the kill, with or without
            # newer messages beside it, the batch is answered.
            lines = [line for line in new.splitlines() if "[hang]" in line]
            tags = frozenset(tag for line in lines for tag in TAG_RE.findall(line))
            hang = not tags <= self._hung_tags
            self._hung_tags |= tags
        async with self._arrived:
            self.requests.append(body)
            self.kinds.append(kind)
            if hang:
                self.hung.append(kind)
            self._arrived.notify_all()
        if hang:
            await self._closing.wait()
            return web.json_response({"error": {"message": "closing"}}, status=503)
        if kind == "summary":
            content = json.dumps(
                {"summary": f"s{number} 今天聊了很多。", "topics": ["闲聊"], "keywords": ["聊天"]},
                ensure_ascii=False,
            )
        elif kind == "splitter":
            content = json.dumps({"replies": [{"content": f"r{number}.0 拆分"}]})
        else:
            content = json.dumps(self._plan(body, number, new), ensure_ascii=False)
        return web.json_response(self._completion(body, content, "stop"))

    def _plan(self, body: dict[str, Any], number: int, new: str) -> dict[str, Any]:
        nudged = "You returned no replies" in str(body["messages"][-1]["content"])
        ids = re.findall(r"^\[#(\d+) ", new, re.MULTILINE)
        if "?" not in new and "？" not in new and "[multi]" not in new and not nudged:
            return {"replies": []}  # nothing asked: silence, where the bot allows it
        count = 3 if "[multi]" in new else 1
        replies: list[dict[str, Any]] = [
            {"content": f"r{number}.{n} 好呀", "send_delay_seconds": 0.4 if n else 0}
            for n in range(count)
        ]
        if ids and number % 3 == 0:
            replies[0]["reply_to"] = ids[-1]
        return {"replies": replies}


# --- the conversation ----------------------------------------------------------------------


@dataclass(frozen=True)
class Chat:
    platform: str  # "telegram", "qq" or "qqbot"
    group: bool
    chat_id: int | str  # an openid on the official QQ bot
    members: tuple[int | str, ...]

    @property
    def key(self) -> str:
        return f"{self.platform}:{'group' if self.group else 'private'}:{self.chat_id}"


def make_chats() -> list[Chat]:
    chats = [Chat("telegram", False, 2001 + n, (2001 + n,)) for n in range(7)]
    chats += [
        Chat("telegram", True, -1002001 - n, (3001 + 3 * n, 3002 + 3 * n, 3003 + 3 * n))
        for n in range(7)
    ]
    chats += [Chat("qq", False, 4001 + n, (4001 + n,)) for n in range(4)]
    chats += [Chat("qq", True, 5001 + n, (6001 + 3 * n, 6002 + 3 * n)) for n in range(4)]
    chats += [Chat("qqbot", False, openid(f"c2c-{n}"), (openid(f"c2c-{n}"),)) for n in range(3)]
    chats += [
        Chat("qqbot", True, openid(f"group-{n}"), (openid(f"m{n}-a"), openid(f"m{n}-b")))
        for n in range(3)
    ]
    return chats


STATEMENTS = (
    "今天天气不错",
    "刚下班",
    "我在地铁上",
    "晚饭吃了面",
    "周末想去爬山",
    "that movie was fine",
    "just got home",
    "زبان فارسی",
    "😀😀",
    "100% {sure} %s",
)
QUESTIONS = ("你吃了吗？", "明天下雨吗?", "要不要一起去？", "is it open?", "你觉得呢？")


@dataclass
class Pushed:
    """One chatter message the test handed to a platform fake."""

    tag: str
    chat: Chat
    message_id: str
    at: float  # loop time it was handed over
    update_id: int | None = None  # Telegram
    delivered: bool = True  # QQ: the event reached the socket (else only OneBot's history)


@dataclass
class Kill:
    kind: str
    how: str
    waiting: int = 0
    open_batches: int = 0
    scheduled: int = 0
    sending: int = 0
    summaries_hanging: bool = False


@dataclass
class World:
    tmp: Path
    config: Path
    database: Path
    stderr: Path
    api: FakeBotAPI
    llm: ScriptedLLMServer
    onebot: FakeOneBot
    qqbot: FakeQQOpenPlatform
    rng: random.Random
    chats: list[Chat]
    pushed: list[Pushed] = field(default_factory=list)
    sent_while_down: list[Pushed] = field(default_factory=list)  # at ``qq_while_down``
    commands: list[tuple[Chat, str]] = field(default_factory=list)  # (chat, message id)
    cut_commands: list[tuple[Chat, str]] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    down: list[tuple[float, float]] = field(default_factory=list)  # (SIGKILL, reconnect)
    yesterday_chats: set[str] = field(default_factory=set)
    process: asyncio.subprocess.Process | None = None
    hung_at_start: int = 0  # LLM requests that had hung when the process started
    starts: int = 0
    tags: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    qq_ids: Iterator[int] = field(default_factory=lambda: itertools.count(700_001))

    # -- the process ----------------------------------------------------------------------

    async def start(self, *, ready: bool = True) -> None:
        polls = len(self.api.calls_to("getUpdates"))
        env = {
            **os.environ,
            "PACEBOT_LLM_API_KEY": LLM_KEY,
            "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
            "ONEBOT_ACCESS_TOKEN": ONEBOT_TOKEN,
            "QQ_BOT_SECRET": QQBOT_SECRET,
        }
        with self.stderr.open("ab") as err:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "adapters.cli",
                "run",
                "-c",
                str(self.config),
                "--log-level",
                "DEBUG",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        self.starts += 1
        self.hung_at_start = len(self.llm.hung)
        sessions = self.qqbot_sessions()
        if ready:
            await self.api.wait_for(
                lambda: len(self.api.calls_to("getUpdates")) > polls, timeout=30
            )
            await self.connect_onebot()
            await self.qqbot.wait_until(lambda: self.qqbot_sessions() > sessions, within_s=30)

    def qqbot_sessions(self) -> int:
        """Count the gateway sessions the official bot opened or resumed so far."""
        return len(self.qqbot.identifies) + sum(r.accepted for r in self.qqbot.resumes)

    async def connect_onebot(self) -> None:
        async with asyncio.timeout(30):
            while True:
                try:
                    await self.onebot.connect()
                except (OSError, WebSocketException, TimeoutError):
                    await asyncio.sleep(0.02)
                    continue
                if self.down and self.down[-1][1] == float("inf"):
                    self.down[-1] = (self.down[-1][0], asyncio.get_running_loop().time())
                return

    async def kill(self, kind: str) -> Kill:
        process = self.process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        now = asyncio.get_running_loop().time()
        if self.down and self.down[-1][1] == float("inf"):  # killed before OneBot was back
            self.down[-1] = (self.down[-1][0], now)
        self.down.append((now, float("inf")))
        await process.wait()
        self.process = None
        await self.onebot.close()
        state = self.state()
        kill = Kill(
            kind,
            "SIGKILL",
            waiting=state["waiting"],
            open_batches=state["open"],
            scheduled=state["scheduled"],
            sending=state["sending"],
            summaries_hanging="summary" in self.llm.hung[self.hung_at_start :],
        )
        self.kills.append(kill)
        return kill

    async def terminate(self) -> int:
        process = self.process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)
        self.process = None
        await self.onebot.close()
        return code

    # -- the database ---------------------------------------------------------------------

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        if not self.database.exists():
            return []
        db = sqlite3.connect(self.database, timeout=5)
        try:
            return list(db.execute(sql, args))
        finally:
            db.close()

    def state(self) -> dict[str, int]:
        [(waiting, open_, scheduled, sending)] = self.query(
            "SELECT (SELECT count(*) FROM messages WHERE from_bot = 0 AND batch_id IS NULL),"
            " (SELECT count(*) FROM batches WHERE state = 'open'),"
            " (SELECT count(*) FROM outbox WHERE state = 'scheduled'),"
            " (SELECT count(*) FROM outbox WHERE state = 'sending')"
        ) or [(0, 0, 0, 0)]
        return {"waiting": waiting, "open": open_, "scheduled": scheduled, "sending": sending}

    def stored_tags(self) -> set[str]:
        rows = self.query("SELECT text FROM messages WHERE from_bot = 0")
        return {tag for (words,) in rows for tag in TAG_RE.findall(words)}

    async def wait_stored(self, tags: set[str], *, within_s: float = 20.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while not tags <= self.stored_tags():
            assert loop.time() < deadline, f"not stored: {sorted(tags - self.stored_tags())}"
            await asyncio.sleep(0.005)

    # -- chatters -------------------------------------------------------------------------

    def yesterday_ts(self) -> float:
        today = chat_day(datetime.now(UTC), zone=ZONE, boundary=BOUNDARY)
        start, _ = chat_day_bounds(today - timedelta(days=1), zone=ZONE, boundary=BOUNDARY)
        return (start + timedelta(hours=self.rng.uniform(1, 20))).timestamp()

    async def say(
        self,
        chat: Chat,
        *,
        marker: str = "",
        addressed: bool | None = None,
        question: bool | None = None,
        yesterday: bool = False,
    ) -> Pushed:
        rng = self.rng
        tag = f"k{next(self.tags):04d}"
        ask = rng.random() < 0.35 if question is None else question
        words = rng.choice(QUESTIONS if ask else STATEMENTS)
        body = f"{tag} {words}{marker}"
        sender = rng.choice(chat.members)
        addressed = (rng.random() < 0.3) if addressed is None else addressed
        when = self.yesterday_ts() if yesterday else None
        loop = asyncio.get_running_loop()
        if chat.platform == "qqbot":
            pushed = await self._say_qqbot(chat, body, str(sender), addressed=addressed)
        elif chat.platform == "telegram":
            if chat.group and addressed:
                body = rng.choice([f"@{self.api.bot_username} {body}", f"小满 {body}"])
            message_id = self.api.push_message(
                chat.chat_id,
                body,
                user_id=sender,
                first_name=f"u{sender}",
                chat_type="supergroup" if chat.group else "private",
                title=f"群{chat.chat_id}" if chat.group else None,
                date=when,
            )
            update_id = self.api.pending_updates[-1]["update_id"]
            pushed = Pushed(tag, chat, str(message_id), loop.time(), update_id=update_id)
        else:
            pushed = await self._say_qq(chat, body, sender, addressed=addressed, when=when)
        pushed.tag = tag
        self.pushed.append(pushed)
        if yesterday:
            self.yesterday_chats.add(chat.key)
        return pushed

    async def _say_qqbot(self, chat: Chat, body: str, sender: str, *, addressed: bool) -> Pushed:
        """Say as an official QQ bot chatter: delivered now, or kept for a Resume."""
        loop = asyncio.get_running_loop()
        target = str(chat.chat_id)
        if not chat.group:
            said = await self.qqbot.c2c_message(target, body, username=f"b{sender[:4]}")
        elif addressed:
            said = await self.qqbot.group_at(target, sender, body, username=f"b{sender[:4]}")
        else:
            said = await self.qqbot.group_message(target, sender, body, username=f"b{sender[:4]}")
        return Pushed("", chat, said.message_id, loop.time(), delivered=said.delivery != "withheld")

    async def _say_qq(
        self, chat: Chat, body: str, sender: int, *, addressed: bool, when: float | None
    ) -> Pushed:
        """Send as a QQ chatter: into OneBot's history, and to the bot if it is connected."""
        loop = asyncio.get_running_loop()
        stamp = int(when) if when is not None else None
        message_id = next(self.qq_ids)
        try:
            if chat.group:
                message = [at(QQ_SELF_ID), text(" " + body)] if addressed else body
                await self.onebot.send_group_message(
                    chat.chat_id,
                    sender,
                    message,
                    card=f"q{sender}",
                    time=stamp,
                    message_id=message_id,
                )
            else:
                await self.onebot.send_private_message(
                    sender, body, nickname=f"q{sender}", time=stamp, message_id=message_id
                )
        except (RuntimeError, ConnectionClosed):
            return Pushed("", chat, str(message_id), loop.time(), delivered=False)
        return Pushed("", chat, str(message_id), loop.time())

    async def command(self, chat: Chat, words: str, *, sender: int, cut: bool = False) -> None:
        """Send a command; ``cut`` for one the test kills before it can answer."""
        if chat.platform == "telegram":
            message_id = self.api.push_message(chat.chat_id, words, user_id=sender)
        else:
            try:
                message_id = await self.onebot.send_private_message(sender, words)
            except (RuntimeError, ConnectionClosed):
                return
        (self.cut_commands if cut else self.commands).append((chat, str(message_id)))

    def answered_commands(self) -> int:
        """Count the Telegram commands that got their (quoting) answer."""
        quoted = {
            (call.get("chat_id"), (call.get("reply_parameters") or {}).get("message_id"))
            for call in self.api.calls_to("sendMessage")
        }
        return sum((chat.chat_id, int(message_id)) in quoted for chat, message_id in self.commands)

    async def wave(self, count: int) -> list[Pushed]:
        """Let ``count`` messages arrive in bursts over several chats."""
        pushed: list[Pushed] = []
        while len(pushed) < count:
            chat = self.rng.choice(self.chats)
            for _ in range(min(self.rng.randint(1, 5), count - len(pushed))):
                pushed.append(await self.say(chat))
                if self.rng.random() < 0.3:
                    await asyncio.sleep(self.rng.uniform(0, 0.01))
        return pushed


def write_config(
    tmp: Path, llm: ScriptedLLMServer, api: FakeBotAPI, qqbot: FakeQQOpenPlatform, port: int
) -> Path:
    path = tmp / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"
timezone = "Asia/Shanghai"
admins = ["telegram:{ADMIN}", "qq:{ADMIN}"]

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.12
max_wait_s = 0.6
max_delay_s = 0.5
typing_chars_per_s = 1000.0
stale_after_s = 600.0

[llm]
base_url = "{llm.base_url}"
timeout_s = 30.0
max_retries = 0

[memory]
day_boundary = "04:00"
catch_up_days = 2

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[qq]
enabled = true
host = "127.0.0.1"
port = {port}
backfill_count = 150  # a 100-event burst is more than the default 30

[qq_official]
enabled = true
app_id = "{qqbot.app_id}"
api_base = "{qqbot.api_base}"
auth_base = "{qqbot.auth_url}"
""",
        encoding="utf-8",
    )
    return path


@contextlib.asynccontextmanager
async def world(
    tmp_path: Path,
    *,
    model: Callable[[], ScriptedLLMServer] = ScriptedLLMServer,
    chats: list[Chat] | None = None,
    seed: int = SEED,
    extra_config: str = "",
) -> AsyncIterator[World]:
    """The fakes and a config for ``pacebot run``: the scripted ``model``, the kill
    suite's chats (or ``chats``), and ``extra_config`` added to the config file."""
    port = free_port()
    async with (
        model() as llm,
        FakeBotAPI(token=BOT_TOKEN) as api,
        FakeQQOpenPlatform(secret=QQBOT_SECRET) as qqbot,
    ):
        onebot = FakeOneBot(
            f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=QQ_SELF_ID, access_token=ONEBOT_TOKEN
        )
        config = write_config(tmp_path, llm, api, qqbot, port)
        config.write_text(config.read_text("utf-8") + extra_config, encoding="utf-8")
        here = World(
            tmp=tmp_path,
            config=config,
            database=tmp_path / "data" / "pacebot.sqlite3",
            stderr=tmp_path / "stderr.log",
            api=api,
            llm=llm,
            onebot=onebot,
            qqbot=qqbot,
            rng=random.Random(seed),
            chats=make_chats() if chats is None else chats,
        )
        for chat in here.chats:
            if chat.platform == "qqbot" and chat.group:  # the owners grant every message
                qqbot.grant_all_messages(str(chat.chat_id))
        try:
            yield here
        finally:
            if here.process is not None and here.process.returncode is None:
                here.process.kill()
                await here.process.wait()
            await onebot.close()


def sent_texts(w: World) -> list[str]:
    """Every text the bot handed to a platform (a send the platform saw counts)."""
    texts = [str(call["text"]) for call in w.api.calls_to("sendMessage")]
    for action in ("send_private_msg", "send_group_msg"):
        for call in w.onebot.calls_of(action):
            texts += [
                str(seg["data"]["text"]) for seg in call.params["message"] if seg["type"] == "text"
            ]
    texts += [str(sent.content) for sent in w.qqbot.sends if sent.code is None and sent.content]
    return texts
