"""`pacebot console` as a person uses it: a real process, piped input, the fake LLM server.

Standard input is a pipe, a regular file or /dev/null here, as under a service manager or
in a container: the console must read it to its end, answer and leave, never hang.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import IO

from fakes.harness import replies_json
from fakes.openai_api import FakeLLMServer
from fakes.process import console_config, start_console

KEY = "sk-console-test-key-123456"
BANNER = (
    "pacebot console: you (console:private:local, an admin) are chatting with 小满; /help "
    "lists the commands. Ctrl-D: answer what is waiting and leave; Ctrl-C: leave now."
)
WAITING = "… (小满 is waiting for you to finish)"


async def run_console(
    config: Path,
    stdin: bytes | int | IO[bytes],
    *,
    env: dict[str, str] | None = None,
    within_s: float = 20.0,
) -> tuple[int, str, str]:
    """Run the console with ``stdin`` piped (bytes) or redirected (a file or DEVNULL)."""
    env = env or {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "PACEBOT_LOG_LEVEL": "DEBUG"}
    piped = isinstance(stdin, bytes)
    process = await start_console(config, env, stdin=asyncio.subprocess.PIPE if piped else stdin)
    try:
        communicating = process.communicate(stdin if isinstance(stdin, bytes) else None)
        out, err = await asyncio.wait_for(communicating, within_s)
    except TimeoutError:
        process.kill()
        out, err = await process.communicate()
        raise AssertionError(err.decode()) from None
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_console_chat_answers_and_exits_at_end_of_input(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Two piped lines, shown as the user's, get one answer in two paced messages, then exit 0."""
    llm.reply_json(replies_json("你好呀", "今天过得怎么样？", delay=0.1))
    code, out, err = await run_console(
        console_config(tmp_path, llm.base_url), "嗨\n\n我回来了\n".encode()
    )
    assert code == 0, err
    assert out.splitlines() == [
        BANNER,
        "you: 嗨",
        WAITING,
        "you: 我回来了",
        "小满: 你好呀",
        "(小满 is typing…)",
        "小满: 今天过得怎么样？",
    ]
    assert len(llm.requests) == 1
    assert KEY not in err
    assert (tmp_path / "data" / "pacebot.sqlite3").exists()
    assert KEY not in (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")


async def test_console_user_is_admin(tmp_path: Path, llm: FakeLLMServer) -> None:
    """/status works in the console without any admins configured, and makes no LLM call."""
    code, out, _ = await run_console(console_config(tmp_path, llm.base_url), b"/status\n")
    assert code == 0
    assert "chat: console:private:local" in out
    assert llm.requests == []


async def test_console_without_key_explains(tmp_path: Path, llm: FakeLLMServer) -> None:
    """Without the API key the console exits 1 naming the variable to set."""
    env = {k: v for k, v in os.environ.items() if k != "PACEBOT_LLM_API_KEY"}
    code, _, err = await run_console(console_config(tmp_path, llm.base_url), b"hi\n", env=env)
    assert code == 1
    assert "PACEBOT_LLM_API_KEY is not set" in err


async def test_console_ctrl_c_exits_cleanly(tmp_path: Path, llm: FakeLLMServer) -> None:
    """SIGINT while waiting for input stops the console with exit code 0 and no traceback."""
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "PACEBOT_LOG_LEVEL": "INFO"}
    process = await start_console(console_config(tmp_path, llm.base_url), env)
    assert process.stdout is not None
    banner = await asyncio.wait_for(process.stdout.readline(), 20)  # it is up
    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert (process.returncode, banner.decode().rstrip("\n"), out.decode()) == (0, BANNER, "")
    assert "Traceback" not in err.decode()


async def test_ctrl_c_says_a_message_is_still_waiting(tmp_path: Path, llm: FakeLLMServer) -> None:
    """SIGINT while the bot waits for more says what is left for the next start, exit 0."""
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY}
    process = await start_console(console_config(tmp_path, llm.base_url, debounce_s=30.0), env)
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("还在吗\n".encode())
    await process.stdin.drain()
    lines = [await asyncio.wait_for(process.stdout.readline(), 20) for _ in range(3)]
    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0, err.decode()
    assert [line.decode().rstrip("\n") for line in lines] == [BANNER, "you: 还在吗", WAITING]
    assert out.decode().splitlines() == [
        "1 message(s) still waiting: 小满 answers them on the next start."
    ]
    assert llm.requests == []


async def test_console_with_dev_null_as_input_exits_at_once(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """`pacebot console < /dev/null` shows the banner and exits 0: no traceback, no hang."""
    code, out, err = await run_console(
        console_config(tmp_path, llm.base_url), asyncio.subprocess.DEVNULL, within_s=20
    )
    assert (code, out.splitlines()) == (0, [BANNER])
    assert "Traceback" not in err
    assert "PermissionError" not in err


async def test_console_says_it_does_not_serve_the_dashboard(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With [web] enabled the console says, under its banner, that only `pacebot run` serves it."""
    config = console_config(tmp_path, llm.base_url)
    config.write_text(config.read_text() + "\n[web]\nenabled = true\nport = 8123\n")
    code, out, err = await run_console(config, asyncio.subprocess.DEVNULL)
    assert (code, out.splitlines()) == (
        0,
        [
            BANNER,
            "[web] is enabled, but the console does not serve the dashboard: only `pacebot run`"
            " does, at http://127.0.0.1:8123/",
        ],
    ), err


async def test_lines_typed_at_a_terminal_are_not_printed_again(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With a terminal on stdin (it shows what is typed) the console prints only its own lines."""
    llm.reply_json(replies_json("收到"))
    terminal, stdin = os.openpty()
    try:
        env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY}
        process = await start_console(console_config(tmp_path, llm.base_url), env, stdin=stdin)
        assert process.stdout is not None
        banner = await asyncio.wait_for(process.stdout.readline(), 20)
        os.write(terminal, "好的\n".encode())
        lines = [await asyncio.wait_for(process.stdout.readline(), 20) for _ in range(2)]
        process.send_signal(signal.SIGINT)
        await asyncio.wait_for(process.communicate(), 20)
    finally:
        os.close(terminal)
        os.close(stdin)
    assert [line.decode().rstrip("\n") for line in (banner, *lines)] == [
        BANNER,
        WAITING,
        "小满: 收到",
    ]


async def test_console_reads_a_file_to_its_end_and_answers(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A file on stdin is read to its end, each line shown as the user's, answered in one batch."""
    llm.reply_json(replies_json("收到"))
    lines = tmp_path / "input.txt"
    lines.write_text("第一行\n第二行\n", encoding="utf-8")
    with lines.open("rb") as stdin:
        code, out, err = await run_console(console_config(tmp_path, llm.base_url), stdin)
    assert (code, out.splitlines()) == (
        0,
        [BANNER, "you: 第一行", WAITING, "you: 第二行", "小满: 收到"],
    ), err
    assert len(llm.requests) == 1
