"""The dashboard inside a real ``pacebot run``, beside Telegram and QQ's own uvicorn server."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import httpx

from fakes.bot_api import FakeBotAPI
from fakes.harness import free_port, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer

LLM_KEY = "sk-web-process-key-0123456789"
WEB_TOKEN = "web-process-token-0123456789abcdef"


def write_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, *, web_port: int, qq_port: int
) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[qq]
enabled = true
port = {qq_port}

[web]
enabled = true
port = {web_port}
""",
        encoding="utf-8",
    )
    return path


def environment(api: FakeBotAPI) -> dict[str, str]:
    return {
        "PACEBOT_LLM_API_KEY": LLM_KEY,
        "TELEGRAM_BOT_TOKEN": api.token,
        "PACEBOT_WEB_TOKEN": WEB_TOKEN,
    }


async def test_the_dashboard_runs_beside_telegram_and_qq_and_stops_on_sigterm(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """Two uvicorn servers in one process: the dashboard sees both platforms; SIGTERM exits 0."""
    web_port, qq_port = free_port(), free_port()
    config = write_config(tmp_path, llm, api, web_port=web_port, qq_port=qq_port)
    process = await start_run(config, environment(api))
    await api.wait_for("getUpdates", timeout=20)
    onebot = FakeOneBot(f"ws://127.0.0.1:{qq_port}/onebot/v11/ws", self_id=10001)
    await onebot.connect_when_listening()
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{web_port}") as client:
            statuses: list[object] = []

            async def both_connected() -> bool:
                body = (await client.get("/api/status", headers=bearer)).json()
                statuses.append(body["platforms"])
                return all(p["connected"] for p in body["platforms"])

            async with asyncio.timeout(10):
                while not await both_connected():  # noqa: ASYNC110 - another process
                    await asyncio.sleep(0.05)
    finally:
        await onebot.close()
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")

    assert process.returncode == 0, err.decode()
    assert statuses[-1] == [
        {"name": "telegram", "connected": True},
        {"name": "qq", "connected": True},
    ]
    assert "Traceback" not in err.decode()
    for line in ("dashboard running at", "dashboard stopped", "QQ stopped"):
        assert line in log
    assert WEB_TOKEN not in log


async def test_a_run_logs_no_scheduler_or_server_chatter_at_info(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """At INFO a run with the dashboard and QQ logs its own start lines, not APScheduler's or
    uvicorn's."""
    web_port, qq_port = free_port(), free_port()
    config = write_config(tmp_path, llm, api, web_port=web_port, qq_port=qq_port)
    process = await start_run(config, environment(api))
    await api.wait_for("getUpdates", timeout=20)
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    lines = err.decode().splitlines()
    ours = [line.split(" | ")[3] for line in lines if "dashboard" in line or "QQ: list" in line]
    assert (process.returncode, len(lines) > 0) == (0, True)
    assert ours == [
        f"QQ: listening on 127.0.0.1:{qq_port}, waiting for OneBot to connect to "
        f"ws://127.0.0.1:{qq_port}/onebot/v11/ws",
        f"dashboard running at http://127.0.0.1:{web_port}",
        "dashboard stopped",
    ]
    assert [line for line in lines if "apscheduler" in line or "uvicorn" in line] == []


async def test_a_taken_dashboard_port_stops_the_run_and_names_the_keys(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """The dashboard's port already in use: exit 1 naming web.host and web.port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        web_port = taken.getsockname()[1]
        config = write_config(tmp_path, llm, api, web_port=web_port, qq_port=free_port())
        process = await start_run(config, environment(api))
        _, err = await asyncio.wait_for(process.communicate(), 30)
    stderr = err.decode()

    assert process.returncode == 1, stderr
    assert "pacebot: cannot listen for the dashboard on 127.0.0.1:" in stderr
    assert "check web.host and web.port" in stderr
    assert "Traceback" not in stderr
