"""The official QQ bot through a real ``pacebot run``, beside Telegram and OneBot QQ in the
same process, against the QQ Open Platform fake, the Bot API fake and a OneBot client.

What a SIGKILL and a restart do to it is the kill suite's (``tests/test_kill.py``), which
runs the same three platforms.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from fakes.bot_api import FakeBotAPI
from fakes.clock import Clock
from fakes.harness import free_port, replies_json, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.plugins import write_plugins
from fakes.process import telegram_run_config
from fakes.qq_open_platform import FakeQQOpenPlatform, openid

KEY = "sk-official-process-key-1234"
GROUP, ALICE, BOB = openid("group-1"), openid("alice"), openid("bob")
TELEGRAM_USER, QQ_USER = 4242, 42
STORY = [f"第{n}句" for n in range(1, 8)]


def write_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, platform: FakeQQOpenPlatform, port: int
) -> Path:
    """Telegram, OneBot QQ on ``port`` and the official QQ bot, with the test plugin."""
    return telegram_run_config(
        tmp_path,
        llm,
        api,
        more=f"""
[qq]
enabled = true
port = {port}

[qq_official]
enabled = true
app_id = "{platform.app_id}"
api_base = "{platform.api_base}"
auth_base = "{platform.auth_url}"

[plugins]
nonebot = ["pacebot_test_plugin"]
""",
    )


def sent(platform: FakeQQOpenPlatform, target: str) -> list[tuple[object, ...]]:
    """What the platform took for ``target``: (content, msg_id, msg_seq)."""
    return [(s.content, s.msg_id, s.msg_seq) for s in platform.sent_to(target)]


async def test_pacebot_run_answers_the_official_bot_passively_beside_telegram_and_onebot(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Through `pacebot run` with all three platforms: group talk of the full stream is
    kept without a call, a group @ answered with seven texts arrives as five passive
    replies holding every text, a mention that is_you and a C2C message are answered
    passively, a plugin answers a C2C command, and Telegram and OneBot QQ answer as ever;
    nothing is refused and the run stops cleanly."""
    port = free_port()
    async with FakeQQOpenPlatform(clock=Clock()) as platform:
        platform.grant_all_messages(GROUP)
        config = write_config(tmp_path, llm, api, platform, port)
        folder = write_plugins(tmp_path / "plugins")
        env = {
            "PACEBOT_LLM_API_KEY": KEY,
            "TELEGRAM_BOT_TOKEN": api.token,
            "QQ_BOT_SECRET": platform.secret,
            "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
        }
        process = await start_run(config, env)
        onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
        try:
            await platform.wait_until(lambda: platform.connected, within_s=20)
            await platform.group_message(GROUP, BOB, "今天好热")
            llm.reply_json({"replies": [{"content": t, "send_delay_seconds": 0} for t in STORY]})
            story = await platform.group_at(GROUP, ALICE, "讲个故事")
            await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 5, within_s=20)
            llm.reply_json(replies_json("在"))
            mention = await platform.group_message(GROUP, BOB, "在吗", mentions_bot=True)
            await platform.wait_until(lambda: len(platform.sent_to(GROUP)) == 6, within_s=10)
            llm.reply_json(replies_json("怎么啦"))
            private = await platform.c2c_message(ALICE, "在吗")
            await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 1, within_s=10)
            weather = await platform.c2c_message(ALICE, "/天气")
            await platform.wait_until(lambda: len(platform.sent_to(ALICE)) == 2, within_s=10)
            calls_before_others = len(llm.requests)
            llm.reply_json(replies_json("电报在"))
            await api.wait_for("getUpdates", timeout=20)
            api.push_message(TELEGRAM_USER, "在吗")
            await api.wait_for("sendMessage", timeout=10)
            llm.reply_json(replies_json("QQ在"))
            await onebot.connect_when_listening()
            await onebot.send_private_message(QQ_USER, "在吗")
            [onebot_reply] = await onebot.wait_for_call("send_private_msg", within_s=10)
        finally:
            await onebot.close()
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), 30)
        log = err.decode()
    assert (process.returncode, "Traceback" in log, platform.refused()) == (0, False, [])
    assert sent(platform, GROUP) == [
        *[(text, story.message_id, n) for n, text in enumerate(STORY[:4], start=1)],
        ("第5句\n第6句\n第7句", story.message_id, 5),
        ("在", mention.message_id, 1),
    ]
    assert sent(platform, ALICE) == [
        ("怎么啦", private.message_id, 1),
        ("晴，25°C", weather.message_id, 1),
    ]
    assert (calls_before_others, len(llm.requests)) == (3, 5)
    assert [m["text"] for m in api.sent_messages(TELEGRAM_USER)] == ["电报在"]
    assert onebot_reply.params["message"][-1]["data"]["text"] == "QQ在"
