"""Config loading: defaults, validation messages that name key and form, secrets, check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.cli import main
from bot.config.keys import ConfigKey, config_keys
from bot.config.model import Config, load_config, parse_config
from bot.config.personas import read_persona
from bot.config.values import Section
from bot.errors import ConfigError
from bot.models import ChatKey
from bot.secrets import read_secrets

EXAMPLE = Path(__file__).resolve().parent.parent / "config.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_config_matches_defaults() -> None:
    """The shipped config.toml documents exactly the defaults."""
    config = load_config(EXAMPLE)
    assert config.model_dump(exclude={"bot"}) == Config().model_dump(exclude={"bot"})
    assert config.bot.data_dir == EXAMPLE.parent / "data"


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    """Every field has a default, and relative paths resolve next to the config file."""
    config = load_config(write(tmp_path, ""))
    assert config.pacing.debounce_min_s == 5.0
    assert config.database_path == tmp_path / "data" / "pacebot.sqlite3"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[pacing]\ndebounce_min_s = -1\n", "pacing.debounce_min_s = -1: must be at least 0.0"),
        (
            "[pacing]\nmax_batch = 'many'\n",
            'pacing.max_batch = "many": must be a whole number, e.g. 30',
        ),
        ("[pacing]\nmax_batch = 1.5\n", "pacing.max_batch = 1.5: must be a whole number, e.g. 30"),
        ("[pacing]\nmax_wait_s = 0\n", "pacing.max_wait_s = 0: must be more than 0.0"),
        (
            "[pacing]\nundo = 1\n",
            "pacing.undo: unknown key (value 1); check its spelling against config.toml",
        ),
        (
            "[bots]\nname = 'x'\n",
            'bots: unknown key (value { name = "x" }); check its spelling against config.toml',
        ),
        (
            "[bot]\ntimezone = 'Mars/Olympus'\n",
            'bot.timezone = "Mars/Olympus": must be an IANA time zone such as Asia/Shanghai or'
            " Europe/Berlin",
        ),
        (
            "[bot]\nadmins = ['alice']\n",
            'bot.admins = ["alice"]: "alice" is not an admin id; use platform:numeric-id, e.g.'
            ' "telegram:123456789" or "qq:10001", or qqbot:openid (what /whoami answers on the'
            " official QQ bot)",
        ),
        (
            "[bot]\nadmins = 'telegram:123'\n",
            'bot.admins = "telegram:123": must be an array, e.g. ["telegram:123"]',
        ),
        (
            "[bot]\naliases = ['阿满', 7]\n",
            "bot.aliases (item 2) = 7: must be a string in double quotes",
        ),
        ("bot = 'x'\n", 'bot = "x": must be a table: a line [bot] with its keys below it'),
        (
            "[llm]\nsplitter = 5\n",
            "llm.splitter = 5: must be a table: a line [llm.splitter] with its keys below it",
        ),
        ("[bot]\nname = ''\n", 'bot.name = "": must not be empty'),
        ("[bot]\nname = 5\n", 'bot.name = 5: must be a string in double quotes, e.g. "小满"'),
        ("[bot]\ndata_dir = 5\n", 'bot.data_dir = 5: must be a path in double quotes, e.g. "data"'),
        (
            "[llm]\njson_mode = 'maybe'\n",
            'llm.json_mode = "maybe": must be true or false, without quotes',
        ),
        ("[llm]\ntemperature = 3\n", "llm.temperature = 3: must be at most 2.0"),
        (
            "[memory]\nday_boundary = '4am'\n",
            'memory.day_boundary = "4am": must be a time of day HH:MM, e.g. 04:00',
        ),
        (
            "[memory]\nday_boundary = 04:00:00\n",
            'memory.day_boundary = 04:00:00: must be a string in double quotes, e.g. "04:00"',
        ),
        (
            "[groups]\nreply_mode = 'sometimes'\n",
            'groups.reply_mode = "sometimes": must be one of "mention", "always", "smart"',
        ),
        (
            "[llm]\napi_key_env = 'sk-secret value'\n",
            "llm.api_key_env: must be the name of an environment variable, e.g."
            " PACEBOT_LLM_API_KEY, never the secret itself (its value is not shown here): put"
            " the secret in that variable",
        ),
        (
            "[pacing]\ndebounce_min_s = 20.0\n",
            "pacing.debounce_min_s = 20.0: must not exceed pacing.debounce_max_s (15.0)",
        ),
        (
            "[qq]\nbackfill = 'maybe'\n",
            'qq.backfill = "maybe": must be true or false, without quotes',
        ),
        ("[qq]\nbackfill_days = 0\n", "qq.backfill_days = 0: must be more than 0.0"),
        ("[qq]\nbackfill_chats = 0\n", "qq.backfill_chats = 0: must be at least 1"),
        ("[qq]\nbackfill_count = 501\n", "qq.backfill_count = 501: must be at most 500"),
        (
            "[qq]\nbackfill_count = 2.5\n",
            "qq.backfill_count = 2.5: must be a whole number, e.g. 30",
        ),
        ("[groups]\ntalk_value = 2\n", "groups.talk_value = 2: must be at most 1.0"),
        (
            '[groups]\nquiet_hours = "25:00-26:00"\n',
            'groups.quiet_hours = "25:00-26:00": must be a span of local times HH:MM-HH:MM,'
            ' e.g. "01:00-08:00", or "" for none',
        ),
        ("[budget]\ndaily_tokens = -5\n", "budget.daily_tokens = -5: must be at least 0"),
        ("[budget]\nhard_daily_tokens = -1\n", "budget.hard_daily_tokens = -1: must be at least 0"),
        (
            '[budget]\nprice_in_per_million = "0.15"\n',
            'budget.price_in_per_million = "0.15": must be a number, e.g. 0.0',
        ),
        (
            '[[groups.override]]\nchat = "qq:grp:1"\n',
            'groups.override (item 1): chat = "qq:grp:1": must be the chat key of a group,'
            ' platform:group:id, e.g. "qq:group:123456"',
        ),
        (
            '[[groups.override]]\nchat = "qq:private:9"\n',
            'groups.override (item 1): chat = "qq:private:9": must be the chat key of a group,'
            ' platform:group:id, e.g. "qq:group:123456"',
        ),
        (
            '[[groups.override]]\nchat = "telegram:group:-100123:7"\n',
            'groups.override (item 1): chat = "telegram:group:-100123:7": names a forum topic;'
            ' name the whole group, "telegram:group:-100123": its settings cover every topic',
        ),
        (
            '[[groups.override]]\nchat = "qq:group:1"\n[[groups.override]]\nchat = "qq:group:2"'
            "\ntalk_value = 2\n",
            'groups.override (item 2, chat "qq:group:2"): talk_value = 2: must be at most 1.0',
        ),
        (
            '[[groups.override]]\nchat = "qq:group:1"\nstore_unaddressed = false\n',
            'groups.override (item 1, chat "qq:group:1"): store_unaddressed is set for every'
            " group under [groups], not per group",
        ),
        (
            '[[groups.override]]\nchat = "qq:group:1"\n[[groups.override]]\nchat = "qq:group:1"\n',
            'groups.override (item 2): chat = "qq:group:1" has an override already; merge the'
            " two into one",
        ),
        (
            '[groups.override]\nchat = "qq:group:1"\n',
            "groups.override: write each group's settings as [[groups.override]] (double"
            ' brackets), with chat = "platform:group:id" in it',
        ),
        ("[[groups.override]]\ntalk_value = 0.5\n", "groups.override (item 1): chat: required"),
    ],
)
def test_bad_values_name_key_value_and_form(tmp_path: Path, text: str, expected: str) -> None:
    """A bad value is one line naming the key, the value as TOML writes it, and the form."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert str(caught.value) == f"invalid configuration:\n  - {expected}"


ENV_FORM = "must be the name of an environment variable, e.g. PACEBOT_LLM_API_KEY"
HIDDEN = (
    f"{ENV_FORM}, never the secret itself (its value is not shown here): put the secret in"
    " that variable"
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"llm": {"api_key_env": "a b"}}, f"llm.api_key_env: {HIDDEN}"),
        ({"llm": {"splitter": {"api_key_env": "1x"}}}, f"llm.splitter.api_key_env: {HIDDEN}"),
        ({"telegram": {"token_env": "a-b"}}, f"telegram.token_env: {HIDDEN}"),
        ({"qq": {"access_token_env": ""}}, f'qq.access_token_env = "": {ENV_FORM}'),
        (
            {"llm": {"base_url": "ftp://x"}},
            'llm.base_url = "ftp://x": must be an http(s) URL such as '
            "https://api.openai.com/v1, or empty",
        ),
        (
            {"telegram": {"api_base_url": "x"}},
            'telegram.api_base_url = "x": must be an http(s) URL such as '
            "http://127.0.0.1:8081/bot, or empty",
        ),
    ],
)
def test_each_shared_field_type_names_its_own_key(data: dict[str, Any], expected: str) -> None:
    """An environment-variable name or URL field shares one check yet names its own key."""
    with pytest.raises(ConfigError) as caught:
        parse_config(data, base_dir=Path())
    assert str(caught.value) == f"invalid configuration:\n  - {expected}"


def test_an_empty_splitter_key_env_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the splitter's key variable may be left empty, and then the main key is used."""
    monkeypatch.setenv("MAIN_LLM_KEY", "sk-main-key")
    llm = {"api_key_env": "MAIN_LLM_KEY", "splitter": {"api_key_env": ""}}
    config = parse_config({"llm": llm}, base_dir=Path())
    assert config.llm.splitter.api_key_env == ""
    secrets = read_secrets(config, console=False)
    assert (secrets.llm_api_key, secrets.splitter_api_key) == ("sk-main-key", "sk-main-key")


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    """A syntax error is reported as a ConfigError naming the file."""
    path = write(tmp_path, "[bot\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_config_not_in_utf8_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config saved in another encoding (GBK here) is named and explained, no traceback."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", "sk-test")
    path = tmp_path / "config.toml"
    path.write_bytes('[bot]\nname = "小满"\n'.encode("gbk"))
    assert main(["check", "-c", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path} is not UTF-8 text (byte 16 cannot be decoded); save it as UTF-8" in err
    assert "Traceback" not in err


def test_persona_file_not_in_utf8_is_a_config_error(tmp_path: Path) -> None:
    """The same holds for the persona file, named by its key."""
    (tmp_path / "persona.md").write_bytes("你是阿福。".encode("gbk"))
    config = load_config(write(tmp_path, '[bot]\npersona_file = "persona.md"\n'))
    with pytest.raises(ConfigError, match=r'bot.persona_file = ".*persona.md": not UTF-8 text'):
        read_persona(config)


def test_config_is_frozen() -> None:
    """Validated config cannot be changed at run time."""
    config = parse_config({}, base_dir=Path())
    with pytest.raises(ValueError, match="frozen"):
        config.pacing.max_batch = 3  # type: ignore[misc]


def test_persona_file_is_read_relative_to_config(tmp_path: Path) -> None:
    """persona_file is found next to the config file and its text becomes the persona."""
    (tmp_path / "persona.md").write_text("你是阿福。\n", encoding="utf-8")
    config = load_config(write(tmp_path, '[bot]\npersona_file = "persona.md"\n'))
    assert read_persona(config) == "你是阿福。"


def test_check_fails_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pacebot check` exits 1 and names each missing secret of an enabled platform."""
    monkeypatch.delenv("PACEBOT_LLM_API_KEY", raising=False)
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    path = write(tmp_path, "[telegram]\nenabled = true\n")
    assert main(["check", "-c", str(path)]) == 1
    err = capsys.readouterr().err
    assert "PACEBOT_LLM_API_KEY is not set" in err
    assert "TELEGRAM_BOT_TOKEN is not set" in err


def test_check_passes_and_lists_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pacebot check` exits 0 and says what would start when all is well."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", "sk-test-key")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    path = write(tmp_path, "[telegram]\nenabled = true\n")
    assert main(["check", "-c", str(path)]) == 0
    out = capsys.readouterr().out
    assert "would start: telegram" in out
    assert "123:abc" not in out


def test_check_reports_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pacebot check` on an invalid file exits 1 with the key in the message."""
    path = write(tmp_path, "[pacing]\nmax_batch = 0\n")
    assert main(["check", "-c", str(path)]) == 1
    assert "pacing.max_batch = 0" in capsys.readouterr().err


def test_check_names_each_bad_gate_and_budget_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pacebot check` names every bad value of the gate and the budget at once, each with
    its key (and an override's chat), never a traceback."""
    path = write(
        tmp_path,
        '[groups]\ntalk_value = 2\nquiet_hours = "25:00-26:00"\n'
        '[[groups.override]]\nchat = "qq:grp:1"\n'
        '[[groups.override]]\nchat = "qq:group:7"\nmax_share = -0.5\n'
        '[budget]\ndaily_tokens = -5\nprice_out_per_million = "0.60"\n',
    )
    assert main(["check", "-c", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[1:] == [
        "  - groups.talk_value = 2: must be at most 1.0",
        '  - groups.quiet_hours = "25:00-26:00": must be a span of local times HH:MM-HH:MM,'
        ' e.g. "01:00-08:00", or "" for none',
        '  - groups.override (item 1): chat = "qq:grp:1": must be the chat key of a group,'
        ' platform:group:id, e.g. "qq:group:123456"',
        '  - groups.override (item 2, chat "qq:group:7"): max_share = -0.5: must be at least 0.0',
        "  - budget.daily_tokens = -5: must be at least 0",
        '  - budget.price_out_per_million = "0.60": must be a number, e.g. 0.0',
    ]
    assert "Traceback" not in err


def test_an_override_applies_to_its_group_and_every_topic_of_it() -> None:
    """A key the override leaves out comes from [groups]; topics take their group's."""
    config = parse_config(
        {
            "groups": {
                "reply_mode": "smart",
                "talk_value": 0.5,
                "override": [{"chat": "telegram:group:-100123", "talk_value": 1.0}],
            }
        },
        base_dir=Path(),
    )
    topic = ChatKey.parse("telegram:group:-100123:7")
    other = ChatKey.parse("telegram:group:-100999")
    seen = [(s.reply_mode, s.talk_value) for s in map(config.groups.for_chat, (topic, other))]
    assert seen == [("smart", 1.0), ("smart", 0.5)]


def test_check_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pacebot check` on a missing file exits 1 saying it cannot be read."""
    assert main(["check", "-c", str(tmp_path / "nope.toml")]) == 1
    assert "cannot read config file" in capsys.readouterr().err


def sections(model: type[Section] = Section) -> Iterator[type[Section]]:
    """Yield every table of the config model: each subclass of ``Section``, however deep."""
    for table in model.__subclasses__():
        yield table
        yield from sections(table)


def test_every_field_of_every_table_has_a_description() -> None:
    """Each field of the config model, a table's included, says what it does."""
    undocumented = [
        f"{table.__name__}.{name}"
        for table in sections()
        for name, field in table.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert undocumented == []


@pytest.mark.parametrize(
    ("suffix", "unit"),
    [("_s", "second"), ("_seconds", "seconds"), ("_tokens", "tokens"), ("_days", "days")],
)
def test_a_key_named_with_a_unit_says_the_unit(suffix: str, unit: str) -> None:
    """A key whose name carries a unit names it in its description too."""
    named = [key for key in config_keys() if key.key.endswith(suffix)]
    silent = [key.key for key in named if unit not in key.description]
    assert (bool(named), silent) == (True, [])


def test_the_key_list_gives_each_keys_table_type_default_and_description() -> None:
    """``config_keys`` names a key with its table, its type in TOML's words, its default
    and its docstring; a nested table's keys come in its place."""
    keys = {key.key: key for key in config_keys()}
    assert keys["pacing.debounce_min_s"] == ConfigKey(
        "pacing.debounce_min_s",
        "float",
        5.0,
        "Shortest wait after the latest message before answering, in seconds.",
    )
    shown = {
        name: (keys[name].type, keys[name].default)
        for name in (
            "bot.persona_file",
            "bot.data_dir",
            "bot.admins",
            "pacing.on_new_message",
            "pacing.max_batch",
            "groups.override",
            "llm.splitter.model",
            "qq.backfill",
        )
    }
    assert shown == {
        "bot.persona_file": ("path", None),
        "bot.data_dir": ("path", Path("data")),
        "bot.admins": ("array of strings", ()),
        "pacing.on_new_message": ('"cancel" | "finish"', "cancel"),
        "pacing.max_batch": ("integer", 30),
        "groups.override": ("array of tables", ()),
        "llm.splitter.model": ("string", ""),
        "qq.backfill": ("boolean", True),
    }
    assert list(keys)[:2] == ["bot.name", "bot.aliases"]
    assert "llm.splitter" not in keys


def test_a_table_pasted_twice_names_the_line_to_edit(tmp_path: Path) -> None:
    """A README snippet pasted below the table it holds already names that table's line."""
    path = write(tmp_path, '[bot]\nname = "x"\n\n[budget]\ndaily_tokens = 1\n\n[budget]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        "config.toml already has [budget] at line 4: edit that table instead of declaring"
        " it again at line 7"
    )


def test_a_key_set_twice_names_both_lines(tmp_path: Path) -> None:
    """A key given twice in one table names its table, its key and both lines."""
    path = write(tmp_path, "[pacing]\nmax_batch = 3\ndebounce_min_s = 1\nmax_batch = 4\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        "config.toml sets pacing.max_batch twice, at line 2 and at line 4: keep one of them"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('[telegram]\nenabled = "yes"\n', 'telegram.enabled = "yes"'),
        ('[llm]\njson_mode = "true"\n', 'llm.json_mode = "true"'),
        ("[groups]\nstore_unaddressed = 1\n", "groups.store_unaddressed = 1"),
    ],
)
def test_a_switch_is_true_or_false_never_a_string(tmp_path: Path, text: str, shown: str) -> None:
    """A boolean key takes only true or false: "yes", "true" or 1 are refused, as prices
    given as strings are."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert str(caught.value) == (
        f"invalid configuration:\n  - {shown}: must be true or false, without quotes"
    )
