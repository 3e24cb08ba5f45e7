"""nonebot plugins beside pacebot, over the real wire: nonebot2 + the OneBot adapter ↔ a
OneBot client, with plugins the tests write (``fakes/plugins.py``).

nonebot is set up once per process and a plugin, once loaded, stays loaded: every test
here loads the same plugins, and reads what a plugin records as what changed since it began.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path
from typing import Any

import nonebot  # noqa: F401 - first: importing it drops loguru's sinks, captured_logs' too
import nonebot.message as nonebot_message
import pytest
from loguru import logger

from adapters.plugins import host
from adapters.plugins.nonebot_lines import NONEBOTS_EVENT_MODULES
from bot.config.model import Config
from bot.models import ChatKey, ChatKind
from fakes.harness import free_port, make_config, qq_bot, user_prompt, wait_until, wait_waiting
from fakes.onebot import at, text
from fakes.openai_api import FakeLLMServer
from fakes.plugins import TEST_PLUGIN
from tests.log_capture import captured_logs

ALICE, GROUP_ID, SELF_ID = 42, 500, 10001
PRIVATE = ChatKey("qq", ChatKind.PRIVATE, str(ALICE))
BOOM_LINE = (
    TEST_PLUGIN.lstrip().splitlines().index('boom = on_command("炸", priority=5, block=True)') + 1
)
WEATHER = [{"type": "text", "data": {"text": "晴，25°C"}}]


pytestmark = pytest.mark.usefixtures("plugin_folder")


def plugin_config(tmp_path: Path, llm: FakeLLMServer, *more: str, **sections: Any) -> Config:
    plugins = {"nonebot": ["pacebot_test_plugin", *more]}
    qq = {"enabled": True, "port": free_port()}
    return make_config(tmp_path, llm.base_url, qq=qq, plugins=plugins, **sections)


def stored(config: Config) -> list[tuple[str, str, int]]:
    """Each stored message, oldest first: who, what, and whether the bot said it."""
    with sqlite3.connect(config.database_path) as db:
        rows = db.execute("SELECT sender_name, text, from_bot FROM messages ORDER BY id")
        return [(str(name), str(words), int(from_bot)) for name, words, from_bot in rows]


def recorded(name: str) -> list[str]:
    """What the test plugin's matchers recorded (a list kept in the plugin's module); nothing
    before the plugin is first loaded."""
    module = sys.modules.get("pacebot_test_plugin")
    seen: list[str] = getattr(module, name) if module is not None else []
    return seen


async def test_a_blocking_command_is_answered_by_the_plugin_with_no_llm_call(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A plugin's blocking /天气 is answered by the plugin: 0 LLM calls, the command kept as
    context, the plugin's words kept as the bot's, a lower-priority matcher never run."""
    config = plugin_config(tmp_path, llm)
    keyword_before = len(recorded("KEYWORD_SEEN"))
    async with qq_bot(config) as (core, onebot):
        await onebot.send_private_message(ALICE, "/天气")
        [call] = await onebot.wait_for_call("send_msg", within_s=5)
        await core.inbox.drain()
        waiting = await core.ops.status.waiting_messages(PRIVATE)
    assert (call.params["message"], len(llm.requests), waiting) == (WEATHER, 0, 0)
    assert stored(config) == [("路人甲", "/天气", 0), ("小满", "晴，25°C", 1)]
    assert recorded("KEYWORD_SEEN")[keyword_before:] == []


async def test_ordinary_talk_is_answered_by_pacebot_seeing_the_plugins_words(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """After a plugin's answer, ordinary talk gets one LLM call whose history holds the
    command and the plugin's words as the bot's own."""
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        await onebot.send_private_message(ALICE, "/天气")
        await onebot.wait_for_call("send_msg", within_s=5)
        llm.reply_json({"replies": [{"content": "记得带伞", "send_delay_seconds": 0}]})
        await onebot.send_private_message(ALICE, "谢谢")
        [reply] = await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    history, _, new = user_prompt(llm.requests[0]).partition("New messages")
    assert (len(llm.requests), reply.params["message"][-1]["data"]["text"]) == (1, "记得带伞")
    assert ("] 路人甲: /天气" in history, "] 小满 (you): 晴，25°C" in history) == (True, True)
    assert new.strip().endswith("] 路人甲: 谢谢")


async def test_talk_no_blocking_matcher_could_take_is_stored_while_the_plugins_run(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message with none of the blocking commands and keywords is stored and waits for
    its answer at once, while a plugin's matcher is still running on it; pacebot answers it."""
    # A hand-over that waited for the plugins' verdict would wait out the test.
    monkeypatch.setattr(host, "VERDICT_WAIT_S", 60.0)
    llm.reply_json({"replies": [{"content": "挺好的", "send_delay_seconds": 0}]})
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        plugin = sys.modules["pacebot_test_plugin"]
        plugin.RELEASE = release = asyncio.Event()
        stalled_before = len(plugin.STALLED)
        await onebot.send_private_message(ALICE, "慢慢来，今天过得怎么样")
        await wait_until(lambda: plugin.STALLED[stalled_before:])
        await wait_waiting(core, PRIVATE, 1)
        running_while_stored = (plugin.STALLED[stalled_before:], release.is_set())
        release.set()
        [reply] = await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    assert running_while_stored == (["慢慢来，今天过得怎么样"], False)
    assert (len(llm.requests), reply.params["message"][-1]["data"]["text"]) == (1, "挺好的")


async def test_a_command_is_the_plugins_while_slow_runs_hold_every_slot(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plugin runs stalled in a slow handler hold every slot uncontested runs share; a
    blocking /天气 meanwhile is still answered by the plugin, with no LLM call for it."""
    monkeypatch.setattr(host, "VERDICT_WAIT_S", 60.0)  # a run waiting for a slot hangs
    llm.reply_json({"replies": [{"content": "慢慢说", "send_delay_seconds": 0}]})
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        plugin = sys.modules["pacebot_test_plugin"]
        plugin.RELEASE = release = asyncio.Event()
        stalled_before = len(plugin.STALLED)
        for n in range(host._RUNS_AT_ONCE):
            await onebot.send_private_message(ALICE, f"慢慢来 {n}")
        await wait_until(lambda: len(plugin.STALLED) - stalled_before == host._RUNS_AT_ONCE)
        await onebot.send_private_message(ALICE, "/天气")
        [weather] = await onebot.wait_for_call("send_msg", within_s=5)
        release.set()
        await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    asked = [user_prompt(request) for request in llm.requests]
    assert (weather.params["message"], len(asked)) == (WEATHER, 1)
    assert "/天气" not in asked[0].partition("New messages")[2]


def test_the_verdict_processors_are_nonebots_only_while_a_verdict_is_awaited() -> None:
    """nonebot holds pacebot's run processors while a contested run waits for its verdict
    (two at once here), and none of them once every verdict is in."""

    def ours() -> list[object]:
        held = [*nonebot_message._run_preprocessors, *nonebot_message._run_postprocessors]
        return [d.call for d in held if d.call in {host._matcher_starts, host._matcher_ended}]

    host._register_hooks()
    idle = ours()
    host._PROCESSORS.hold()
    host._PROCESSORS.hold()
    host._PROCESSORS.release()
    one_decided = ours()
    host._PROCESSORS.release()
    assert (idle, one_decided, ours()) == ([], [host._matcher_starts, host._matcher_ended], [])


async def test_a_non_blocking_matcher_runs_beside_the_usual_answer(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A plugin's non-blocking /回声 answers, and pacebot answers the same message too."""
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        llm.reply_json({"replies": [{"content": "回声真好玩", "send_delay_seconds": 0}]})
        await onebot.send_private_message(ALICE, "/回声 你好")
        [echo] = await onebot.wait_for_call("send_msg", within_s=5)
        [reply] = await onebot.wait_for_call("send_private_msg", within_s=5)
        await core.inbox.drain()
    assert (echo.params["message"][0]["data"]["text"], len(llm.requests)) == ("回声: 你好", 1)
    assert reply.params["message"][-1]["data"]["text"] == "回声真好玩"


async def test_pacebots_own_commands_never_reach_a_plugin(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """/help is pacebot's: answered by pacebot, unseen by the plugin's catch-all matcher,
    which does see ordinary talk."""
    seen_before = len(recorded("SEEN"))
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        await onebot.send_private_message(ALICE, "/help")
        [answer] = await onebot.wait_for_call("send_private_msg", within_s=5)
        llm.reply_json({"replies": [{"content": "嗯", "send_delay_seconds": 0}]})
        await onebot.send_private_message(ALICE, "在吗")
        await onebot.wait_for_call("send_private_msg", 2, within_s=5)
        await core.inbox.drain()
    assert answer.params["message"][-1]["data"]["text"].startswith("Commands you can use here:")
    assert recorded("SEEN")[seen_before:] == ["在吗"]


async def test_a_failing_plugin_is_logged_and_the_bot_answers(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A plugin that fails to import is one ERROR line; one whose matcher raises is
    nonebot's ERROR line naming the matcher, its chat and the traceback. The bot answers
    ordinary talk meanwhile, and nonebot's other lines (which quote the chatter) stay out."""
    config = plugin_config(tmp_path, llm, "pacebot_broken_plugin")
    with captured_logs("DEBUG") as lines:
        async with qq_bot(config) as (core, onebot):
            await onebot.send_private_message(ALICE, "/炸")
            await wait_until(lambda: any("failed." in line for line in lines.at("ERROR")))
            llm.reply_json({"replies": [{"content": "在的", "send_delay_seconds": 0}]})
            await onebot.send_private_message(ALICE, "在吗")
            [reply] = await onebot.wait_for_call("send_private_msg", within_s=5)
            await core.inbox.drain()
    errors = lines.at("ERROR")
    assert [line.message for line in errors] == [
        "plugins: pacebot_broken_plugin not loaded: RuntimeError: this plugin is broken",
        f"Running Matcher(type='message', module=pacebot_test_plugin, lineno={BOOM_LINE}) failed.",
    ]
    assert errors[1].startswith("ERROR nonebot.message: Running Matcher")  # nonebot's own
    assert [line for line in lines.tracebacks() if line.level != "DEBUG"] == [errors[1]]
    assert "ValueError: the plugin broke" in errors[1]
    assert errors[1].chat == str(PRIVATE)
    assert not [line for line in lines if "在吗" in line or "/炸" in line]
    assert reply.params["message"][-1]["data"]["text"] == "在的"


async def test_nonebots_lines_per_event_are_dropped_before_loguru_while_hosting(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """While plugins are hosted, nonebot's event handling and matchers hand loguru nothing
    below a warning (a sink with no filter sees none of their lines per event); after,
    their logger is loguru's again."""
    records: list[tuple[str, str]] = []
    sink = logger.add(lambda m: records.append((m.record["name"] or "", m.record["level"].name)))
    try:
        async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
            llm.reply_json({"replies": [{"content": "在的", "send_delay_seconds": 0}]})
            seen_before = len(recorded("SEEN"))
            await onebot.send_private_message(ALICE, "在吗")
            await onebot.wait_for_call("send_private_msg", within_s=5)
            await core.inbox.drain()
    finally:
        logger.remove(sink)
    per_event = [record for record in records if record[0] in NONEBOTS_EVENT_MODULES]
    assert (recorded("SEEN")[seen_before:], per_event) == (["在吗"], [])
    assert [vars(sys.modules[name])["logger"] for name in NONEBOTS_EVENT_MODULES] == [logger] * 2


async def test_to_me_in_a_group_follows_the_at_and_the_bots_name(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A to_me matcher fires for "@bot 抽签" and "小满 抽签" in a group, not for "抽签" alone;
    the LLM is asked nothing (the unaddressed one is context in mention mode)."""
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        await onebot.send_group_message(GROUP_ID, ALICE, [at(SELF_ID), text(" 抽签")])
        await onebot.send_group_message(GROUP_ID, ALICE, "抽签")
        await onebot.send_group_message(GROUP_ID, ALICE, "小满 抽签")
        calls = await onebot.wait_for_call("send_msg", 2, within_s=5)
        await core.inbox.drain()
    said = [call.params["message"][-1]["data"]["text"] for call in calls]
    assert (said, [c.params["group_id"] for c in calls], len(llm.requests)) == (
        ["上上签", "上上签"],
        [GROUP_ID, GROUP_ID],
        0,
    )


async def test_a_plugins_sends_keep_qqs_pace(tmp_path: Path, llm: FakeLLMServer) -> None:
    """A plugin that sends twice at once is held to QQ's pace: a second apart in one chat."""
    async with qq_bot(plugin_config(tmp_path, llm)) as (core, onebot):
        await onebot.send_private_message(ALICE, "/两句")
        first, second = await onebot.wait_for_call("send_msg", 2, within_s=5)
        await core.inbox.drain()
    gap_s = second.at - first.at
    assert (round(gap_s) >= 1, gap_s < 1.5) == (True, True)
