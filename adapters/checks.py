"""``pacebot check``: validate the config and the environment, and with ``--online`` the far ends.

Offline, nothing leaves the machine: the config is read, the persona and every secret an
enabled platform needs are looked up, and the data directory is tried
(:func:`prepare_data_dir`, which every other command also calls before it starts).
``--online`` then makes the fewest requests that
tell whether a run would work: one tiny chat completion (reachable, key accepted, JSON
mode accepted; with ``llm.memory_tool`` on, one more offering the tool), one embedding of
one word when ``[memory.embeddings]`` is on, one transcription of a bundled second of
silence and one synthesis of one word as far as ``[voice]`` turns them on, Telegram's
``getMe`` (the token is valid), the official QQ bot's access token and gateway URL, and
with ``[tools]`` on a connection to each MCP server (its tools listed, those offered
marked) and one web search. No secret is printed: a finding names the environment
variable, never its value.

The LLM SDK and the platform libraries are imported only for ``--online``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from bot.config.errors import toml_value
from bot.config.groups import BudgetConfig, GroupsConfig
from bot.config.model import Config, enabled_platforms, load_config
from bot.config.personas import read_persona, read_profile_personas
from bot.config.settings import Settings
from bot.config.values import LogLevel
from bot.errors import ConfigError, LLMError, PacebotError
from bot.log import setup_logging
from bot.models import ChatMessage
from bot.secrets import Secrets, read_secrets

if TYPE_CHECKING:
    from adapters.openai_llm import OpenAILLM

NOTHING_ENABLED = (
    "no platform is enabled: set enabled = true under [telegram], [qq] or [qq_official], "
    "or use `pacebot console`"
)
LOG_LEVELS: tuple[str, ...] = get_args(LogLevel)
ONLINE_TIMEOUT_S = 20.0
"""The longest one online check may take, whatever ``llm.timeout_s`` says."""
_PING = (
    ChatMessage("system", 'Answer with the JSON object {"ok": true} and nothing else.'),
    ChatMessage("user", "ping"),
)


@dataclass(frozen=True, slots=True)
class Finding:
    """What one online check found: whether it passed, and one line saying what."""

    ok: bool
    text: str

    def line(self) -> str:
        return f"{'✓' if self.ok else '✗'} {self.text}"


def check(path: Path, *, online: bool = False) -> int:
    """Validate ``path`` and the environment, say what would start; 0 if all is well."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"✗ {exc}", file=sys.stderr)
        return 1
    problems: list[str] = []
    try:
        Settings(config, persona=read_persona(config), personas=read_profile_personas(config))
    except ConfigError as exc:
        problems.append(str(exc))
    try:
        prepare_data_dir(config, keep=False)  # check leaves no directory behind
    except ConfigError as exc:
        problems.append(str(exc))
    try:
        resolve_log_level(None, config)
    except ConfigError as exc:
        problems.append(str(exc))
    secrets: Secrets | None = None
    try:
        secrets = read_secrets(config, console=False)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
    platforms = enabled_platforms(config)
    print(f"config: {path} is valid")
    print(f"database: {config.database_path}")
    print(f"LLM: {config.llm.model} at {config.llm.base_url or 'the OpenAI default endpoint'}")
    for name in platforms:
        print(f"would start: {name}")
    if config.web.enabled:
        print(f"dashboard: {config.web.url} (only `pacebot run` serves it, not `pacebot console`)")
    if config.voice.enabled:
        print(f"voice: {voice_summary(config)}")
    for line in settings_summary(config):
        print(line)
    for warning in cap_warnings(config.budget):
        print(f"! {warning}", file=sys.stderr)
    if config.tools.enabled:
        for line in tools_summary(config):
            print(line)
    if problems or secrets is None:
        for problem in problems:
            print(f"✗ {problem}", file=sys.stderr)
        if online:
            print("online checks skipped: fix the problems above first", file=sys.stderr)
        return 1
    if online:
        # Only problems are logged, scrubbed; the findings say the rest.
        setup_logging(level="WARNING", log_dir=None, secrets=secrets.every)
        findings = asyncio.run(online_findings(config, secrets))
        for finding in findings:
            print(finding.line(), file=sys.stdout if finding.ok else sys.stderr)
        if not all(finding.ok for finding in findings):
            return 1
    if platforms:
        print("✓ ready to run: `pacebot run`")
    else:
        # The shipped config enables nothing on purpose: the console works at once.
        print(
            "✓ ready for `pacebot console`; `pacebot run` needs a platform: "
            "set enabled = true under [telegram], [qq] or [qq_official]"
        )
    return 0


def settings_summary(config: Config) -> list[str]:
    """Say what a group is answered by and what the calls may spend, as the bot will run."""
    groups = config.groups
    lines = [f"groups: reply mode {toml_value(groups.reply_mode)}{_gate_of(groups)}"]
    for override in groups.override:
        given = sorted(override.model_fields_set - {"chat"})
        changes = ", ".join(f"{key} = {toml_value(getattr(override, key))}" for key in given)
        lines.append(f"  override {override.chat}: {changes or 'nothing changed'}")
    budget = config.budget
    caps = [
        f"soft {budget.daily_tokens:,}" if budget.daily_tokens else "soft none",
        f"hard {budget.hard_daily_tokens:,}" if budget.hard_daily_tokens else "hard none",
        f"per chat {budget.chat_daily_tokens:,}" if budget.chat_daily_tokens else "per chat none",
    ]
    prices = (
        f"prices {budget.price_in_per_million:g} in, {budget.price_out_per_million:g} out"
        f" {budget.currency} a million tokens"
        if budget.price_in_per_million or budget.price_out_per_million
        else "no prices set"
    )
    lines.append(f"budget: caps in tokens a chat day: {', '.join(caps)}; {prices}")
    return lines


def _gate_of(groups: GroupsConfig) -> str:
    """Say what the gate of ``"smart"`` joins on; nothing for the other modes."""
    if groups.reply_mode != "smart":
        return ""
    interests = ", ".join(groups.interests) or "none"
    return (
        f" (interests: {interests}; talk_value {groups.talk_value:g};"
        f" {groups.unaddressed_calls_per_hour} unaddressed calls an hour)"
    )


def cap_warnings(budget: BudgetConfig) -> list[str]:
    """Name the caps of ``[budget]`` that make no sense together (not errors: they run)."""
    soft, hard, chat = budget.daily_tokens, budget.hard_daily_tokens, budget.chat_daily_tokens
    warnings = []
    if hard and soft and hard < soft:
        warnings.append(
            f"budget.hard_daily_tokens = {hard} is below budget.daily_tokens = {soft}: the"
            " hard cap stops every call before the soft cap is ever reached"
        )
    if hard and chat and chat > hard:
        warnings.append(
            f"budget.chat_daily_tokens = {chat} is above budget.hard_daily_tokens = {hard}:"
            " no chat can reach it, the hard cap stops every call first"
        )
    return warnings


def resolve_log_level(chosen: str | None, config: Config) -> str:
    """Return the log level: ``chosen``, else ``$PACEBOT_LOG_LEVEL``, else ``bot.log_level``."""
    level = chosen or os.environ.get("PACEBOT_LOG_LEVEL", "").upper()
    if level and level not in LOG_LEVELS:
        source = "--log-level" if chosen else "PACEBOT_LOG_LEVEL"
        msg = f"{source} = {level!r}: must be one of {', '.join(LOG_LEVELS)}"
        raise ConfigError(msg)
    return level or config.bot.log_level


def prepare_data_dir(config: Config, *, keep: bool = True) -> None:
    """Create the data directory and its ``logs/`` and write a file in each.

    Raise ``ConfigError`` naming ``bot.data_dir`` when that fails: under ``/proc``, an
    existing file, a directory this user cannot write. With ``keep=False`` (``pacebot
    check``) the directories this call had to create are removed again.
    """
    data_dir = config.bot.data_dir
    created: list[Path] = []
    try:
        for directory in (data_dir, config.log_dir):
            _make_dir(directory, data_dir=data_dir, created=created)
            try:
                with tempfile.TemporaryFile(dir=directory):
                    pass
            except OSError as exc:
                msg = (
                    f"bot.data_dir = {toml_value(data_dir)}: cannot write in {directory}"
                    f" ({_why(exc)})"
                )
                raise ConfigError(msg) from None
    finally:
        if not keep:
            for directory in reversed(created):
                with contextlib.suppress(OSError):
                    directory.rmdir()


def _make_dir(directory: Path, *, data_dir: Path, created: list[Path]) -> None:
    """Create ``directory`` and its missing parents, appending each one made to ``created``."""
    try:
        missing = [path for path in (directory, *directory.parents) if not path.exists()]
    except OSError as exc:  # a parent this user may not even look into
        msg = f"bot.data_dir = {toml_value(data_dir)}: cannot reach {directory} ({_why(exc)})"
        raise ConfigError(msg) from None
    for path in reversed(missing):
        try:
            path.mkdir()
        except OSError as exc:
            msg = f"bot.data_dir = {toml_value(data_dir)}: cannot create {path} ({_why(exc)})"
            raise ConfigError(msg) from None
        created.append(path)
    if not directory.is_dir():
        msg = f"bot.data_dir = {toml_value(data_dir)}: {directory} exists and is not a directory"
        raise ConfigError(msg)


def _why(error: OSError) -> str:
    return error.strerror or str(error)


async def online_findings(config: Config, secrets: Secrets) -> list[Finding]:
    """Contact the LLM and every enabled platform that can be contacted; say what was found."""
    findings = [await check_llm(config, secrets.llm_api_key)]
    if secrets.embeddings_api_key is not None:  # read only when [memory.embeddings] is on
        findings.append(await check_embeddings(config, secrets.embeddings_api_key))
    if secrets.voice_api_key is not None:  # read only when [voice] transcribes or speaks
        findings += await check_voice(config, secrets.voice_api_key)
    if secrets.telegram_token is not None:
        findings.append(await check_telegram(config, secrets.telegram_token))
    if secrets.qq_official_secret is not None:
        findings.append(await check_qq_official(config, secrets.qq_official_secret))
    if config.tools.enabled:
        from adapters.tools.probe import check_tools  # the mcp SDK, only with tools on

        findings += [Finding(ok, text) for ok, text in await check_tools(config, secrets)]
    if config.qq.enabled:
        findings.append(
            Finding(
                ok=True,
                text=f"QQ: nothing to contact; the OneBot implementation connects to "
                f"ws://{config.qq.host}:{config.qq.port}/onebot/v11/ws once pacebot runs",
            )
        )
    return findings


async def check_llm(config: Config, api_key: str) -> Finding:
    """Send one tiny request as a batch would; if JSON mode is refused, say how to turn it off."""
    from adapters.openai_llm import OpenAILLM

    llm_config = config.llm
    where = f"LLM {llm_config.model} at {llm_config.base_url or 'the OpenAI default endpoint'}"
    llm = OpenAILLM(
        base_url=llm_config.base_url,
        api_key=api_key,
        model=llm_config.model,
        temperature=llm_config.temperature,
        timeout_s=min(llm_config.timeout_s, ONLINE_TIMEOUT_S),
        max_retries=0,  # a check reports what it found instead of waiting it out
        max_output_tokens=16,
    )
    async with llm:
        try:
            await llm.complete(_PING, json_mode=llm_config.json_mode)
        except LLMError as exc:
            failure = exc
        else:
            mode = "JSON mode accepted" if llm_config.json_mode else "JSON mode off"
            if llm_config.memory_tool or config.tools.enabled:
                switches = [
                    *(["llm.memory_tool = false"] if llm_config.memory_tool else []),
                    *(["[tools] enabled = false"] if config.tools.enabled else []),
                ]
                return await _check_memory_tool(
                    llm, where, json_mode=llm_config.json_mode, off=" and ".join(switches)
                )
            return Finding(ok=True, text=f"{where}: reachable, key accepted, {mode}")
        if not llm_config.json_mode:
            return Finding(ok=False, text=str(failure))
        try:  # was it the response_format?
            await llm.complete(_PING, json_mode=False)
        except LLMError:
            return Finding(ok=False, text=str(failure))
    return Finding(
        ok=False,
        text=f"{where}: reachable and key accepted, but JSON mode (response_format) is "
        f"refused: set llm.json_mode = false ({failure})",
    )


async def _check_memory_tool(llm: OpenAILLM, where: str, *, json_mode: bool, off: str) -> Finding:
    """Offer the memory tool once: a provider that refuses tools would cost every batch
    (with ``[tools]`` on, it stands for every tool)."""
    from bot.memory.tool import SEARCH_MEMORY

    try:
        await llm.complete(_PING, json_mode=json_mode, tools=(SEARCH_MEMORY,))
    except LLMError as exc:
        return Finding(ok=False, text=f"{where}: refused a request offering the memory tool: {exc}")
    if llm.tools_refused:
        return Finding(
            ok=False,
            text=f"{where}: reachable and key accepted, but tools are refused (HTTP 400): "
            f"set {off}",
        )
    return Finding(ok=True, text=f"{where}: reachable, key accepted, the memory tool accepted")


async def check_embeddings(config: Config, api_key: str) -> Finding:
    """Embed one word: the endpoint is reachable, the key accepted, a vector comes back."""
    from adapters.openai_embeddings import OpenAIEmbedder

    embeddings = config.memory.embeddings
    base_url = embeddings.base_url or config.llm.base_url
    where = f"embeddings {embeddings.model} at {base_url or 'the OpenAI default endpoint'}"
    embedder = OpenAIEmbedder(
        base_url=base_url,
        api_key=api_key,
        model=embeddings.model,
        timeout_s=min(config.llm.timeout_s, ONLINE_TIMEOUT_S),
        max_retries=0,  # a check reports what it found instead of waiting it out
    )
    async with embedder:
        problem = await embedder.answers()
    if problem is not None:
        return Finding(ok=False, text=problem)
    return Finding(ok=True, text=f"{where}: reachable, key accepted, vectors returned")


def tools_summary(config: Config) -> list[str]:
    """Say which tools ``[tools]`` would offer, and warn of an allow list that takes all."""
    tools = config.tools
    lines = [
        f"tools: at most {tools.max_rounds} extra call(s) per batch, {tools.timeout_s:g} s per"
        " tool call"
    ]
    for server in tools.mcp:
        where = server.url or " ".join((server.command, *server.args))
        lines.append(
            f"tools: MCP server {server.name} ({server.transport}: {where}), offering "
            f"{', '.join(server.allow)}"
        )
        if "*" in server.allow:
            lines.append(
                f'! tools.mcp (name {toml_value(server.name)}): allow = ["*"] offers every tool'
                " the server has, and any it adds later; name the tools instead"
            )
    search = tools.web_search
    if search.enabled:
        lines.append(f"tools: web_search through {search.provider} at {search.endpoint}")
    return lines


def voice_summary(config: Config) -> str:
    """Say what ``[voice]`` turns on, with which models, at which endpoint."""
    voice = config.voice
    parts = []
    if voice.transcribe:
        parts.append(f"hears voice notes with {voice.stt_model}")
    if voice.speak:
        parts.append(f"speaks with {voice.tts_model} ({voice.tts_voice})")
    base_url = voice.base_url or config.llm.base_url
    return f"{' and '.join(parts)} at {base_url or 'the OpenAI default endpoint'}"


async def check_voice(config: Config, api_key: str) -> list[Finding]:
    """Transcribe a bundled second of silence and speak one word, each only if it is on."""
    from adapters.openai_audio import OpenAIAudio
    from bot.voice.ports import Audio

    voice = config.voice
    base_url = voice.base_url or config.llm.base_url
    audio = OpenAIAudio(
        base_url=base_url,
        api_key=api_key,
        stt_model=voice.stt_model,
        tts_model=voice.tts_model,
        tts_voice=voice.tts_voice,
        timeout_s=min(config.llm.timeout_s, ONLINE_TIMEOUT_S),
        max_retries=0,  # a check reports what it found instead of waiting it out
    )
    where = base_url or "the OpenAI default endpoint"
    findings: list[Finding] = []
    async with audio:
        if voice.transcribe:
            silence = (resources.files("adapters") / "sounds" / "silence.ogg").read_bytes()
            try:
                await audio.transcribe(Audio(silence, "silence.ogg", 1.0))
            except LLMError as exc:
                findings.append(Finding(ok=False, text=f"voice: {exc}"))
            else:
                text = f"voice: transcription {voice.stt_model} at {where} heard a test second"
                findings.append(Finding(ok=True, text=text))
        if voice.speak:
            try:
                spoken = await audio.speak("好", audio_format="mp3")
            except LLMError as exc:
                findings.append(Finding(ok=False, text=f"voice: {exc}"))
            else:
                text = (
                    f"voice: speech {voice.tts_model} at {where} spoke a test word "
                    f"({len(spoken.data)} bytes of MP3)"
                )
                findings.append(Finding(ok=True, text=text))
    return findings


async def check_telegram(config: Config, token: str) -> Finding:
    """Ask Telegram who the bot is (``getMe``): the token is valid if it answers."""
    from adapters.telegram.wire import bot_username

    where = config.telegram.api_base_url or "api.telegram.org"
    try:
        async with asyncio.timeout(ONLINE_TIMEOUT_S):
            username = await bot_username(token, api_base_url=config.telegram.api_base_url)
    except TimeoutError:
        return Finding(ok=False, text=f"Telegram at {where}: no answer to getMe")
    except PacebotError as exc:
        return Finding(ok=False, text=f"Telegram at {where}: {exc}")
    return Finding(ok=True, text=f"Telegram at {where}: token valid, the bot is @{username}")


async def check_qq_official(config: Config, secret: str) -> Finding:
    """Get an access token and the gateway URL: the AppID and AppSecret are accepted."""
    from adapters.qqbot.probe import probe

    official = config.qq_official
    where = f"QQ bot {official.app_id} at {official.rest_base}"
    try:
        async with asyncio.timeout(ONLINE_TIMEOUT_S):
            found = await probe(official, secret, timeout_s=ONLINE_TIMEOUT_S)
    except TimeoutError:
        return Finding(ok=False, text=f"{where}: no answer")
    except PacebotError as exc:
        return Finding(ok=False, text=f"{where}: {exc}")
    return Finding(ok=True, text=f"{where}: token granted, gateway {found.gateway_url}")
