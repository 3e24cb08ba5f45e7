"""nonebot plugins through a real ``pacebot run``, and ``pacebot plugin install`` / ``list``.

The plugins are the ones the tests write (``fakes/plugins.py``) and one from the registry,
``nonebot-plugin-status`` (in the test extras), with ``nonebot-plugin-localstore``,
``-apscheduler`` and ``-alconna`` underneath.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import httpx
import tomlkit

from adapters.plugins.install import add_to_config
from fakes.harness import dashboard_up, free_port, run_pacebot, start_run
from fakes.onebot import FakeOneBot
from fakes.openai_api import FakeLLMServer
from fakes.plugins import write_plugins

KEY = "sk-plugins-process-key-1234"
WEB_TOKEN = "web-token-for-plugin-tests-0123"
ALICE = 42
PLUGINS = [
    "pacebot_test_plugin",
    "pacebot_test_extras",
    "nonebot_plugin_status",
    "pacebot_broken_plugin",
    "pacebot_unstartable_plugin",
]


def write_config(tmp_path: Path, llm: FakeLLMServer, *, port: int, web_port: int = 0) -> Path:
    path = tmp_path / "config.toml"
    web = f"\n[web]\nenabled = true\nport = {web_port}\n" if web_port else ""
    path.write_text(
        f"""# the operator's own comment
[bot]
data_dir = "data"
admins = ["qq:{ALICE}"]  # Alice may ask the status plugin (a superuser to nonebot)

[pacing]
debounce_min_s = 0.05
debounce_max_s = 0.05

[llm]
base_url = "{llm.base_url}"
max_retries = 0

[qq]
enabled = true
port = {port}

[plugins]
nonebot = {PLUGINS!r}  # what the group uses
{web}""".replace("'", '"'),
        encoding="utf-8",
    )
    return path


def plugin_env(tmp_path: Path) -> dict[str, str]:
    """The environment a ``pacebot`` process needs to import the plugins the tests write."""
    folder = write_plugins(tmp_path / "plugins")
    return {"PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


def said(call_params: dict[str, object]) -> str:
    """The words a send call posted: a plain string, or the text of its segments."""
    message = call_params["message"]
    if isinstance(message, str):
        return message
    assert isinstance(message, list)
    return "".join(str(segment["data"].get("text", "")) for segment in message)


async def test_pacebot_run_hosts_the_plugins_beside_the_llm(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """Through `pacebot run`: a plugin's command is answered by the plugin (0 LLM calls),
    alconna and apscheduler commands work, localstore writes under <data_dir>, a registry
    plugin answers, ordinary talk is answered by pacebot with the plugins' words in the
    history, and a broken and an unstartable plugin are one log line each."""
    port, web_port = free_port(), free_port()
    config = write_config(tmp_path, llm, port=port, web_port=web_port)
    env = {"PACEBOT_LLM_API_KEY": KEY, "PACEBOT_WEB_TOKEN": WEB_TOKEN, **plugin_env(tmp_path)}
    process = await start_run(config, env)
    onebot = FakeOneBot(f"ws://127.0.0.1:{port}/onebot/v11/ws", self_id=10001)
    await onebot.connect_when_listening()
    try:
        dashboard = f"http://127.0.0.1:{web_port}"
        await dashboard_up(dashboard)
        async with httpx.AsyncClient(base_url=dashboard) as client:
            overview = await client.get("/", headers={"Authorization": f"Bearer {WEB_TOKEN}"})
        await onebot.send_private_message(ALICE, "/天气")
        await onebot.send_private_message(ALICE, "/掷骰 6")
        await onebot.send_private_message(ALICE, "/稍后")
        plugin_sends = await onebot.wait_for_call("send_msg", 3, within_s=10)
        [reminder] = await onebot.wait_for_call("send_private_msg", within_s=10)
        calls_before_talk = len(llm.requests)
        llm.reply_json({"replies": [{"content": "机器还不错", "send_delay_seconds": 0}]})
        await onebot.send_private_message(ALICE, "/状态")
        status = (await onebot.wait_for_call("send_msg", 4, within_s=10))[3]
        [_, answer] = await onebot.wait_for_call("send_private_msg", 2, within_s=10)
    finally:
        await onebot.close()
    process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 20)
    log = err.decode()

    assert (process.returncode, "Traceback" in log) == (0, False)
    assert sorted(said(call.params) for call in plugin_sends) == [
        "好的，稍后提醒你",
        "掷出了 6 面骰",
        "晴，25°C",
    ]
    last_plugin_send = max(call.at for call in plugin_sends)
    assert (said(reminder.params), reminder.at - last_plugin_send >= 0.95) == ("时间到了", True)
    assert (calls_before_talk, said(status.params).startswith("CPU: ")) == (0, True)
    history = str(llm.requests[0]["messages"][-1]["content"]).split("New messages")[0]
    lines = {line.split("] ", 1)[-1] for line in history.splitlines()}
    assert {"小满 (you): 晴，25°C", "小满 (you): 掷出了 6 面骰", "小满 (you): 时间到了"} <= lines
    assert (len(llm.requests), said(answer.params)) == (1, "机器还不错")
    problems = [line.split(" | ")[-1] for line in log.splitlines() if "| ERROR" in line]
    assert problems == [
        "plugins: pacebot_broken_plugin not loaded: RuntimeError: this plugin is broken",
        "plugins: pacebot_unstartable_plugin left out: failed to start: "
        "OSError: cannot reach its service",
    ]
    started = tmp_path / "data" / "plugins" / "data" / "pacebot_test_extras" / "started.txt"
    assert started.read_text(encoding="utf-8") == "loaded"
    listed = re.findall(r'<li class="(up|down)"><strong>([^<]+)</strong>', overview.text)
    assert listed == [
        ("up", "pacebot_test_plugin"),
        ("up", "pacebot_test_extras"),
        ("up", "服务器状态查看"),
        ("down", "pacebot_broken_plugin"),
        ("down", "pacebot_unstartable_plugin"),
    ]


async def test_plugin_install_adds_the_module_keeping_comments(tmp_path: Path) -> None:
    """`pacebot plugin install nonebot-plugin-status` (installed already, from the registry)
    runs pip and adds nonebot_plugin_status to [plugins] nonebot, the comments kept."""
    config = tmp_path / "config.toml"
    config.write_text(
        '# mine\n[bot]\nname = "小满"  # the name\n\n[plugins.config]\nkey = 1  # kept\n',
        encoding="utf-8",
    )
    code, out, err = await run_pacebot(
        "plugin", "install", "nonebot-plugin-status", "-c", str(config)
    )
    assert (code, out.splitlines()[-1]) == (
        0,
        f"added nonebot_plugin_status to [plugins] nonebot of {config}; "
        "restart pacebot to load it (QQ only)",
    ), err
    assert config.read_text(encoding="utf-8") == (
        '# mine\n[bot]\nname = "小满"  # the name\n\n'
        '[plugins]\nnonebot = ["nonebot_plugin_status"]\n\n'
        "[plugins.config]\nkey = 1  # kept\n"
    )


def test_adding_a_module_twice_changes_nothing(tmp_path: Path) -> None:
    """A module already named is not added again; one more is appended in place."""
    config = tmp_path / "config.toml"
    config.write_text('[plugins]\nnonebot = [\n  "a",  # first\n]\n', encoding="utf-8")
    added = (add_to_config(config, "a"), add_to_config(config, "b"))
    document = tomlkit.parse(config.read_text(encoding="utf-8"))
    assert (added, document["plugins"]["nonebot"], "# first" in config.read_text()) == (
        (False, True),
        ["a", "b"],
        True,
    )


async def test_plugin_install_refuses_what_is_not_a_package_name(tmp_path: Path) -> None:
    """An option where the name belongs is refused in one line before pip runs."""
    config = tmp_path / "config.toml"
    config.write_text("[bot]\n", encoding="utf-8")
    code, out, err = await run_pacebot("plugin", "install", "-c", str(config), "--", "-e.")
    assert (code, out, err.strip()) == (
        1,
        "",
        "pacebot: '-e.' is not a package name pip takes, e.g. nonebot-plugin-status "
        "or nonebot-plugin-status==0.9.0",
    )


async def test_plugin_list_shows_each_plugin_and_its_commands(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """`pacebot plugin list` shows each plugin's matchers, the commands pacebot keeps, and
    the plugin that does not load (exit code 1)."""
    config = write_config(tmp_path, llm, port=free_port())
    code, out, _ = await run_pacebot("plugin", "list", "-c", str(config), env=plugin_env(tmp_path))
    lines = out.splitlines()
    status = lines.index("nonebot_plugin_status  (服务器状态查看)")
    assert (code, lines[status + 1 : status + 5]) == (
        1,
        [
            "  /status, /状态 (priority 10)",
            "  PokeNotifyEvent (priority 10, blocks)",
            "  rule _poke (priority 10, blocks)",
            "  /status is pacebot's own command: it never reaches the plugin",
        ],
    )
    assert "pacebot_broken_plugin  not loaded: RuntimeError: this plugin is broken" in lines
    assert "  alconna 掷骰 (priority 1, blocks)" in lines
