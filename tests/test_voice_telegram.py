"""Voice on Telegram over the real wires: PTB ↔ the fake Bot API, the openai SDK ↔ the fake
audio endpoints, SQLite. A voice note is heard before its batch is answered; a voice item
goes out with sendVoice, or as text, once, when it cannot."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.app import Core
from adapters.web.api import trace_json
from bot.config.model import Config
from bot.conversation import Phase
from bot.days import chat_day
from bot.models import ChatKey, ChatKind
from bot.replies.contract import VOICE_CONTRACT
from bot.texts import Texts
from bot.trace_lines import format_trace
from fakes import audio
from fakes.bot_api import FakeBotAPI, voice
from fakes.harness import (
    telegram_bot,
    telegram_config,
    user_prompt,
    wait_until,
)
from fakes.openai_api import FakeLLMServer

ALICE = 1001
CHAT = ChatKey("telegram", ChatKind.PRIVATE, str(ALICE))
HEAR = {"transcribe": True}
SPEAK = {"speak": True}
GOOD_NIGHT = "早点睡，明天还要考试呢"


def plan(*items: dict[str, Any]) -> dict[str, Any]:
    return {"replies": list(items)}


def new_messages(request: dict[str, Any]) -> str:
    return user_prompt(request).split("New messages")[1]


def history(request: dict[str, Any]) -> str:
    return user_prompt(request).split("New messages")[0]


def texts(api: FakeBotAPI) -> list[str]:
    return [m["text"] for m in api.sent_messages(ALICE) if "text" in m]


async def fates(core: Core) -> list[str]:
    [shown] = await core.ops.traces.recent(CHAT, count=1)
    return [f"{fate.kind}: {fate.state}" for fate in shown.fates]


async def test_a_voice_note_is_heard_and_its_words_answered_in_one_call(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Alice's 7-second voice note is downloaded once and uploaded as voice.ogg; the one
    chat call of its batch reads "[voice 0:07] <transcript>", and so does the history of
    the next batch; the trace shows what was heard."""
    note = audio.ogg_opus(7.0)
    api.add_file("voice-1", note, path="voice/file_1.oga")
    heard = f"[voice 0:07] {llm.transcript}"
    config = telegram_config(tmp_path, llm, api, voice=HEAR)
    async with telegram_bot(config, api) as core:
        llm.reply_json(plan({"content": "恭喜你！"}))
        api.push_message(ALICE, extra=voice(duration=7))
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        [trace] = await core.ops.traces.recent(CHAT, count=1)
        llm.reply_json(plan({"content": "好呀"}))
        api.push_message(ALICE, "晚上吃什么")
        await api.wait_for("sendMessage", count=2, timeout=5)
        await core.inbox.drain()
    [upload] = llm.transcriptions
    assert (upload.filename, upload.data) == ("voice.ogg", note)
    assert api.downloads == ["voice/file_1.oga"]
    assert heard in new_messages(llm.requests[0])
    assert heard in history(llm.requests[1])
    assert len(llm.requests) == 2  # one chat completion per batch, audio calls aside
    [message_id] = trace.trace.message_ids
    assert trace.trace.heard == ((message_id, llm.transcript),)
    shown = format_trace(trace, zone=config.bot.zone, say=Texts("en"))
    assert f"voice note #{message_id} heard: {llm.transcript}" in shown.splitlines()
    assert trace_json(trace)["heard"] == [{"message_id": message_id, "transcript": llm.transcript}]
    assert texts(api) == ["恭喜你！", "好呀"]


async def test_with_transcription_off_nothing_is_downloaded(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """transcribe = false: no getFile, no upload; the model reads the placeholder."""
    api.add_file("voice-1", audio.ogg_opus(7.0), path="voice/file_1.oga")
    async with telegram_bot(telegram_config(tmp_path, llm, api, voice=SPEAK), api) as core:
        api.push_message(ALICE, extra=voice(duration=7))
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert (api.calls_to("getFile"), api.downloads, llm.transcriptions) == ([], [], [])
    assert new_messages(llm.requests[0]).strip().endswith("Alice: [voice 0:07]")


async def test_hearing_runs_beside_the_quiet_wait(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """The note is uploaded while the chat still waits to go quiet, not after."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    pacing = {"debounce_min_s": 1.0, "debounce_max_s": 1.0}
    config = telegram_config(tmp_path, llm, api, voice=HEAR, pacing=pacing)
    async with telegram_bot(config, api) as core:
        api.push_message(ALICE, extra=voice(duration=3))
        await llm.wait_for_transcriptions(1, timeout=5)
        waiting_then = await core.ops.status.waiting_messages(CHAT), core.ops.status.phase(CHAT)
        asked_then = len(llm.requests)
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert (waiting_then, asked_then) == ((1, Phase.WAITING), 0)
    assert f"[voice 0:03] {llm.transcript}" in new_messages(llm.requests[0])


def first_text(config: Config) -> str:
    """Read the stored text of the chat's first message from the database file."""
    with contextlib.closing(sqlite3.connect(config.database_path)) as db:
        (text,) = db.execute("SELECT text FROM messages ORDER BY id LIMIT 1").fetchone()
    return str(text)


def transcripts(config: Config) -> list[str | None]:
    """Read what was stored as heard of each message, in order."""
    with contextlib.closing(sqlite3.connect(config.database_path)) as db:
        return [row[0] for row in db.execute("SELECT transcript FROM messages ORDER BY id")]


async def test_the_batch_waits_for_a_note_still_being_heard(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A transcription that outlasts the quiet wait (0.4 s against 0.05 s) but not
    llm.timeout_s is waited for: the one chat call reads the words."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    llm.transcription_hang(0.4, text="等我说完")
    async with telegram_bot(telegram_config(tmp_path, llm, api, voice=HEAR), api) as core:
        api.push_message(ALICE, extra=voice(duration=3))
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert new_messages(llm.requests[0]).strip().endswith("Alice: [voice 0:03] 等我说完")
    assert len(llm.requests) == 1


async def test_a_note_heard_after_its_batch_reaches_the_next_prompt(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A transcription slower than llm.timeout_s: the batch is answered with the
    placeholder, and the words, heard later, are stored and read by the next batch."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    llm.transcription_hang(0.6, text="明天见")
    llm.reply_json(plan({"content": "没听清"}))
    llm.reply_json(plan({"content": "听到了，明天见"}))  # the same words again would be dropped
    config = telegram_config(tmp_path, llm, api, voice=HEAR, llm={"timeout_s": 0.2})
    async with telegram_bot(config, api) as core:
        api.push_message(ALICE, extra=voice(duration=3))
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        await wait_until(lambda: "明天见" in first_text(config))
        api.push_message(ALICE, "听到了吗")
        await api.wait_for("sendMessage", count=2, timeout=5)
        await core.inbox.drain()
    assert new_messages(llm.requests[0]).strip().endswith("Alice: [voice 0:03]")
    assert "Alice: [voice 0:03] 明天见" in history(llm.requests[1])
    assert len(llm.transcriptions) == 1


async def test_a_voice_item_goes_out_with_send_voice_showing_recording(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """The model's voice item is spoken as Ogg/Opus and uploaded with sendVoice, with
    "recording a voice message" shown meanwhile; its words are the bot's message in the
    history, kept as a voice note, and the contract offered voice."""
    config = telegram_config(tmp_path, llm, api, voice=SPEAK)
    async with telegram_bot(config, api) as core:
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        api.push_message(ALICE, "我睡不着")
        [sent] = await api.wait_for("sendVoice", timeout=5)
        await core.inbox.drain()
        llm.reply_json(plan({"content": "晚安"}))
        api.push_message(ALICE, "好吧")
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        sent_as = await fates(core)
        kept = await core.ops.status.messages(CHAT, limit=4)
    [asked] = llm.speech_requests
    spoken = [(m.text, m.transcript) for m in kept if m.from_bot and m.voice is not None]
    assert spoken == [(GOOD_NIGHT, GOOD_NIGHT)]  # kept as the voice note it was
    assert (asked["input"], asked["response_format"], asked["voice"]) == (
        GOOD_NIGHT,
        "opus",
        "alloy",
    )
    assert sent["voice"]["data"].startswith(b"OggS")
    assert sent["voice"]["filename"] == "voice.ogg"
    assert sent["duration"] == round(len(GOOD_NIGHT) / 5)
    assert "record_voice" in api.chat_actions(ALICE)
    assert f"小满 (you): {GOOD_NIGHT}" in history(llm.requests[1])
    assert VOICE_CONTRACT.strip() in llm.requests[0]["messages"][0]["content"]
    assert texts(api) == ["晚安"]
    assert sent_as == ["content: sent"]  # the second batch's text


async def test_recording_is_shown_while_a_voice_item_waits_its_turn(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Between a text and the voice item planned after it, the chat is shown "recording
    a voice message", never "typing"."""
    config = telegram_config(tmp_path, llm, api, voice=SPEAK)
    async with telegram_bot(config, api) as core:
        llm.reply_json(
            plan({"content": "等一下"}, {"voice": GOOD_NIGHT, "send_delay_seconds": 0.5})
        )
        api.push_message(ALICE, "唱首歌")
        await api.wait_for("sendVoice", timeout=5)
        await core.inbox.drain()
    seen = [
        (call.method, call.params.get("action"))
        for call in api.calls
        if call.method in {"sendMessage", "sendChatAction", "sendVoice"}
    ]
    between = seen[seen.index(("sendMessage", None)) + 1 : seen.index(("sendVoice", None))]
    assert between != []
    assert set(between) == {("sendChatAction", "record_voice")}


async def good_night(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI) -> list[str]:
    """Have the model answer with a voice item; return what its trace says became of it."""
    async with telegram_bot(telegram_config(tmp_path, llm, api, voice=SPEAK), api) as core:
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        api.push_message(ALICE, "晚安")
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        return await fates(core)


async def test_a_failed_synthesis_sends_the_words_as_text_once(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Speech answering 500 sends the same words as one text message, no voice; the
    outbox (and so the trace) says the voice item went out as content."""
    llm.speech_fail(500)
    sent_as = await good_night(tmp_path, llm, api)
    assert texts(api) == [GOOD_NIGHT]
    assert api.calls_to("sendVoice") == []
    assert sent_as == ["voice: sent as content"]


async def test_speech_answering_html_sends_the_words_as_text_once(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """An HTML page served as the speech is no voice: the words go as text, once."""
    llm.speech_respond("<!DOCTYPE html><html><body>Welcome to nginx!</body></html>")
    sent_as = await good_night(tmp_path, llm, api)
    assert (texts(api), api.calls_to("sendVoice"), sent_as) == (
        [GOOD_NIGHT],
        [],
        ["voice: sent as content"],
    )


async def test_a_refused_voice_message_is_sent_as_text_once(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A chat whose owner refuses voice messages gets the words as one text after the one
    refused sendVoice; the outbox records it went as content."""
    api.fail_next("sendVoice", status=400, description="Bad Request: VOICE_MESSAGES_FORBIDDEN")
    sent_as = await good_night(tmp_path, llm, api)
    assert len(api.calls_to("sendVoice")) == 1
    assert texts(api) == [GOOD_NIGHT]
    assert sent_as == ["voice: sent as content"]


async def test_a_voice_item_over_max_chars_is_sent_as_text_unspoken(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Words longer than voice.max_chars are never sent to the speech endpoint, and while
    they wait their turn the chat sees "typing", not "recording"."""
    config = telegram_config(tmp_path, llm, api, voice={**SPEAK, "max_chars": 5})
    async with telegram_bot(config, api) as core:
        llm.reply_json(plan({"content": "嗯"}, {"voice": GOOD_NIGHT, "send_delay_seconds": 0.3}))
        api.push_message(ALICE, "晚安")
        await api.wait_for("sendMessage", count=2, timeout=5)
        await core.inbox.drain()
    actions = api.chat_actions(ALICE)
    assert (texts(api), llm.speech_requests, api.calls_to("sendVoice")) == (
        ["嗯", GOOD_NIGHT],
        [],
        [],
    )
    assert ("typing" in actions, "record_voice" in actions) == (True, False)


async def test_with_speaking_off_voice_is_not_offered_and_said_as_text(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """speak = false: the contract offers no voice, and a voice item the model writes
    anyway goes as text without any speech request."""
    async with telegram_bot(telegram_config(tmp_path, llm, api), api) as core:
        llm.reply_json(plan({"voice": GOOD_NIGHT}))
        api.push_message(ALICE, "晚安")
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert VOICE_CONTRACT.strip() not in llm.requests[0]["messages"][0]["content"]
    assert (texts(api), llm.speech_requests) == ([GOOD_NIGHT], [])


def quiet_after_5_s(tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI) -> Config:
    """A config that hears voice notes and waits long before it answers them."""
    pacing = {"debounce_min_s": 5.0, "debounce_max_s": 5.0}
    return telegram_config(tmp_path, llm, api, voice=HEAR, pacing=pacing)


async def test_a_note_whose_hearing_a_stop_cut_short_is_heard_after_the_restart(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Stopped while a note is being heard (its batch still waiting): the next start
    hears it again and its batch reads the words."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    llm.transcription_hang(30.0)
    slow = quiet_after_5_s(tmp_path, llm, api)
    async with telegram_bot(slow, api):
        api.push_message(ALICE, extra=voice(duration=3))
        await llm.wait_for_transcriptions(1, timeout=5)
    assert llm.requests == []
    async with telegram_bot(telegram_config(tmp_path, llm, api, voice=HEAR), api) as core:
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    assert len(llm.transcriptions) == 2
    assert f"[voice 0:03] {llm.transcript}" in new_messages(llm.requests[0])


async def test_a_note_heard_or_given_up_on_is_never_transcribed_again(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """One note heard and one whose transcription failed, both still waiting at a stop:
    the restart transcribes neither again; the batch reads the words and the placeholder."""
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    api.add_file("voice-2", audio.ogg_opus(5.0), path="voice/file_2.oga")
    llm.transcription_respond("第一条")
    llm.transcription_fail(500)
    slow = quiet_after_5_s(tmp_path, llm, api)
    async with telegram_bot(slow, api):
        api.push_message(ALICE, extra=voice(duration=3))
        await llm.wait_for_transcriptions(1, timeout=5)
        api.push_message(ALICE, extra=voice(file_id="voice-2", duration=5))
        await llm.wait_for_transcriptions(2, timeout=5)
        await wait_until(lambda: transcripts(slow) == ["第一条", ""])
    async with telegram_bot(telegram_config(tmp_path, llm, api, voice=HEAR), api) as core:
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
    new = new_messages(llm.requests[0])
    assert len(llm.transcriptions) == 2
    assert ("Alice: [voice 0:03] 第一条" in new, new.strip().endswith("Alice: [voice 0:05]")) == (
        True,
        True,
    )


async def test_the_words_of_a_note_are_what_recall_searches_and_the_summary_reads(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Recall reads the transcript (it looks up the day "大前天" names, which only the note
    says), and the day's summary request reads the note's words."""
    config = telegram_config(tmp_path, llm, api, voice=HEAR)
    today = chat_day(
        datetime.now(UTC), zone=config.bot.zone, boundary=config.memory.day_boundary_time
    )
    hotpot_day = today - timedelta(days=3)
    api.add_file("voice-1", audio.ogg_opus(3.0), path="voice/file_1.oga")
    llm.transcription_respond("大前天吃的火锅是哪家来着")
    async with telegram_bot(config, api) as core:
        api.push_message(ALICE, extra=voice(duration=3))
        await api.wait_for("sendMessage", timeout=5)
        await core.inbox.drain()
        [trace] = await core.ops.traces.recent(CHAT, count=1)
        llm.reply_json({"summary": f"{today} Alice 问起上次的火锅", "people": []})
        await core.ops.memory.summarise(CHAT, today, by="test")
    assert trace.trace.recall.asked_dates == (hotpot_day,)
    assert "Alice (id 1001): [voice 0:03] 大前天吃的火锅是哪家来着" in str(
        llm.requests[-1]["messages"]
    )
