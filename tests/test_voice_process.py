"""Voice through `pacebot run` as a real process, Telegram and QQ at once, with the fakes:
voice notes heard and answered, voice items sent as voice, a failed synthesis sent as text
once, one chat completion per batch, nothing leaked, a clean stop."""

from __future__ import annotations

import asyncio
import base64
import signal
from pathlib import Path
from typing import Any

from adapters.audio import sniff
from fakes import audio
from fakes.bot_api import FakeBotAPI, voice
from fakes.harness import free_port, start_run, user_prompt
from fakes.onebot import FakeOneBot, record
from fakes.openai_api import FakeLLMServer
from fakes.process import telegram_run_config

KEY = "sk-voice-process-key-13579"
ALICE, QQ_FRIEND = 1001, 42


def write_config(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, qq_port: int) -> Path:
    """The config of the Telegram process tests, with QQ and voice on."""
    path = telegram_run_config(tmp_path, llm, api)
    more = f"\n[qq]\nenabled = true\nport = {qq_port}\n\n[voice]\ntranscribe = true\nspeak = true\n"
    path.write_text(path.read_text(encoding="utf-8") + more, encoding="utf-8")
    return path


def plan(item: dict[str, Any]) -> dict[str, Any]:
    return {"replies": [item]}


def new_messages(llm: FakeLLMServer) -> str:
    return user_prompt(llm.requests[-1]).split("New messages")[1]


async def telegram_round(api: FakeBotAPI, llm: FakeLLMServer) -> None:
    """A voice note answered, a voice item as voice, a failed synthesis as text."""
    api.add_file("voice-1", audio.ogg_opus(4.0), path="voice/file_1.oga")
    llm.transcription_respond("我拿到offer了")
    llm.reply_json(plan({"content": "太棒了，恭喜！"}))
    api.push_message(ALICE, extra=voice(duration=4))
    await api.wait_for("sendMessage", timeout=20)
    assert "[voice 0:04] 我拿到offer了" in new_messages(llm)
    llm.reply_json(plan({"voice": "晚安，做个好梦"}))
    api.push_message(ALICE, "说句晚安吧")
    await api.wait_for("sendVoice", timeout=20)
    llm.speech_fail(500)
    llm.reply_json(plan({"voice": "明天见"}))
    api.push_message(ALICE, "再说一句")
    await api.wait_for("sendMessage", count=2, timeout=20)


async def qq_round(onebot: FakeOneBot, llm: FakeLLMServer) -> list[list[dict[str, Any]]]:
    """The same on QQ: a record heard through get_record, a voice item as a record, a
    failed synthesis as text; return what was posted."""
    onebot.records["r1.amr"] = audio.mp3(2.0)
    llm.transcription_respond("周末一起爬山吗")
    llm.reply_json(plan({"content": "好呀！"}))
    await onebot.send_private_message(QQ_FRIEND, [record("r1.amr")])
    await onebot.wait_for_call("send_private_msg", within_s=20)
    assert "[voice 0:02] 周末一起爬山吗" in new_messages(llm)
    llm.reply_json(plan({"voice": "那就说定了"}))
    await onebot.send_private_message(QQ_FRIEND, "周六早上？")
    await onebot.wait_for_call("send_private_msg", 2, within_s=20)
    llm.speech_fail(500)
    llm.reply_json(plan({"voice": "拜拜"}))
    await onebot.send_private_message(QQ_FRIEND, "好的")
    calls = await onebot.wait_for_call("send_private_msg", 3, within_s=20)
    return [list(call.params["message"]) for call in calls]


async def test_voice_through_pacebot_run_on_telegram_and_qq(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """On both platforms a voice note is answered by a model that read its transcript, a
    voice item arrives as a voice message, a failed synthesis arrives as text once; six
    batches make six chat completions; SIGTERM exits 0 with no traceback and no secret."""
    qq_port = free_port()
    config = write_config(tmp_path, llm, api, qq_port)
    process = await start_run(config, {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": api.token})
    try:
        await api.wait_for("getUpdates", timeout=20)
        await telegram_round(api, llm)
        onebot = FakeOneBot(f"ws://127.0.0.1:{qq_port}/onebot/v11/ws", self_id=10001)
        await onebot.connect_when_listening()
        try:
            posted = await qq_round(onebot, llm)
            await asyncio.sleep(0.3)  # a repeat, were one sent, would arrive by now
        finally:
            await onebot.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err_bytes = await asyncio.wait_for(process.communicate(), 20)
    err = err_bytes.decode()
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")
    [sent_voice] = api.voices
    assert [m.get("text") for m in api.sent_messages(ALICE)] == ["太棒了，恭喜！", None, "明天见"]
    assert sent_voice["voice"]["data"].startswith(b"OggS")
    [[heard], [spoken], [fallback]] = posted
    assert (heard["type"], fallback) == ("text", {"type": "text", "data": {"text": "拜拜"}})
    inline = base64.b64decode(spoken["data"]["file"].removeprefix("base64://"))
    assert (spoken["type"], sniff(inline)) == ("record", "mp3")
    assert len(llm.requests) == 6
    assert [r["response_format"] for r in llm.speech_requests] == ["opus", "opus", "mp3", "mp3"]
    assert process.returncode == 0, err
    assert "Traceback" not in err + log
    assert (KEY in err + log, api.token in err + log) == (False, False)
