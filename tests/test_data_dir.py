"""An unusable ``bot.data_dir``: every command says so in one line and exits 1, never a traceback.

``check``, ``console`` and ``run`` are run as real processes, as a newcomer runs them;
``summarize``, ``recall`` and ``trace`` share their start and are called in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.cli import main

KEY = "sk-data-dir-test-key-123456"
TOKEN = "123456:data-dir-test-token"


def unusable(case: str, tmp_path: Path) -> tuple[str, str]:
    """Make an unusable data directory of this kind; return it and the reason pacebot gives."""
    if case == "under /proc":
        return "/proc/pacebot-data", "cannot create /proc/pacebot-data (No such file or directory)"
    if case == "an existing file":
        taken = tmp_path / "taken"
        taken.write_text("not a directory\n", encoding="utf-8")
        return str(taken), f"{taken} exists and is not a directory"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return str(locked), f"cannot write in {locked} (Permission denied)"


CASES = [
    "under /proc",
    "an existing file",
    pytest.param(
        "not writable",
        marks=pytest.mark.skipif(
            os.geteuid() == 0, reason="root writes into a mode 0o500 directory all the same"
        ),
    ),
]


def write_config(tmp_path: Path, data_dir: str) -> Path:
    """Write a config with Telegram on (so `run` gets as far as it can) and this data_dir."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[bot]\ndata_dir = "{data_dir}"\n\n[telegram]\nenabled = true\n'
        'api_base_url = "http://127.0.0.1:9/bot"\n',
        encoding="utf-8",
    )
    return path


def pacebot(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m adapters.cli`` with the secrets set and no terminal on stdin."""
    env = {**os.environ, "PACEBOT_LLM_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": TOKEN}
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("case", CASES)
def test_check_names_the_key_the_path_and_the_reason(case: str, tmp_path: Path) -> None:
    """`pacebot check` tries the data directory and its logs/, and refuses one it cannot use."""
    data_dir, reason = unusable(case, tmp_path)
    done = pacebot("check", "-c", str(write_config(tmp_path, data_dir)))
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [f'✗ bot.data_dir = "{data_dir}": {reason}'],
    )


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["console", "run"])
def test_console_and_run_say_it_in_one_line(case: str, command: str, tmp_path: Path) -> None:
    """`pacebot console` and `pacebot run` exit 1 with one line naming bot.data_dir."""
    data_dir, reason = unusable(case, tmp_path)
    done = pacebot(command, "-c", str(write_config(tmp_path, data_dir)))
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (
        1,
        "",
        [f'pacebot: bot.data_dir = "{data_dir}": {reason}'],
    )


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    "command",
    [
        ["summarize"],
        ["recall", "昨天聊了什么", "--chat", "console:private:local"],
        ["trace", "--chat", "console:private:local"],
    ],
)
def test_the_memory_commands_say_it_in_one_line(
    case: str,
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`summarize`, `recall` and `trace` exit 1 with the same one line."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", KEY)
    data_dir, reason = unusable(case, tmp_path)
    code = main([*command, "-c", str(write_config(tmp_path, data_dir))])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err.splitlines()) == (
        1,
        "",
        [f'pacebot: bot.data_dir = "{data_dir}": {reason}'],
    )


def test_check_leaves_no_directory_behind(tmp_path: Path) -> None:
    """A check that had to create the data directory to try it removes it again."""
    done = pacebot("check", "-c", str(write_config(tmp_path, "state/pacebot")))
    assert (done.returncode, done.stderr, (tmp_path / "state").exists()) == (0, "", False)
