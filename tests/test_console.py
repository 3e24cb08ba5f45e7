"""`pacebot console` as a person uses it: a real process, piped input, the fake LLM server.

Standard input is a pipe, a regular file or /dev/null here, as under a service manager or
in a container: the console must read it to its end, answer and leave, never hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
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


async def test_piped_commands_are_answered_in_the_order_of_the_lines(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A piped command waits until what was written before it is answered, and is answered
    before the next line: the transcript follows the input, line by line."""
    llm.reply_json(replies_json("第一个回答"))
    llm.reply_json(replies_json("第二个回答"))
    code, out, err = await run_console(
        console_config(tmp_path, llm.base_url), "你好\n/status\n在吗\n/trace\n".encode()
    )
    lines = out.splitlines()
    marks = [
        "you: 你好", "小满: 第一个回答", "you: /status", "小满: chat: console:private:local",
        "you: 在吗", "小满: 第二个回答", "you: /trace", "小满: batch 2 of console:private:local",
    ]  # fmt: skip
    found = [next(i for i, line in enumerate(lines) if line.startswith(mark)) for mark in marks]
    assert code == 0, err
    assert found == sorted(found)
    assert len(llm.requests) == 2


async def test_over_the_hard_cap_the_console_says_once_why_it_is_silent(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Once today's hard cap is spent the console says, once, that the bot stays silent and
    until when; the lines after it are kept, unanswered, and cost no call."""
    llm.reply_json(replies_json("好的"))
    config = console_config(tmp_path, llm.base_url)
    config.write_text(config.read_text() + "\n[budget]\nhard_daily_tokens = 10\n")
    code, out, err = await run_console(config, "你好\n/status\n还在吗\n再说一句\n".encode())
    said = [line for line in out.splitlines() if line.startswith("小满 stays silent")]
    assert code == 0, err
    assert len(said) == 1
    assert said[0].startswith(
        "小满 stays silent: today's hard cap of [budget] (10 tokens) is reached, so no LLM call"
        " is made until the next chat day begins at "
    )
    assert out.splitlines()[-1] == "you: 再说一句"
    assert len(llm.requests) == 1


class StalledScreen(AssertionError):
    """What a test waited for was never drawn; the message is the screen."""


STILL_S = 0.2
"""How long a terminal's screen stands still before a test types: long after a redraw."""


class Terminal:
    """A pseudo-terminal for a console process: keys go in, everything it draws comes out."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        os.set_blocking(self.master, False)
        self.screen = b""

    async def read_until(
        self, wanted: bytes, *, after: bytes = b"", within_s: float = 20.0
    ) -> None:
        """Read what the process draws until ``wanted`` has appeared (after the last
        ``after`` drawn, if given: a prompt drawn again once a line is taken)."""
        loop = asyncio.get_running_loop()
        async with self._showing_the_screen(), asyncio.timeout(within_s):
            while wanted not in self.screen[self._end_of(after) :]:
                ready = loop.create_future()
                loop.add_reader(self.master, ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_reader(self.master)
                try:
                    self.screen += os.read(self.master, 4096)
                except OSError:  # the process closed the terminal: it has left
                    return

    @contextlib.asynccontextmanager
    async def _showing_the_screen(self) -> AsyncIterator[None]:
        """Say what was drawn when what a test waited for never came."""
        try:
            yield
        except TimeoutError as exc:
            raise StalledScreen(self.screen.decode(errors="replace")) from exc

    def _end_of(self, after: bytes) -> int:
        """Where the last ``after`` drawn ends (0 without one)."""
        return self.screen.rfind(after) + len(after) if after and after in self.screen else 0

    async def type(self, keys: str) -> None:
        """Type ``keys`` once the screen has stood still for a moment: prompt_toolkit prints
        above the line in cooked mode, and a key typed then would be echoed, not edited."""
        while True:
            drawn = len(self.screen)
            with contextlib.suppress(StalledScreen):
                await self.read_until(b"\x00", within_s=STILL_S)  # never drawn: times out
            if len(self.screen) == drawn:
                break
        os.write(self.master, keys.encode())

    def close(self) -> None:
        os.close(self.master)


@contextlib.asynccontextmanager
async def at_a_terminal(
    tmp_path: Path, llm: FakeLLMServer, *, language: str = "en"
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Terminal]]:
    """Run the console with a pseudo-terminal as its standard input and output (one that
    answers no cursor position request, so prompt_toolkit is told not to ask); kill it if
    the test did not see it leave."""
    bot = f'language = "{language}"\n'
    config = console_config(tmp_path, llm.base_url, debounce_s=30.0, bot=bot)
    terminal = Terminal()
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli", "console", "-c", str(config),
        stdin=terminal.slave, stdout=terminal.slave, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(terminal.slave)
    try:
        yield process, terminal
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        terminal.close()


async def test_a_terminal_edits_lines_with_arrows_and_history(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """At a terminal a line is edited as in a shell: Left moves the cursor (X goes in the
    middle), Up brings the last line back; Ctrl-D answers what waits, in one call."""
    llm.reply_json(replies_json("收到"))
    async with at_a_terminal(tmp_path, llm) as (process, terminal):
        await terminal.read_until(b"you>")  # its space is drawn as a cursor move
        await terminal.type("ab\x1b[DX\r")  # a, b, Left, X, Enter
        await terminal.read_until(b"waiting for you to finish")
        await terminal.type("\x1b[A!\r")  # Up: the line before, then "!", Enter
        await terminal.read_until(b"you>", after=b"aXb!")  # the prompt is back
        await terminal.type("\x04")  # Ctrl-D: answer what waits and leave
        await terminal.read_until("小满: 收到".encode())
        _, err = await asyncio.wait_for(process.communicate(), 20)
    [request] = llm.requests
    batch = request["messages"][-1]["content"]
    assert (process.returncode, "Traceback" in err.decode()) == (0, False)
    assert ("aXb" in batch, "aXb!" in batch) == (True, True)


async def test_ctrl_c_at_a_terminal_leaves_on_a_line_of_its_own(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Ctrl-C at the prompt (a key, not a signal: the terminal is raw) leaves at once and
    says what waits on a line of its own; the prompt is in bot.language."""
    async with at_a_terminal(tmp_path, llm, language="zh") as (process, terminal):
        await terminal.read_until("你>".encode())
        await terminal.type("还在吗\r")
        await terminal.read_until("在等你说完".encode())
        await terminal.read_until("你>".encode(), after="在等你说完".encode())  # prompt back
        await terminal.type("\x03")  # Ctrl-C
        await terminal.read_until("下次启动时会回复".encode())
        _, err = await asyncio.wait_for(process.communicate(), 20)
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.screen.decode()).replace("\r", "")
    [left] = [line for line in drawn.split("\n") if "下次启动时会回复" in line]
    assert (process.returncode, "Traceback" in err.decode()) == (0, False)
    assert left == "还有 1 条消息在等待：小满 下次启动时会回复。"
    assert llm.requests == []
