"""Live reload of a real ``pacebot run``: ``pacebot reload`` and SIGHUP apply the file from
the next batch, keep what needs a restart, and refuse an invalid file changing nothing."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from fakes.bot_api import FakeBotAPI
from fakes.harness import replies_json, run_pacebot, start_run
from fakes.openai_api import FakeLLMServer
from fakes.process import console_config

KEY = "sk-reload-process-key-123456"
ALICE = 1001


def write_config(path: Path, llm: FakeLLMServer, api: FakeBotAPI, *, persona: str) -> None:
    """Write the run's config with Telegram on and ``persona`` as the bot's."""
    telegram = f'\n[telegram]\nenabled = true\napi_base_url = "{api.base_url}"\n'
    console_config(path.parent, llm.base_url, bot=f'persona = "{persona}"\n', tables=telegram)


def system_prompt(llm: FakeLLMServer, index: int) -> str:
    return str(llm.requests[index]["messages"][0]["content"])


async def logged(tmp_path: Path, words: str, *, times: int) -> None:
    """Wait until the run's log file holds ``words`` ``times`` times."""
    log = tmp_path / "data" / "logs" / "pacebot.log"
    async with asyncio.timeout(10):
        while not log.exists() or log.read_text(encoding="utf-8").count(words) < times:  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.02)


async def ask(api: FakeBotAPI, llm: FakeLLMServer, words: str, *, answers: int) -> None:
    """Say ``words`` as Alice and wait until the LLM was asked ``answers`` times."""
    api.push_message(ALICE, words)
    await llm.wait_for_requests(answers, timeout=10)
    await api.wait_for("sendMessage", count=answers, timeout=10)


async def test_reload_applies_the_new_persona_to_the_next_answer(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """``pacebot reload`` after the persona changed: the next answer's prompt holds the new
    one; a changed platform address is kept as it runs and logged as needing a restart;
    SIGHUP with an invalid file changes nothing and the log says why."""
    for text in ("一", "二", "三"):
        llm.reply_json(replies_json(text))
    config = tmp_path / "config.toml"
    write_config(config, llm, api, persona="CANARY-OLD 你是小满。")
    env = {"PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": api.token}
    process = await start_run(config, env)
    await api.wait_for("getUpdates", timeout=20)
    await ask(api, llm, "在吗", answers=1)

    write_config(config, llm, api, persona="CANARY-NEW 你是阿福。")
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("max_retries = 0", "max_retries = 1"), encoding="utf-8")
    code, out, err = await run_pacebot("reload", "-c", str(config), env=env)
    await logged(tmp_path, "reload asked by SIGHUP: ", times=1)
    await ask(api, llm, "还在吗", answers=2)

    config.write_text(text.replace('persona = "CANARY-NEW 你是阿福。"', "persona = 5"))
    bad_code, _, bad_err = await run_pacebot("reload", "-c", str(config), env=env)
    process.send_signal(signal.SIGHUP)
    await logged(tmp_path, "reload asked by SIGHUP refused", times=1)
    await ask(api, llm, "真的吗", answers=3)
    process.send_signal(signal.SIGTERM)
    _, run_err = await asyncio.wait_for(process.communicate(), 20)
    log = run_err.decode()

    assert (code, err, out.startswith("asked pacebot (process ")) == (0, "", True)
    assert ("CANARY-OLD" in system_prompt(llm, 0), "CANARY-NEW" in system_prompt(llm, 1)) == (
        True,
        True,
    )
    assert "CANARY-NEW" in system_prompt(llm, 2)  # the invalid file changed nothing
    assert (bad_code, bad_err.splitlines()) == (
        1,
        [
            "pacebot: invalid configuration:",
            '  - bot.persona = 5: must be a string in double quotes, e.g. "你是小满，一个说话'
            '自然、简短、有点俏皮的朋友。"',
        ],
    )
    assert "applied from the next batch; needs a restart, kept as it runs: llm.max_retries" in log
    assert "reload asked by SIGHUP refused, nothing changed: invalid configuration:" in log
    assert "Traceback" not in log
