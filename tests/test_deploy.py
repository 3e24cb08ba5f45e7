"""The shipped recipes hold together: the systemd unit, the image, the compose file, the licence.

No container engine can pull a base image on this machine, so the image is checked by
what it is made of: every path it copies exists, its command runs the config it copies,
and that config passes `pacebot check`. The unit is verified by systemd itself where
``systemd-analyze`` is installed.
"""

from __future__ import annotations

import configparser
import json
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from adapters.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(DEPLOY / "pacebot.service", encoding="utf-8")
    return parser


def dockerfile() -> list[tuple[str, str]]:
    """Return the Dockerfile's instructions as (INSTRUCTION, arguments), continuations joined."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.partition(" ") for line in lines if line and line[0] != "#")
    ]


def test_the_unit_restarts_on_failure_keeps_data_and_reads_secrets_from_a_file() -> None:
    """The unit runs `pacebot run` as its own user, restarts on failure, owns a data dir."""
    service = unit()["Service"]
    assert {key: service[key] for key in ("User", "Restart", "StateDirectory")} == {
        "User": "pacebot",
        "Restart": "on-failure",
        "StateDirectory": "pacebot",
    }
    assert shlex.split(service["ExecStart"])[1:] == ["run", "-c", "/etc/pacebot/config.toml"]
    assert service["EnvironmentFile"] == "/etc/pacebot/secrets.env"
    assert service["WorkingDirectory"] == "/var/lib/pacebot"
    assert service["ProtectSystem"] == "strict"  # only the state directory is writable


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    """`systemd-analyze verify` finds nothing wrong, with ExecStart pointed at this pacebot."""
    pacebot = Path(sys.executable).parent / "pacebot"
    if not pacebot.exists():
        pytest.skip(f"no installed pacebot at {pacebot} to point ExecStart at")
    text = (DEPLOY / "pacebot.service").read_text(encoding="utf-8")
    copy = tmp_path / "pacebot.service"
    copy.write_text(text.replace("/opt/pacebot/bin/pacebot", str(pacebot)), encoding="utf-8")
    done = subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_every_path_the_image_copies_exists() -> None:
    """Each COPY source is in the repository, and .dockerignore keeps none of them out."""
    sources = [
        source
        for instruction, args in dockerfile()
        if instruction == "COPY"
        for source in args.split()[:-1]
    ]
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert [s for s in sources if not (ROOT / s).exists()] == []
    assert [s for s in sources if s in ignored or s.split("/")[0] in ignored] == []
    assert {"bot", "adapters", "storage", "scheduler"} <= {s.split("/")[0] for s in sources}


def test_the_image_runs_as_a_user_on_a_data_volume_with_the_config_it_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The image runs `pacebot run` as a non-root user on /data, with a config that passes check."""
    steps = dockerfile()
    found = {instruction: args for instruction, args in steps}
    copied = {  # target -> source, for the single-file copies
        args.split()[-1]: args.split()[0]
        for instruction, args in steps
        if instruction == "COPY" and len(args.split()) == 2
    }
    command = [*json.loads(found["ENTRYPOINT"]), *json.loads(found["CMD"])]
    config = command[command.index("-c") + 1]
    assert steps[0] == ("FROM", "python:3.11-slim")
    assert (found["USER"], found["VOLUME"], command[:2]) == (
        "pacebot",
        '["/data"]',
        ["pacebot", "run"],
    )
    assert copied[config] == "deploy/config.toml"
    assert tomllib.loads((ROOT / copied[config]).read_text(encoding="utf-8"))["bot"] == {
        "data_dir": "/data",
        "timezone": "Asia/Shanghai",
    }
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", "sk-deploy-test")
    monkeypatch.setenv("ONEBOT_ACCESS_TOKEN", "a-long-random-string")
    # check tries to write in data_dir: a directory of this test stands in for the volume.
    text = (ROOT / copied[config]).read_text(encoding="utf-8")
    volume = tmp_path / "volume"
    here = tmp_path / "config.toml"
    here.write_text(text.replace('data_dir = "/data"', f'data_dir = "{volume}"'), encoding="utf-8")
    assert main(["check", "-c", str(here)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (f"database: {volume / 'pacebot.sqlite3'}" in out, "would start: qq" in out) == (
        True,
        True,
    )


def test_compose_runs_pacebot_beside_napcat_sharing_the_access_token() -> None:
    """NapCat's reverse WebSocket points at pacebot, and both take the token from one variable."""
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    pacebot, napcat = services["pacebot"], services["napcat"]
    onebot = yaml.safe_load(compose["configs"]["onebot11"]["content"])  # JSON is YAML
    [client] = onebot["network"]["websocketClients"]
    port = tomllib.loads((DEPLOY / "config.toml").read_text(encoding="utf-8"))["qq"]["port"]
    assert sorted(services) == ["napcat", "pacebot"]
    assert (pacebot["build"]["context"], pacebot["build"]["dockerfile"]) == (
        "..",
        "deploy/Dockerfile",
    )
    assert (DEPLOY / pacebot["build"]["context"] / pacebot["build"]["dockerfile"]).exists()
    assert pacebot["environment"]["ONEBOT_ACCESS_TOKEN"].startswith("${ONEBOT_ACCESS_TOKEN")
    assert (client["url"], client["token"]) == (
        f"ws://pacebot:{port}/onebot/v11/ws",
        "${ONEBOT_ACCESS_TOKEN}",
    )
    assert client["messagePostFormat"] == "array"
    assert napcat["configs"] == [
        {"source": "onebot11", "target": "/app/napcat/config/onebot11.json"}
    ]
    assert "pacebot-data:/data" in pacebot["volumes"]


def test_the_env_example_names_every_secret_compose_reads() -> None:
    """deploy/env.example lists each variable compose passes to pacebot."""
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    example = (DEPLOY / "env.example").read_text(encoding="utf-8")
    names = {line.split("=")[0] for line in example.splitlines() if "=" in line and line[0] != "#"}
    assert set(compose["services"]["pacebot"]["environment"]) == names


def test_the_licence_is_the_mit_licence_pyproject_names() -> None:
    """LICENSE is the MIT licence of the pacebot authors, as pyproject.toml declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == "MIT"
    assert text.splitlines()[:3] == ["MIT License", "", "Copyright (c) 2026 the pacebot authors"]
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_the_env_example_holds_no_secret() -> None:
    """The example file carries placeholders only."""
    example = (DEPLOY / "env.example").read_text(encoding="utf-8")
    assignments = [line for line in example.splitlines() if "=" in line and line[0] != "#"]
    values = [line.split("=", 1)[1] for line in assignments]
    assert [v for v in values if v not in ("", "sk-...")] == []
    named = {name: value for name, _, value in (line.partition("=") for line in assignments)}
    assert named == {
        "PACEBOT_LLM_API_KEY": "sk-...",
        "ONEBOT_ACCESS_TOKEN": "",
        "TELEGRAM_BOT_TOKEN": "",
    }
