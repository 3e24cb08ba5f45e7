"""`pacebot run` as a real process: SIGTERM mid-conversation stops cleanly, nothing sent twice."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import socket
import sqlite3
from pathlib import Path

from fakes.bot_api import FakeBotAPI, photo, sticker
from fakes.harness import free_port, replies_json, start_run, wait_until
from fakes.image_host import ImageHost
from fakes.images import jpeg, jpeg_size
from fakes.onebot import FakeOneBot, at, image, text
from fakes.openai_api import FakeLLMServer
from fakes.process import telegram_run_config

KEY = "sk-run-process-key-123456"
ALICE = 1001


async def start(
    config: Path, api: FakeBotAPI, *, token: str | None = None
) -> asyncio.subprocess.Process:
    env = {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": token or api.token}
    return await start_run(config, env)


async def stop(process: asyncio.subprocess.Process) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode is not None
    return process.returncode, err.decode()


def texts(api: FakeBotAPI) -> list[str]:
    return [m["text"] for m in api.sent_messages(ALICE)]


async def test_sigterm_between_replies_then_restart(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """SIGTERM after the first of three replies exits 0; the restart sends the rest, none twice."""
    config = telegram_run_config(tmp_path, llm, api)
    llm.reply_json(replies_json("第一句", "第二句", "第三句", delay=1.5))
    process = await start(config, api)
    await api.wait_for("getUpdates", timeout=20)
    api.push_message(ALICE, "讲个故事")
    await api.wait_for("sendMessage", timeout=10)
    code, err = await stop(process)
    assert code == 0, err
    assert "Traceback" not in err
    assert texts(api) == ["第一句"]

    process = await start(config, api)
    await api.wait_for(lambda: len(texts(api)) == 3, timeout=20)
    code, err = await stop(process)
    assert code == 0, err
    assert texts(api) == ["第一句", "第二句", "第三句"]
    assert len(llm.requests) == 1
    assert KEY not in err
    assert api.token not in err


async def test_both_platforms_stop_cleanly_and_log_through_pacebot(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """With Telegram and QQ on, SIGTERM stops both; logs, uvicorn's (DEBUG) too, reach the file."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = telegram_run_config(tmp_path, llm, api)
    config.write_text(
        config.read_text(encoding="utf-8") + f"\n[qq]\nenabled = true\nport = {port}\n",
        encoding="utf-8",
    )
    # uvicorn's start and stop lines are DEBUG: ask for them to see that they are routed.
    env = {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, {**env, "PACEBOT_LOG_LEVEL": "DEBUG"})
    await api.wait_for("getUpdates", timeout=20)
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
    await onebot.connect_when_listening()
    try:
        await onebot.send_private_message(42, "你好")
        await onebot.wait_for_call("send_private_msg", within_s=10)
    finally:
        await onebot.close()
    code, err = await stop(process)
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert code == 0, err
    assert "Traceback" not in err
    assert "QQ: OneBot connected as 10001; QQ is running" in log
    assert f"Telegram running as @{api.bot_username}: first poll answered" in log
    assert "| DEBUG   | -                        | uvicorn.error: " in log
    assert KEY not in log
    assert api.token not in log


async def test_run_with_a_rejected_token_and_nothing_else_exits_1(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Telegram alone, its token rejected: the run stops at once and says why, exit 1."""
    process = await start(telegram_run_config(tmp_path, llm, api), api, token="999:WRONG-token")
    _, err = await asyncio.wait_for(process.communicate(), 30)
    stderr = err.decode()
    assert process.returncode == 1
    assert "pacebot: Telegram rejected the bot token" in stderr
    assert "Traceback" not in stderr
    assert "WRONG-token" not in stderr


def vision_reply(message_id: int | str) -> dict[str, object]:
    """A reply plan that says it saw the picture, with a note about it."""
    return {
        "replies": [{"content": "看到了，是一只橘猫", "send_delay_seconds": 0}],
        "image_notes": {str(message_id): "一只橘猫"},
    }


def assert_saw_one_small_jpeg(llm: FakeLLMServer) -> None:
    """The one reply call carried exactly one JPEG data URL of at most 1024 px."""
    [url] = llm.image_urls(0)
    prefix = "data:image/jpeg;base64,"
    assert url.startswith(prefix)
    kind, (width, height) = jpeg_size(base64.b64decode(url.removeprefix(prefix)))
    assert (kind, max(width, height)) == ("JPEG", 1024)


async def test_run_answers_a_telegram_photo_having_seen_it(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """`pacebot run` with vision: a Telegram photo reaches the model as a ≤1024 px JPEG."""
    config = telegram_run_config(tmp_path, llm, api)
    config.write_text(
        config.read_text(encoding="utf-8").replace("[llm]\n", "[llm]\nvision = true\n"),
        encoding="utf-8",
    )
    api.add_file("photo-1280", jpeg(1280, 960))
    process = await start(config, api)
    await api.wait_for("getUpdates", timeout=20)
    message_id = api.push_message(ALICE, extra=photo("这个怎么样？", sides=(90, 320, 1280)))
    llm.reply_json(vision_reply(message_id))
    await api.wait_for("sendMessage", timeout=10)
    code, err = await stop(process)

    assert code == 0, err
    assert_saw_one_small_jpeg(llm)
    assert texts(api) == ["看到了，是一只橘猫"]
    assert api.token not in str(llm.requests)


async def test_run_answers_a_qq_picture_having_seen_it(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """`pacebot run` with vision: a QQ image segment's URL is fetched and seen by the model."""
    port = free_port()
    config = telegram_run_config(tmp_path, llm, api)
    toml = config.read_text(encoding="utf-8").replace("[llm]\n", "[llm]\nvision = true\n")
    toml = toml.replace("[telegram]\nenabled = true", "[telegram]\nenabled = false")
    toml += f"\n[qq]\nenabled = true\nport = {port}\nallow_private_image_hosts = true\n"
    config.write_text(toml, encoding="utf-8")
    async with ImageHost() as host:
        url = host.serve("/cat.jpg", jpeg(3000, 2000))
        process = await start(config, api)
        onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
        await onebot.connect_when_listening()
        try:
            message_id = await onebot.send_private_message(42, [text("看"), image(url=url)])
            llm.reply_json(vision_reply(message_id))
            [call] = await onebot.wait_for_call("send_private_msg", within_s=10)
        finally:
            await onebot.close()
        code, err = await stop(process)

    assert code == 0, err
    assert host.requests == ["/cat.jpg"]
    assert_saw_one_small_jpeg(llm)
    assert "看到了，是一只橘猫" in str(call.params["message"])


async def test_run_answers_with_a_reaction_alone_on_telegram_and_qq(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Through a real `pacebot run` with both platforms, a Telegram "thanks" and a QQ group
    "thanks" are each answered by a reaction alone: setMessageReaction and
    set_msg_emoji_like on the very messages, no text, one LLM call each."""
    port = free_port()
    config = telegram_run_config(tmp_path, llm, api)
    config.write_text(
        config.read_text(encoding="utf-8") + f"\n[qq]\nenabled = true\nport = {port}\n",
        encoding="utf-8",
    )
    process = await start(config, api)
    await api.wait_for("getUpdates", timeout=20)
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
    await onebot.connect_when_listening()
    try:
        thanks = api.push_message(ALICE, "谢谢！")
        llm.reply_json({"replies": [{"react": "👍", "to": str(thanks)}]})
        await api.wait_for("setMessageReaction", timeout=10)
        qq_thanks = await onebot.send_group_message(500, 42, [at(10001), text(" 谢谢")])
        llm.reply_json({"replies": [{"react": "🙏", "to": str(qq_thanks)}]})
        [call] = await onebot.wait_for_call("set_msg_emoji_like", within_s=10)
    finally:
        await onebot.close()
    code, err = await stop(process)
    assert (code, "Traceback" in err) == (0, False)
    assert api.reactions == [(ALICE, thanks, ["👍"])]
    assert call.params == {"message_id": qq_thanks, "emoji_id": "118", "set": True}
    assert (api.sent_messages(), onebot.calls_of("send_group_msg"), len(llm.requests)) == (
        [],
        [],
        2,
    )


def sticker_id(database: Path, platform: str) -> int | None:
    """Return the id of the sticker a running bot collected from ``platform``, if any."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT id FROM stickers WHERE platform = ?", (platform,)).fetchone()
    return None if row is None else int(row[0])


async def test_run_sends_back_a_sticker_it_saw_on_telegram_and_qq(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Through a real `pacebot run` with stickers on: a sticker sent in a Telegram chat and
    one in a QQ group are collected, and the model's {"sticker": id} sends each back, by
    its file_id on Telegram and as the kept picture inlined on QQ."""
    port = free_port()
    config = telegram_run_config(tmp_path, llm, api)
    config.write_text(
        config.read_text(encoding="utf-8")
        + f"\n[qq]\nenabled = true\nport = {port}\nallow_private_image_hosts = true\n"
        + "\n[stickers]\nenabled = true\n",
        encoding="utf-8",
    )
    database = tmp_path / "data" / "pacebot.sqlite3"
    process = await start(config, api)
    await api.wait_for("getUpdates", timeout=20)
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
    await onebot.connect_when_listening()
    try:
        async with ImageHost() as host:
            llm.reply_json({"replies": []})  # the lone sticker needs no answer
            api.push_message(ALICE, extra=sticker("😹", set_name="Cats"))
            await wait_until(lambda: sticker_id(database, "telegram"), within_s=10)
            await llm.wait_for_requests(1, timeout=10)
            llm.reply_json({"replies": [{"sticker": f"s{sticker_id(database, 'telegram')}"}]})
            api.push_message(ALICE, "发个表情")
            [sent] = await api.wait_for("sendSticker", timeout=10)
            url = host.serve("/s.png", jpeg(64, 64))
            await onebot.send_group_message(500, 42, [image(sticker=True, url=url)])
            await wait_until(lambda: sticker_id(database, "qq"), within_s=10)
            llm.reply_json({"replies": [{"sticker": f"s{sticker_id(database, 'qq')}"}]})
            await onebot.send_group_message(500, 42, [at(10001), text(" 发个表情")])
            [call] = await onebot.wait_for_call("send_group_msg", within_s=10)
    finally:
        await onebot.close()
    code, err = await stop(process)
    [kept] = (tmp_path / "data" / "stickers").iterdir()
    [segment] = call.params["message"]
    assert (code, "Traceback" in err) == (0, False)
    assert (sent["chat_id"], sent["sticker"]) == (ALICE, "sticker-1")
    assert segment["type"] == "image"
    assert segment["data"]["file"] == "base64://" + base64.b64encode(kept.read_bytes()).decode()
    assert len(llm.requests) == 3  # the lone sticker's silence, then one call per ask
