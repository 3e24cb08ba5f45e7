"""`pacebot check` and `[voice]`: the table validated in TOML's words, its key looked up,
and with `--online` one tiny transcription and one short synthesis, as far as voice is on."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from adapters.cli import main
from fakes.openai_api import FakeLLMServer
from fakes.process import CHECK_KEY as KEY
from fakes.process import check_config, check_online

SILENCE = (resources.files("adapters") / "sounds" / "silence.ogg").read_bytes()
BOTH = "[voice]\ntranscribe = true\nspeak = true\n"


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("max_seconds = 0", "voice.max_seconds = 0: must be more than 0"),
        ("max_chars = 5000", "voice.max_chars = 5000: must be at most 4096"),
        ("speak = 3", "voice.speak = 3: must be true or false"),
        (
            'base_url = "api.example.com"',
            'voice.base_url = "api.example.com": must be an http(s) URL',
        ),
        ('api_key_env = "MY KEY"', "voice.api_key_env: must be the name of an"),
        ('stt_model = ""', 'voice.stt_model = "": must not be empty'),
        ("speek = true", "voice.speek: unknown key"),
    ],
)
def test_a_bad_voice_table_is_named_in_tomls_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, problem: str
) -> None:
    """`pacebot check` exits 1 naming the key, the value and the form expected."""
    path = tmp_path / "config.toml"
    path.write_text(f"[voice]\n{table}\n", encoding="utf-8")
    assert main(["check", "-c", str(path)]) == 1
    assert problem in capsys.readouterr().err


def test_check_needs_the_voice_key_only_when_voice_is_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A [voice] api_key_env that is not set fails the check only with voice on, naming it."""
    monkeypatch.setenv("PACEBOT_LLM_API_KEY", KEY)
    monkeypatch.delenv("PACEBOT_VOICE_KEY", raising=False)
    path = tmp_path / "config.toml"
    path.write_text('[voice]\napi_key_env = "PACEBOT_VOICE_KEY"\n', encoding="utf-8")
    assert main(["check", "-c", str(path)]) == 0
    path.write_text(
        '[voice]\napi_key_env = "PACEBOT_VOICE_KEY"\ntranscribe = true\n', encoding="utf-8"
    )
    assert main(["check", "-c", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "✗ [voice] api_key_env: environment variable PACEBOT_VOICE_KEY is not set" in err
    assert "voice: hears voice notes with whisper-1 at the OpenAI default endpoint" in out


async def test_online_check_hears_a_second_and_speaks_a_word(tmp_path: Path) -> None:
    """--online uploads the bundled second of silence and asks for one word spoken, and
    says what each did; the LLM itself is asked once, as without voice."""
    async with FakeLLMServer(api_key=KEY) as llm:
        code, out, err = await check_online(check_config(tmp_path, llm, more=BOTH))
    assert (code, err) == (0, "")
    assert [(u.filename, u.data) for u in llm.transcriptions] == [("silence.ogg", SILENCE)]
    assert [(r["input"], r["response_format"]) for r in llm.speech_requests] == [("好", "mp3")]
    lines = out.splitlines()
    assert f"✓ voice: transcription whisper-1 at {llm.base_url} heard a test second" in lines
    assert any(line.startswith(f"✓ voice: speech tts-1 at {llm.base_url} spoke") for line in lines)
    assert len(llm.requests) == 1


async def test_online_check_asks_only_what_voice_turns_on(tmp_path: Path) -> None:
    """With speak alone on, nothing is uploaded for transcription."""
    async with FakeLLMServer(api_key=KEY) as llm:
        code, _, err = await check_online(
            check_config(tmp_path, llm, more="[voice]\nspeak = true\n")
        )
    assert (code, err, llm.transcriptions, len(llm.speech_requests)) == (0, "", [], 1)


async def test_a_provider_without_audio_endpoints_fails_the_check_without_the_key(
    tmp_path: Path,
) -> None:
    """404 from both audio endpoints: exit 1, one line for each saying what failed, while
    the LLM line still passes; a wrong voice key is refused (401) and never printed."""
    wrong = "sk-wrong-voice-key-246810"
    async with FakeLLMServer(api_key=KEY) as llm:
        llm.audio_endpoints = False
        missing = await check_online(check_config(tmp_path, llm, more=BOTH))
        llm.audio_endpoints = True
        more = BOTH + 'api_key_env = "PACEBOT_VOICE_KEY"\n'
        refused = await check_online(
            check_config(tmp_path, llm, more=more), env={"PACEBOT_VOICE_KEY": wrong}
        )
    assert (missing[0], refused[0]) == (1, 1)
    assert [line.split(": HTTP")[1][:9] for line in missing[2].splitlines()] == [
        " 404 not ",
        " 404 not ",
    ]
    assert missing[2].splitlines()[0].startswith("✗ voice: transcription whisper-1 at ")
    assert missing[2].splitlines()[1].startswith("✗ voice: speech tts-1 at ")
    assert "reachable, key accepted, JSON mode accepted" in missing[1]
    assert all("HTTP 401 unauthorized" in line for line in refused[2].splitlines())
    assert wrong not in refused[1] + refused[2]
    assert KEY not in missing[1] + missing[2]
