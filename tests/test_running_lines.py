"""The log says a platform runs only once it does: Telegram answered a poll, OneBot connected."""

from __future__ import annotations

from pathlib import Path

from adapters.app import load_platform_modules, running_bot
from bot.secrets import Secrets
from fakes.bot_api import FakeBotAPI
from fakes.harness import TEST_KEY, free_port, make_config, wait_until
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from tests.log_capture import LogLines, captured_logs


def running(lines: LogLines) -> list[str]:
    return [line for line in lines if "running" in line]


async def test_telegram_runs_once_its_first_poll_is_answered(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """While the first getUpdates waits for its answer nothing says running; then one line does."""
    config = make_config(
        tmp_path, llm.base_url, telegram={"enabled": True, "api_base_url": api.base_url}
    )
    api.delay_next("getUpdates", 0.3)
    secrets = Secrets(TEST_KEY, TEST_KEY, telegram_token=api.token)
    with captured_logs("INFO") as lines:
        async with running_bot(config, secrets, telegram_poll_timeout_s=0.05):
            await api.wait_for("getUpdates", timeout=5)
            before_the_answer = running(lines)
            await wait_until(lambda: running(lines), within_s=5)
            await api.wait_for("getUpdates", count=3, timeout=5)
            after_more_polls = running(lines)
    assert before_the_answer == []
    assert after_more_polls == [
        f"INFO adapters.telegram.platform: Telegram running as @{api.bot_username}: "
        "first poll answered"
    ]


async def test_qq_listens_and_runs_only_once_onebot_connects(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Without a OneBot client QQ says it listens and waits; a connection makes it run."""
    port = free_port()
    config = make_config(tmp_path, llm.base_url, qq={"enabled": True, "port": port})
    url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
    load_platform_modules(config)  # importing nonebot resets loguru's sinks: before capturing
    with captured_logs("INFO") as lines:
        async with running_bot(config, Secrets(TEST_KEY, TEST_KEY)):
            waiting = [line for line in lines if "QQ: listening" in line]
            before_onebot = running(lines)
            async with FakeOneBot(url, self_id=10001):
                await wait_until(lambda: running(lines), within_s=5)
            connected = running(lines)
    assert waiting == [
        f"INFO adapters.qq.platform: QQ: listening on 127.0.0.1:{port}, "
        f"waiting for OneBot to connect to {url}"
    ]
    assert before_onebot == []
    assert connected == ["INFO adapters.qq.platform: QQ: OneBot connected as 10001; QQ is running"]
