"""`pacebot check` as a newcomer runs it: the shipped config, then `--online` against the fakes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adapters.cli import main
from fakes.bot_api import FakeBotAPI
from fakes.harness import run_pacebot
from fakes.openai_api import FakeLLMServer
from fakes.process import CHECK_KEY, check_config, check_online

ROOT = Path(__file__).resolve().parent.parent


def shipped_config(tmp_path: Path) -> Path:
    """Copy the shipped config.toml into ``tmp_path``: check tries its data directory there,
    not in the repository, where tests running side by side would share it."""
    return Path(shutil.copy(ROOT / "config.toml", tmp_path / "config.toml"))


def test_the_shipped_config_is_ready_for_the_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the shipped config (no platform on) check exits 0 and says only the console can run."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", CHECK_KEY)
    assert main(["check", "-c", str(shipped_config(tmp_path))]) == 0
    captured = capsys.readouterr()
    assert (captured.err, captured.out.splitlines()[-1]) == (
        "",
        "✓ ready for `pacebot console`; `pacebot run` needs a platform: "
        "set enabled = true under [telegram], [qq] or [qq_official]",
    )


def test_a_config_error_still_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad value exits 1 even with no platform enabled."""
    path = tmp_path / "config.toml"
    path.write_text('[bot]\ntimezone = "Mars/Olympus"\n', encoding="utf-8")
    assert main(["check", "-c", str(path)]) == 1
    assert 'bot.timezone = "Mars/Olympus"' in capsys.readouterr().err


async def test_a_secret_written_into_the_file_is_never_printed_back(tmp_path: Path) -> None:
    """A token, a key, or a key in place of its variable's name: check names each line and
    the variable the secret belongs in, and prints none of the secrets."""
    secrets = ("123456:AAH-token-in-the-file", "sk-key-in-the-file", "sk-key-as-a-name")
    path = tmp_path / "config.toml"
    path.write_text(
        f'[telegram]\ntoken = "{secrets[0]}"\n[llm]\napi_key = "{secrets[1]}"\n'
        f'[memory.embeddings]\napi_key_env = "{secrets[2]}"\n',
        encoding="utf-8",
    )
    code, out, err = await run_pacebot(
        "check", "-c", str(path), env={"PACEBOT_LLM_API_KEY": CHECK_KEY}
    )
    hidden = "(its value is not shown here)"
    assert (code, out, err.splitlines()) == (
        1,
        "",
        [
            "✗ invalid configuration:",
            "  - llm.api_key: unknown key; a secret never goes in config.toml "
            f"{hidden}: delete this line and put the secret in the environment variable "
            "named by llm.api_key_env (PACEBOT_LLM_API_KEY by default)",
            "  - memory.embeddings.api_key_env: must be the name of an environment "
            f"variable, e.g. PACEBOT_LLM_API_KEY, never the secret itself {hidden}: put the "
            "secret in that variable",
            "  - telegram.token: unknown key; a secret never goes in config.toml "
            f"{hidden}: delete this line and put the secret in the environment variable "
            "named by telegram.token_env (TELEGRAM_BOT_TOKEN by default)",
        ],
    )
    assert [secret for secret in secrets if secret in out + err] == []


def test_a_bad_log_level_in_the_environment_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PACEBOT_LOG_LEVEL that `pacebot run` would refuse makes check exit 1, in run's words."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", CHECK_KEY)
    monkeypatch.setenv("PACEBOT_LOG_LEVEL", "loud")
    assert main(["check", "-c", str(shipped_config(tmp_path))]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "✗ PACEBOT_LOG_LEVEL = 'LOUD': must be one of TRACE, DEBUG, INFO, SUCCESS, WARNING, ERROR"
    ]


def test_check_prints_what_groups_and_budget_run_with_and_warns_of_odd_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """check shows the reply mode, each override and the caps it will run with, and warns
    (still ready) of a hard cap below the soft one and a chat cap above the hard one."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", CHECK_KEY)
    path = tmp_path / "config.toml"
    path.write_text(
        '[groups]\nreply_mode = "smart"\ninterests = ["猫"]\n'
        '[[groups.override]]\nchat = "qq:group:123456"\nreply_mode = "always"\n'
        "[budget]\ndaily_tokens = 200000\nhard_daily_tokens = 100000\n"
        "chat_daily_tokens = 150000\n",
        encoding="utf-8",
    )
    assert main(["check", "-c", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[3:6] == [
        'groups: reply mode "smart" (interests: 猫; talk_value 0.3; 6 unaddressed calls an hour)',
        '  override qq:group:123456: reply_mode = "always"',
        "budget: caps in tokens a chat day: soft 200,000, hard 100,000, per chat 150,000;"
        " no prices set",
    ]
    assert captured.err.splitlines() == [
        "! budget.hard_daily_tokens = 100000 is below budget.daily_tokens = 200000: the hard"
        " cap stops every call before the soft cap is ever reached",
        "! budget.chat_daily_tokens = 150000 is above budget.hard_daily_tokens = 100000: no"
        " chat can reach it, the hard cap stops every call first",
    ]


def test_check_help_names_every_online_check(capsys: pytest.CaptureFixture[str]) -> None:
    """`pacebot check --help` names each far end --online contacts, embeddings and voice too."""
    with pytest.raises(SystemExit) as exited:
        main(["check", "--help"])
    words = " ".join(capsys.readouterr().out.split())
    named = [
        end for end in ("LLM", "memory tool", "embeddings", "[voice]", "Telegram") if end in words
    ]
    assert (exited.value.code, named) == (
        0,
        ["LLM", "memory tool", "embeddings", "[voice]", "Telegram"],
    )


@pytest.mark.parametrize(
    ("web", "url"),
    [
        ("[web]\nenabled = true\n", "http://127.0.0.1:8090/"),
        ('[web]\nenabled = true\nhost = "::1"\nport = 9000\n', "http://[::1]:9000/"),
    ],
)
def test_check_names_the_dashboard_and_who_serves_it(
    web: str,
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With [web] on, check gives the dashboard's URL and says only `pacebot run` serves it."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", CHECK_KEY)
    monkeypatch.setenv("PACEBOT_WEB_TOKEN", "a-dashboard-token-of-32-characters")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    path = tmp_path / "config.toml"
    path.write_text(f"[telegram]\nenabled = true\n{web}", encoding="utf-8")
    assert main(["check", "-c", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3:5] == [
        "would start: telegram",
        f"dashboard: {url} (only `pacebot run` serves it, not `pacebot console`)",
    ]


async def test_online_check_passes_against_a_working_llm_and_telegram(
    tmp_path: Path, api: FakeBotAPI
) -> None:
    """--online makes one JSON-mode LLM request and one getMe, and says what each found."""
    async with FakeLLMServer(api_key=CHECK_KEY) as llm:
        code, out, err = await check_online(check_config(tmp_path, llm, api), token=api.token)
        assert (code, err) == (0, "")
        assert (
            f"LLM gpt-4o-mini at {llm.base_url}: reachable, key accepted, JSON mode accepted"
            in (out)
        )
        assert [r.get("response_format") for r in llm.requests] == [{"type": "json_object"}]
    assert f"token valid, the bot is @{api.bot_username}" in out
    assert [call.method for call in api.calls] == ["getMe"]
    assert out.splitlines()[-1] == "✓ ready to run: `pacebot run`"
    assert (CHECK_KEY in out, api.token in out) == (False, False)


async def test_a_wrong_llm_key_fails_without_showing_it(tmp_path: Path) -> None:
    """A key the provider refuses (401) exits 1, says to check the key, and prints no key."""
    async with FakeLLMServer(api_key="sk-the-right-one-000000") as llm:
        code, out, err = await check_online(check_config(tmp_path, llm))
    assert code == 1
    assert "HTTP 401 unauthorized (check the API key)" in err
    assert CHECK_KEY not in out + err


async def test_a_wrong_telegram_token_fails_without_showing_it(
    tmp_path: Path, llm: FakeLLMServer, api: FakeBotAPI
) -> None:
    """A token the Bot API refuses (401) exits 1 naming the setting, never the token."""
    wrong = "999:WRONG-token-value"
    code, out, err = await check_online(check_config(tmp_path, llm, api), token=wrong)
    assert code == 1
    assert "the bot token was rejected: check the variable named by telegram.token_env" in err
    assert (api.unauthorized, "WRONG-token" in out + err) == (["getMe"], False)


async def test_refused_json_mode_says_to_turn_it_off(tmp_path: Path) -> None:
    """A provider that refuses response_format is found out, and the fix is named."""
    async with FakeLLMServer(refuse_json_mode=True) as llm:
        refused = await check_online(check_config(tmp_path, llm))
        turned_off = await check_online(check_config(tmp_path, llm, json_mode=False))
    assert refused[0] == 1
    assert "JSON mode (response_format) is refused: set llm.json_mode = false" in refused[2]
    assert (turned_off[0], turned_off[2]) == (0, "")
    assert "reachable, key accepted, JSON mode off" in turned_off[1]


async def test_an_unreachable_llm_fails(tmp_path: Path) -> None:
    """Nothing listening at llm.base_url exits 1 saying the connection failed."""
    path = tmp_path / "config.toml"
    path.write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    code, _, err = await check_online(path)
    assert code == 1
    assert "connection failed" in err


EMBEDDINGS_ON = '[memory.embeddings]\nmodel = "fake-embed"\n'


async def test_online_check_embeds_one_word_when_embeddings_are_on(tmp_path: Path) -> None:
    """With [memory.embeddings] on, --online makes one tiny embeddings request and says so."""
    async with FakeLLMServer(api_key=CHECK_KEY) as llm:
        code, out, err = await check_online(check_config(tmp_path, llm, more=EMBEDDINGS_ON))
    assert (code, err) == (0, "")
    assert (
        f"✓ embeddings fake-embed at {llm.base_url}: reachable, key accepted, vectors returned"
        in out.splitlines()
    )
    assert [(r["model"], r["input"]) for r in llm.embedding_requests] == [
        ("fake-embed", ["pacebot"])
    ]


async def test_a_failing_embeddings_endpoint_fails_the_check_without_its_key(
    tmp_path: Path,
) -> None:
    """An embeddings key the provider refuses, or a 500, exits 1 with one clear line each."""
    wrong = "sk-wrong-embeddings-key-987654"
    more = EMBEDDINGS_ON + 'api_key_env = "PACEBOT_EMBEDDINGS_KEY"\n'
    async with FakeLLMServer(api_key=CHECK_KEY) as llm:
        config = check_config(tmp_path, llm, more=more)
        refused = await check_online(config, env={"PACEBOT_EMBEDDINGS_KEY": wrong})
        llm.embeddings_fail(500)
        failed = await check_online(config, env={"PACEBOT_EMBEDDINGS_KEY": CHECK_KEY})
    assert (refused[0], failed[0]) == (1, 1)
    assert refused[2].splitlines() == [
        f"✗ embeddings fake-embed at {llm.base_url.rsplit('/', 1)[0]}: HTTP 401 unauthorized"
        " (check the API key): Incorrect API key provided."
    ]
    assert "embeddings fake-embed at " in failed[2]
    assert "HTTP 500" in failed[2]
    assert (wrong in refused[1] + refused[2], CHECK_KEY in failed[1] + failed[2]) == (False, False)
    assert "reachable, key accepted, JSON mode accepted" in refused[1]  # the LLM itself is fine


async def test_online_check_says_when_the_provider_refuses_the_memory_tool(
    tmp_path: Path,
) -> None:
    """With llm.memory_tool on, a provider answering 400 to tools is named, with the fix."""
    async with FakeLLMServer() as llm:
        path = check_config(tmp_path, llm)
        path.write_text(path.read_text().replace("[llm]\n", "[llm]\nmemory_tool = true\n"))
        accepted = await check_online(path)
        llm.refuse_tools()
        refused = await check_online(path)
    assert (accepted[0], accepted[2]) == (0, "")
    assert "reachable, key accepted, the memory tool accepted" in accepted[1]
    assert refused[0] == 1
    assert refused[2].splitlines()[-1] == (
        f"✗ LLM gpt-4o-mini at {llm.base_url}: reachable and key accepted, but tools are"
        " refused (HTTP 400): set llm.memory_tool = false"
    )
