"""`pacebot check` of the official QQ bot: its keys offline, its token and gateway online."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.cli import main
from bot.config.model import load_config
from bot.errors import ConfigError
from fakes.harness import start_run
from fakes.openai_api import FakeLLMServer
from fakes.process import CHECK_KEY, check_config, check_online
from fakes.qq_open_platform import FakeQQOpenPlatform

SECRET_ENV = "QQ_BOT_SECRET"


def official(platform: FakeQQOpenPlatform, *, app_id: str | None = None) -> str:
    """The [qq_official] table pointing at ``platform``."""
    return (
        "[qq_official]\nenabled = true\n"
        f'app_id = "{platform.app_id if app_id is None else app_id}"\n'
        f'api_base = "{platform.api_base}"\nauth_base = "{platform.auth_url}"\n'
    )


def test_enabled_without_an_app_id_names_the_key(tmp_path: Path) -> None:
    """[qq_official] enabled without app_id is a config error naming the key and the form."""
    path = tmp_path / "config.toml"
    path.write_text('[qq_official]\nenabled = true\nsecret_env = "MY_QQ_SECRET"\n', "utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == (
        "invalid configuration:\n  - qq_official.app_id is missing: with enabled = true, set "
        'it to the bot\'s AppID from the QQ Open Platform, e.g. app_id = "102000001"'
    )


def test_a_missing_secret_is_named_by_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline, check reads the AppSecret only from its variable and names it when unset."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", CHECK_KEY)
    monkeypatch.delenv(SECRET_ENV, raising=False)
    path = tmp_path / "config.toml"
    path.write_text('[qq_official]\nenabled = true\napp_id = "102000001"\n', "utf-8")
    assert main(["check", "-c", str(path)]) == 1
    captured = capsys.readouterr()
    assert "would start: qqbot" in captured.out.splitlines()
    assert captured.err.splitlines() == [
        f"✗ [qq_official] secret_env: environment variable {SECRET_ENV} is not set"
    ]


async def test_online_check_gets_a_token_and_the_gateway(tmp_path: Path) -> None:
    """--online asks for a token with the AppID and AppSecret, then for the gateway with it,
    and prints neither the secret nor the token."""
    async with FakeQQOpenPlatform() as platform, FakeLLMServer(api_key=CHECK_KEY) as llm:
        config = check_config(tmp_path, llm, more=official(platform))
        code, out, err = await check_online(config, env={SECRET_ENV: platform.secret})
    assert (code, err) == (0, "")
    assert (
        f"✓ QQ bot {platform.app_id} at {platform.api_base}: token granted, gateway "
        f"{platform.gateway_url}"
    ) in out.splitlines()
    assert (platform.gateway_requests, [r.code for r in platform.token_requests]) == (
        ["/gateway/bot"],
        [None],
    )
    assert (platform.secret in out + err, "QQBot " in out + err) == (False, False)


@pytest.mark.parametrize(
    ("app_id", "secret", "says"),
    [
        (
            None,
            "not-the-secret",
            "the platform refused the AppSecret (code 100016): check the variable named by "
            "qq_official.secret_env",
        ),
        (
            "999",
            None,
            "the platform does not know qq_official.app_id = '999' (code 100007): copy the "
            "AppID from the QQ Open Platform",
        ),
    ],
    ids=["wrong secret", "wrong app id"],
)
async def test_online_check_names_a_wrong_secret_or_app_id(
    tmp_path: Path, app_id: str | None, secret: str | None, says: str
) -> None:
    """A refused AppSecret or AppID exits 1 naming which, without printing the secret."""
    async with FakeQQOpenPlatform() as platform, FakeLLMServer(api_key=CHECK_KEY) as llm:
        config = check_config(tmp_path, llm, more=official(platform, app_id=app_id))
        given = platform.secret if secret is None else secret
        code, out, err = await check_online(config, env={SECRET_ENV: given})
    where = f"QQ bot {app_id or platform.app_id} at {platform.api_base}"
    assert (code, err.splitlines()) == (1, [f"✗ {where}: {says}"])
    assert (given in out + err, platform.gateway_requests) == (False, [])


async def test_online_check_names_an_unreachable_platform(tmp_path: Path) -> None:
    """Nothing listening at the token endpoint exits 1 saying it cannot be reached."""
    async with FakeLLMServer(api_key=CHECK_KEY) as llm:
        table = (
            '[qq_official]\nenabled = true\napp_id = "102000001"\n'
            'api_base = "http://127.0.0.1:9/"\nauth_base = "http://127.0.0.1:9/app/token"\n'
        )
        code, _, err = await check_online(
            check_config(tmp_path, llm, more=table), env={SECRET_ENV: "s3cret-value"}
        )
    assert (code, err.splitlines()) == (
        1,
        [
            "✗ QQ bot 102000001 at http://127.0.0.1:9/: http://127.0.0.1:9/app/token cannot "
            "be reached (ConnectError)"
        ],
    )


async def test_run_alone_with_a_refused_secret_exits_1_naming_it(tmp_path: Path) -> None:
    """The official QQ bot alone, its AppSecret refused: `pacebot run` says so once and
    exits 1, rather than idle on; the secret is printed nowhere."""
    async with FakeQQOpenPlatform() as platform, FakeLLMServer(api_key=CHECK_KEY) as llm:
        config = check_config(tmp_path, llm, more=official(platform))
        process = await start_run(
            config, {"PACEBOT_LLM_API_KEY": CHECK_KEY, SECRET_ENV: "wrong-secret-value"}
        )
        _, err = await asyncio.wait_for(process.communicate(), 30)
    stderr = err.decode()
    assert process.returncode == 1
    assert stderr.splitlines()[-1] == (
        "pacebot: the platform refused the AppSecret (code 100016): check the variable "
        "named by qq_official.secret_env"
    )
    assert ("Traceback" in stderr, "wrong-secret-value" in stderr) == (False, False)
