"""`pacebot console` as a person uses it: a real process, piped input, the fake LLM server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from fakes.harness import replies_json
from fakes.openai_api import FakeLLMServer

KEY = "sk-console-test-key-123456"


def write_config(tmp_path: Path, llm_url: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
name = "小满"
data_dir = "data"

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05
max_delay_s = 0.2

[llm]
base_url = "{llm_url}"
max_retries = 0
timeout_s = 5.0
""",
        encoding="utf-8",
    )
    return path


async def start_console(config: Path, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "console",
        "-c",
        str(config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def run_console(
    config: Path, stdin: bytes, *, env: dict[str, str] | None = None, within_s: float = 20.0
) -> tuple[int, str, str]:
    env = env or {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "PACEBOT_LOG_LEVEL": "DEBUG"}
    process = await start_console(config, env)
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), within_s)
    except TimeoutError:
        process.kill()
        out, err = await process.communicate()
        raise AssertionError(err.decode()) from None
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_console_chat_answers_and_exits_at_end_of_input(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Two typed lines get one answer in two paced messages with typing shown, then a clean exit."""
    llm.reply_json(replies_json("你好呀", "今天过得怎么样？", delay=0.1))
    code, out, err = await run_console(
        write_config(tmp_path, llm.base_url), "嗨\n我回来了\n".encode()
    )
    assert code == 0, err
    assert out.splitlines() == ["小满: 你好呀", "(小满 is typing…)", "小满: 今天过得怎么样？"]
    assert len(llm.requests) == 1
    assert KEY not in err
    assert (tmp_path / "data" / "pacebot.sqlite3").exists()
    assert KEY not in (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")


async def test_console_user_is_admin(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/status works in the console without any admins configured, and makes no LLM call."""
    code, out, _ = await run_console(write_config(tmp_path, llm.base_url), b"/status\n")
    assert code == 0
    assert "chat: console:private:local" in out
    assert llm.requests == []


async def test_console_without_key_explains(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Without the API key the console exits 1 naming the variable to set."""
    env = {k: v for k, v in os.environ.items() if k != "PACEBOT_LLM_API_KEY"}
    code, _, err = await run_console(write_config(tmp_path, llm.base_url), b"hi\n", env=env)
    assert code == 1
    assert "PACEBOT_LLM_API_KEY is not set" in err


async def test_console_ctrl_c_exits_cleanly(tmp_path: Path, llm: FakeLLMServer) -> None:
    """SIGINT while waiting for input stops the console with exit code 0 and no traceback."""
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "PACEBOT_LOG_LEVEL": "INFO"}
    process = await start_console(write_config(tmp_path, llm.base_url), env)
    assert process.stderr is not None
    await asyncio.wait_for(process.stderr.readline(), 20)  # the first log line: it is up
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0
    assert "Traceback" not in err.decode()
