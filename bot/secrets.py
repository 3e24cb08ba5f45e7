"""Read the secrets a run needs from the environment variables the config names.

Secrets never live in ``config.toml``; a missing one is a ``ConfigError`` that names the
key and the variable, and every secret read is scrubbed from the logs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from bot.config.errors import toml_value
from bot.config.model import WEB_TOKEN_CHARS_MIN, Config
from bot.errors import ConfigError


def secret(env_name: str, *, purpose: str) -> str:
    """Return the secret in ``env_name``; raise ``ConfigError`` naming it when unset."""
    value = os.environ.get(env_name, "").strip()
    if not value:
        msg = f"{purpose}: environment variable {env_name} is not set"
        raise ConfigError(msg)
    return value


@dataclass(frozen=True, slots=True)
class Secrets:
    """The secrets a run needs, read from the environment variables the config names.

    The LLM keys are empty for a command that makes no chat-completion call: an LLM
    client is never built with an empty key (``adapters/openai_llm.py`` refuses it).
    """

    llm_api_key: str
    splitter_api_key: str
    telegram_token: str | None = None
    onebot_access_token: str | None = None
    web_token: str | None = None
    embeddings_api_key: str | None = None  # only when [memory.embeddings] is on
    voice_api_key: str | None = None  # only when [voice] transcribes or speaks
    qq_official_secret: str | None = None  # the official QQ bot's AppSecret
    tool_values: tuple[tuple[str, str], ...] = ()  # [tools]: each variable it names, by name

    @property
    def tools_env(self) -> dict[str, str]:
        """The values of the variables ``[tools]`` names (keys, headers), by name."""
        return dict(self.tool_values)

    @property
    def every(self) -> tuple[str, ...]:
        """All the secret values, for scrubbing from logs."""
        values = (
            self.llm_api_key,
            self.splitter_api_key,
            self.telegram_token,
            self.onebot_access_token,
            self.web_token,
            self.embeddings_api_key,
            self.voice_api_key,
            self.qq_official_secret,
            *(value for _, value in self.tool_values),
        )
        return tuple(s for s in values if s)


def read_secrets(config: Config, *, console: bool, llm: bool = True) -> Secrets:
    """Read every secret the run needs; raise ``ConfigError`` listing all that are missing.

    Without ``llm`` (a command that asks the LLM nothing, such as ``pacebot recall``) the
    LLM and splitter keys are not read; the embeddings key still is when
    ``[memory.embeddings]`` is on, and that may be the ``[llm]`` key.
    """
    problems: list[str] = []

    def need(env_name: str, purpose: str) -> str:
        try:
            return secret(env_name, purpose=purpose)
        except ConfigError as exc:
            problems.append(str(exc))
            return ""

    llm_key = splitter_key = ""
    if llm:
        llm_key = need(config.llm.api_key_env, "[llm] api_key_env")
        splitter_env = config.llm.splitter.api_key_env
        splitter_key = need(splitter_env, "[llm.splitter] api_key_env") if splitter_env else llm_key

    def key_of(section: str, env_name: str) -> str:
        """Read a section's own key, or the ``[llm]`` key it falls back to."""
        if env_name:
            return need(env_name, f"[{section}] api_key_env")
        if llm:
            return llm_key
        return need(config.llm.api_key_env, f"[llm] api_key_env (the key [{section}] uses)")

    embeddings = config.memory.embeddings
    embeddings_key = None
    if embeddings.enabled:
        embeddings_key = key_of("memory.embeddings", embeddings.api_key_env)
    voice_key = None
    if config.voice.enabled and not console:
        voice_key = key_of("voice", config.voice.api_key_env)
    telegram_token = onebot_token = None
    if config.telegram.enabled and not console:
        telegram_token = need(config.telegram.token_env, "[telegram] token_env")
    if config.qq.enabled and not console:
        token_env = config.qq.access_token_env
        onebot_token = os.environ.get(token_env, "").strip() or None
        if onebot_token is None and not config.qq.is_loopback:
            problems.append(
                f"[qq] access_token_env: environment variable {token_env} is not set, and it is "
                f"required because qq.host = {toml_value(config.qq.host)} is not a loopback address"
            )
    qq_official_secret = None
    if config.qq_official.enabled and not console:
        qq_official_secret = need(config.qq_official.secret_env, "[qq_official] secret_env")
    web_token = None
    if config.web.enabled and not console:
        web_token = need(config.web.token_env, "[web] token_env") or None
        if web_token is not None and len(web_token) < WEB_TOKEN_CHARS_MIN:
            problems.append(
                f"[web] token_env: the token in {config.web.token_env} has {len(web_token)}"
                f" characters; use at least {WEB_TOKEN_CHARS_MIN}, e.g. the output of"
                " python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
    tool_values = _tool_values(config, need)
    if problems:
        raise ConfigError("\n".join(problems))
    return Secrets(
        llm_key,
        splitter_key,
        telegram_token,
        onebot_token,
        web_token=web_token,
        embeddings_api_key=embeddings_key,
        voice_api_key=voice_key,
        qq_official_secret=qq_official_secret or None,
        tool_values=tool_values,
    )


def _tool_values(config: Config, need: Callable[[str, str], str]) -> tuple[tuple[str, str], ...]:
    """Read each variable ``[tools]`` names: Tavily's key, the servers' ``pass_env`` and
    ``headers_env`` (only with ``[tools] enabled``)."""
    tools = config.tools
    if not tools.enabled:
        return ()
    wanted: dict[str, str] = {}
    if tools.web_search.provider == "tavily":
        wanted[tools.web_search.key_env] = "[tools.web_search] api_key_env"
    for server in tools.mcp:
        where = f"[[tools.mcp]] name {toml_value(server.name)}"
        for name in server.pass_env:
            wanted.setdefault(name, f"{where}: pass_env")
        for header, name in server.headers_env.items():
            wanted.setdefault(name, f"{where}: headers_env.{header}")
    return tuple((name, need(name, purpose)) for name, purpose in wanted.items())
