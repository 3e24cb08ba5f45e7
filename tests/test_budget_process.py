"""The gate and the caps through ``pacebot run`` as a real process: Telegram on the fake Bot
API (PTB polling it), the LLM on the fake OpenAI server (the openai SDK), the dashboard on,
and ``pacebot cost`` beside it.

A group batch without a reason costs no call, one with a reason costs one until the hour's
budget is spent; restarted with a hard cap already passed, an @ costs nothing; ``/status``,
the dashboard and ``pacebot cost`` give the same figures, the fake's own ``usage``.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from pathlib import Path
from typing import Any

import httpx

from fakes.bot_api import FakeBotAPI
from fakes.harness import dashboard_up, free_port, replies_json, run_pacebot, start_run
from fakes.openai_api import FakeLLMServer

LLM_KEY = "sk-budget-process-key-0123456789"
WEB_TOKEN = "budget-process-web-token-0123456789"
BEARER = {"Authorization": f"Bearer {WEB_TOKEN}"}
CLUB = -100123
CLUB_KEY = f"telegram:group:{CLUB}"
ADMIN = 7


def write_config(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI, web_port: int, *, hard: int = 0
) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[bot]
data_dir = "data"
admins = ["telegram:{ADMIN}"]

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05
max_delay_s = 1.0

[groups]
reply_mode = "smart"
talk_value = 1.0
unaddressed_calls_per_hour = 2
max_share = 1.0

[budget]
hard_daily_tokens = {hard}
price_in_per_million = 0.15
price_out_per_million = 0.6

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[telegram]
enabled = true
api_base_url = "{api.base_url}"

[web]
enabled = true
port = {web_port}
""",
        encoding="utf-8",
    )
    return path


ENV = {"PACEBOT_LLM_API_KEY": LLM_KEY, "PACEBOT_WEB_TOKEN": WEB_TOKEN}


async def start(config: Path, api: FakeBotAPI, url: str) -> asyncio.subprocess.Process:
    process = await start_run(config, {**ENV, "TELEGRAM_BOT_TOKEN": api.token})
    await api.wait_for("getUpdates", timeout=20)
    await dashboard_up(url)
    return process


async def stop(process: asyncio.subprocess.Process) -> str:
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    stderr = err.decode()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    return stderr


async def traces(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get(f"/api/chats/{CLUB_KEY}/traces", params={"n": 50})
    return list(response.json().get("traces", [])) if response.status_code == 200 else []


async def said(
    api: FakeBotAPI, client: httpx.AsyncClient, text: str, *, user: int
) -> dict[str, Any]:
    """Post ``text`` to the group; wait for its batch's trace and return it."""
    before = len(await traces(client))
    message_id = api.push_message(
        CLUB, text, user_id=user, first_name=f"u{user}", chat_type="supergroup"
    )
    async with asyncio.timeout(10):
        while True:
            for trace in await traces(client):
                if str(message_id) in trace["message_ids"] and len(await traces(client)) > before:
                    return trace
            await asyncio.sleep(0.05)


async def status_in_group(api: FakeBotAPI) -> str:
    """Send /status in the group as the admin; return the bot's answer."""
    before = len(api.sent_messages(CLUB))

    def answers() -> list[str]:
        texts = [str(m["text"]) for m in api.sent_messages(CLUB)[before:]]
        return [text for text in texts if text.startswith(f"chat: {CLUB_KEY}")]

    api.push_message(CLUB, "/status", user_id=ADMIN, chat_type="supergroup")
    await api.wait_for(answers, timeout=10)
    return answers()[0]


async def pacebot_cost(config: Path) -> dict[str, Any]:
    code, out, err = await run_pacebot("cost", "-c", str(config), "--json")
    assert code == 0, err
    return dict(json.loads(out))


def tokens_line(status: str) -> tuple[int, str]:
    """Read the bot's tokens and cost today from a /status answer."""
    found = re.search(r"LLM today: .*?, ([\d,]+) in all \(([^)]+)\)", status)
    assert found is not None, status
    return int(found.group(1).replace(",", "")), found.group(2)


async def test_the_gate_the_hourly_budget_and_the_hard_cap_through_pacebot_run(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """No reason: no call. Questions: one call each until the hour's two are spent. Every
    face gives the fake's usage. Restarted over a hard cap, an @ makes no call."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = write_config(tmp_path, llm, api, port)
    llm.reply_json(replies_json("一点了"))
    llm.reply_json(replies_json("吃了"))
    process = await start(config, api, url)
    try:
        async with httpx.AsyncClient(base_url=url, headers=BEARER) as client:
            chatter = await said(api, client, "今天好热", user=1001)
            first = await said(api, client, "有人知道几点了吗？", user=1002)
            second = await said(api, client, "有人吃饭了吗？", user=1003)
            spent = await said(api, client, "有人看比赛吗？", user=1004)
            status = await status_in_group(api)
            dashboard = (await client.get("/api/status")).json()["llm_today"]
            report = await pacebot_cost(config)
    finally:
        await stop(process)
    prompt = sum(c["usage"]["prompt_tokens"] for c in llm.completions)
    completion = sum(c["usage"]["completion_tokens"] for c in llm.completions)
    assert (chatter["why"], chatter["llm_calls"]) == ("stayed out", [])
    assert (first["why"], second["why"]) == ("answered", "answered")
    assert (spent["why"], spent["llm_calls"]) == ("stayed out", [])
    assert "the hour's unaddressed calls are spent" in spent.get("gate", [])
    assert len(llm.requests) == 2
    assert "unaddressed calls in the last hour: 2 of 2" in status.splitlines()
    shown_tokens, shown_cost = tokens_line(status)
    assert shown_tokens == dashboard["bot"]["total_tokens"] == report["total"]["total_tokens"]
    assert shown_tokens == prompt + completion
    assert shown_cost == dashboard["bot"]["cost_text"] == report["total"]["cost_text"]
    assert report["total"]["cost"] == (prompt * 0.15 + completion * 0.6) / 1_000_000

    config = write_config(tmp_path, llm, api, port, hard=1)
    process = await start(config, api, url)
    try:
        async with httpx.AsyncClient(base_url=url, headers=BEARER) as client:
            held = await said(api, client, f"@{api.bot_username} 在吗", user=1005)
            status = await status_in_group(api)
            dashboard = (await client.get("/api/status")).json()["llm_today"]
            report = await pacebot_cost(config)
    finally:
        await stop(process)
    log = (tmp_path / "data" / "logs" / "pacebot.log").read_text(encoding="utf-8")
    assert (held["why"], held["llm_calls"], held["gate"]) == (
        "over budget",
        [],
        ["hard cap reached"],
    )
    assert len(llm.requests) == 2
    assert "hard cap reached: the bot stays silent, no LLM call until" in status
    assert dashboard["hard_cap_reached"] is True
    assert tokens_line(status)[0] == report["total"]["total_tokens"] == prompt + completion
    for secret in (LLM_KEY, WEB_TOKEN, api.token):
        assert secret not in log
