"""`pacebot run` keeps its promises across SIGKILL: Telegram and QQ, real process, real time.

The machinery of the kill suite (``tests/test_kill.py``) drives a real ``pacebot run`` with
Telegram and QQ enabled against the local fakes. The chatters ask for a reminder a few
seconds away; the process is killed while it waits, while its LLM call is on the wire, or
after it was sent, and started again on the same data directory. A reminder arrives once,
at its time; one gone stale while the bot was down never does; an opener comes once after
a silence, and never in a quieted chat. Due times are seconds away, not hours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from bot.prompt import REASON_HEADING
from fakes.process_world import (
    BOT_TOKEN,
    LLM_KEY,
    ONEBOT_TOKEN,
    Chat,
    ScriptedLLMServer,
    World,
    sent_texts,
    world,
)

TELEGRAM = Chat("telegram", False, 2001, (2001,))
QQ = Chat("qq", False, 4001, (4001,))
REMINDER = "该喝水啦"
OPENER = "在干嘛呢"
REMIND_RE = re.compile(r"\[remind (\d+)\]")


class PromisingLLM(ScriptedLLMServer):
    """The kill suite's scripted model, which also promises and keeps reminders.

    A new message holding ``[remind N]`` is answered with a text and a reminder due in N
    seconds; an initiative batch with a unique text; ``hang_initiative`` makes the next
    initiative request hang until the server closes.
    """

    def __init__(self) -> None:
        super().__init__()
        self.hang_initiative = False
        self.initiatives: list[str] = []  # "reminder" / "opener", per request

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = str(body["messages"][-1]["content"])
        if REASON_HEADING not in prompt:
            return await super()._chat_completions(request)
        kind = "reminder" if "reminder you promised" in prompt else "opener"
        number = next(self._numbers)
        hang, self.hang_initiative = self.hang_initiative, False
        async with self._arrived:
            self.requests.append(body)
            self.initiatives.append(kind)
            self.hung += ["initiative"] if hang else []
            self._arrived.notify_all()
        if hang:
            await self._closing.wait()
            return web.json_response({"error": {"message": "closing"}}, status=503)
        words = REMINDER if kind == "reminder" else OPENER
        content = json.dumps({"replies": [{"content": f"r{number}.0 {words}"}]}, ensure_ascii=False)
        return web.json_response(self._completion(body, content, "stop"))

    def _plan(self, body: dict[str, Any], number: int, new: str) -> dict[str, Any]:
        asked = [int(n) for n in REMIND_RE.findall(new)]
        if not asked:
            return super()._plan(body, number, new)
        return {
            "replies": [
                {"content": f"r{number}.0 好的，到时候提醒你"},
                {"later": {"in_seconds": asked[0], "note": "提醒喝水", "kind": "remind"}},
            ]
        }


def promising_world(tmp_path: Path, extra: str = "") -> AbstractAsyncContextManager[World]:
    """A kill-suite world whose model keeps promises; ``extra`` is added to the config."""
    return world(tmp_path, model=PromisingLLM, chats=[TELEGRAM, QQ], seed=27, extra_config=extra)


def model(w: World) -> PromisingLLM:
    """The world's model, which keeps promises."""
    assert isinstance(w.llm, PromisingLLM)
    return w.llm


def said(w: World, words: str) -> dict[str, int]:
    """How often each platform was sent a text holding ``words``."""
    telegram = [m["text"] for m in w.api.sent_messages(TELEGRAM.chat_id)]
    qq = [
        seg["data"]["text"]
        for call in w.onebot.calls_of("send_private_msg")
        for seg in call.params["message"]
        if seg["type"] == "text"
    ]
    return {"telegram": sum(words in t for t in telegram), "qq": sum(words in t for t in qq)}


async def until(condition: Callable[[], object], *, within_s: float = 20.0) -> None:
    async with asyncio.timeout(within_s):
        while not condition():  # noqa: ASYNC110 - polling the fakes and the file
            await asyncio.sleep(0.02)


def later_states(w: World) -> list[str]:
    return [state for (state,) in w.query("SELECT state FROM later_items ORDER BY id")]


def assert_clean_logs(w: World) -> None:
    """No traceback and no secret in any log line of any run."""
    logs = w.stderr.read_text("utf-8", "replace")
    for path in (w.tmp / "data" / "logs").glob("*.log*"):
        logs += path.read_text("utf-8", "replace")
    secrets = [LLM_KEY, BOT_TOKEN, ONEBOT_TOKEN]
    assert [s for s in secrets if s in logs or quote(s, safe="") in logs] == []
    assert "Traceback" not in logs


async def answered_after_restart(w: World, chats: tuple[Chat, ...]) -> None:
    """Say something in each of ``chats`` and wait for the answers: a chat's sends keep
    their order, so any reply a restart wrongly sent again went out before these."""
    before = {chat: len(sent_to(w, chat)) for chat in chats}
    for chat in chats:
        await w.say(chat, question=True)
    await until(lambda: all(len(sent_to(w, chat)) > before[chat] for chat in chats))


def sent_to(w: World, chat: Chat) -> list[str]:
    """The texts the bot sent to ``chat``."""
    if chat.platform == "telegram":
        return [str(m["text"]) for m in w.api.sent_messages(chat.chat_id)]
    return [
        str(seg["data"]["text"])
        for call in w.onebot.calls_of("send_private_msg")
        if call.params.get("user_id") == chat.chat_id
        for seg in call.params["message"]
        if seg["type"] == "text"
    ]


def log_lines(w: World, *words: str) -> list[str]:
    """The bot's stderr lines that hold every one of ``words``."""
    lines = w.stderr.read_text("utf-8", "replace").splitlines()
    return [line for line in lines if all(word in line for word in words)]


async def ask_for_reminders(w: World, seconds: int) -> None:
    for chat in (TELEGRAM, QQ):
        await w.say(chat, marker=f" [remind {seconds}]", question=False)
    await until(lambda: later_states(w) == ["pending", "pending"])


@pytest.mark.timeout(120)
async def test_a_reminder_arrives_once_at_its_time_across_sigkills(tmp_path: Path) -> None:
    """Asked on Telegram and QQ for a reminder in 2 s, SIGKILLed while it waits, started
    again: each arrives once, at its time; SIGKILLed and started again after that, none
    comes twice."""
    async with promising_world(tmp_path) as w:
        await w.start()
        loop = asyncio.get_running_loop()
        await ask_for_reminders(w, 2)
        asked_at = loop.time()
        await w.kill("random")
        await w.start()
        await until(lambda: said(w, REMINDER) == {"telegram": 1, "qq": 1})
        arrived_after_s = loop.time() - asked_at
        await w.kill("random")
        await w.start()
        await answered_after_restart(w, (TELEGRAM, QQ))
        assert await w.terminate() == 0
        assert (said(w, REMINDER), later_states(w), model(w).initiatives) == (
            {"telegram": 1, "qq": 1},
            ["done", "done"],
            ["reminder", "reminder"],
        )
        assert arrived_after_s >= 1.5  # not before its time
        assert_clean_logs(w)


@pytest.mark.timeout(120)
async def test_a_reminder_cut_off_mid_call_runs_again_and_arrives_once(tmp_path: Path) -> None:
    """SIGKILL while a reminder's LLM call is on the wire: nothing was sent, so the next
    start runs it again, and it arrives once."""
    async with promising_world(tmp_path) as w:
        await w.start()
        model(w).hang_initiative = True
        await w.say(TELEGRAM, marker=" [remind 1]", question=False)
        await until(lambda: "initiative" in w.llm.hung)
        await w.kill("llm")
        assert later_states(w) == ["running"]
        await w.start()
        await until(lambda: said(w, REMINDER)["telegram"] == 1)
        await answered_after_restart(w, (TELEGRAM,))
        assert await w.terminate() == 0
        assert (said(w, REMINDER)["telegram"], later_states(w)) == (1, ["done"])
        assert model(w).initiatives == ["reminder", "reminder"]
        assert_clean_logs(w)


@pytest.mark.timeout(120)
async def test_a_reminder_gone_stale_while_down_is_dropped(tmp_path: Path) -> None:
    """Reminders that fell due an hour ago while the bot was down (past
    pacing.stale_after_s, 600 s): dropped at start-up and logged, never sent. The hour of
    downtime is written into the store while the bot is down, not waited for."""
    async with promising_world(tmp_path) as w:
        await w.start()
        await ask_for_reminders(w, 60)
        await w.kill("random")
        with contextlib.closing(sqlite3.connect(w.database)) as db:
            db.execute("UPDATE later_items SET due_at = ?", (time.time() - 3600,))
            db.commit()
        await w.start()
        await until(lambda: later_states(w) == ["dropped", "dropped"])
        await until(lambda: len(log_lines(w, "while the bot was down")) == 2)
        await answered_after_restart(w, (TELEGRAM, QQ))
        assert await w.terminate() == 0
        logs = w.stderr.read_text("utf-8", "replace")
    assert (said(w, REMINDER), later_states(w), model(w).initiatives) == (
        {"telegram": 0, "qq": 0},
        ["dropped", "dropped"],
        [],
    )
    assert logs.count("while the bot was down") == 2


OPENERS = """
[initiative]
openers = true
after_silence_s = 2.0
active_within_s = 60.0
hours = "00:00-24:00"
max_openers_per_day = 3
"""


@pytest.mark.timeout(120)
async def test_an_opener_comes_once_after_a_silence_and_never_when_quieted(
    tmp_path: Path,
) -> None:
    """openers on, 2 s of silence: the Telegram chat that talked gets one opener, and the
    next silence, unanswered, brings none (the bot says why); the QQ chat that said /quiet
    gets none, also said in the log."""
    async with promising_world(tmp_path, OPENERS) as w:
        await w.start()
        await w.say(TELEGRAM, question=True)
        await w.say(QQ, question=True)
        await until(lambda: len(sent_texts(w)) >= 2)
        await w.command(QQ, "/quiet", sender=QQ.chat_id)
        await until(lambda: said(w, "Quiet until")["qq"] == 1)
        await until(lambda: said(w, OPENER)["telegram"] == 1, within_s=10)
        # The silence after the opener comes up and is turned down, not waited out.
        await until(lambda: log_lines(w, TELEGRAM.key, "no opener"), within_s=10)
        await until(lambda: log_lines(w, QQ.key, "no opener"), within_s=10)
        assert await w.terminate() == 0
        assert (said(w, OPENER), model(w).initiatives) == ({"telegram": 1, "qq": 0}, ["opener"])
        assert_clean_logs(w)
