"""The far side of the wire benchmark, in a process of its own: chatters, Telegram, the LLM.

It serves the fake Bot API, the QQ Open Platform of the official bot and the fake
OpenAI-compatible server, dials the bot's reverse WebSocket as a OneBot implementation,
and plays bursts on any of the three wires when told, noting
when each message became available to the bot (``time.monotonic``, which every process
on the machine shares). A chat's lines follow its place in the order, not its number, so
the runs at one rate play the same words on the same schedule, whichever wire and bot.
The bot's process (:mod:`bench.wire`) sends orders over a pipe:

- ``{"do": "connect_qq", "url": ...}`` → ``"connected"``
- ``{"do": "disconnect_qq"}`` → ``"disconnected"``
- ``{"do": "bursts", "wire": "telegram" | "qq" | "qqbot", "chats": [...], "starts": [...],
  "size": 5, "gap_s": 0.1}`` → ``{chat id: [push times]}``
- ``{"do": "stop"}``
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from multiprocessing.connection import Connection
from typing import Any

from bench.dataset import CHAT_LINES
from fakes.bot_api import FakeBotAPI
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.qq_open_platform import FakeQQOpenPlatform

BOT_QQ_ID = 10001


def main(conn: Connection) -> None:
    """Serve the fakes and play the orders from ``conn`` until told to stop."""
    asyncio.run(_serve(conn))


async def _serve(conn: Connection) -> None:
    onebot: FakeOneBot | None = None
    async with FakeBotAPI() as api, FakeLLMServer() as llm, FakeQQOpenPlatform() as qqbot:
        conn.send(
            {
                "bot_api": api.base_url,
                "token": api.token,
                "llm": llm.base_url,
                "qqbot_api": qqbot.api_base,
                "qqbot_auth": qqbot.auth_url,
                "qqbot_app": qqbot.app_id,
                "qqbot_secret": qqbot.secret,
            }
        )
        try:
            while True:
                order: dict[str, Any] = await asyncio.to_thread(conn.recv)
                if order["do"] == "connect_qq":
                    onebot = FakeOneBot(order["url"], self_id=BOT_QQ_ID)
                    await onebot.connect()
                    conn.send("connected")
                elif order["do"] == "disconnect_qq":
                    if onebot is not None:
                        await onebot.close()
                        onebot = None
                    conn.send("disconnected")
                elif order["do"] == "bursts":
                    conn.send(await _bursts(api, onebot, qqbot, order))
                else:
                    return
        finally:
            if onebot is not None:
                await onebot.close()


async def _bursts(
    api: FakeBotAPI,
    onebot: FakeOneBot | None,
    qqbot: FakeQQOpenPlatform,
    order: dict[str, Any],
) -> dict[int, list[float]]:
    """Send every chat's burst on time; return when each message became available."""
    loop = asyncio.get_running_loop()
    begin = loop.time() + 0.2
    schedule = sorted(
        (begin + start + n * order["gap_s"], chat, index + n)
        for index, (chat, start) in enumerate(zip(order["chats"], order["starts"], strict=True))
        for n in range(order["size"])
    )
    pushed: defaultdict[int, list[float]] = defaultdict(list)
    for due, chat, line in schedule:
        if due > loop.time():
            await asyncio.sleep(due - loop.time())
        text = CHAT_LINES[line % len(CHAT_LINES)]  # by the chat's place: the same each run
        if order["wire"] == "telegram":
            api.push_message(chat, text, user_id=chat, first_name=f"user{chat}")
        elif order["wire"] == "qqbot":  # the chat's number is its user_openid
            await qqbot.c2c_message(str(chat), text, username=f"user{chat}")
        else:
            assert onebot is not None, "connect_qq first"
            await onebot.send_private_message(chat, text, nickname=f"user{chat}")
        pushed[chat].append(time.monotonic())
    return dict(pushed)
