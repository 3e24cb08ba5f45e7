"""``[tools]``: the functions the model may call while it answers, and what they may cost.

Tools are MCP servers (``[[tools.mcp]]``: a command run as a subprocess that speaks MCP on
its stdin and stdout, or a streamable-HTTP endpoint), each offering only the tools its
``allow`` list names, and a web search (``[tools.web_search]``: SearXNG or Tavily). They
are offered only to batches that address the bot, and every extra call a batch spends on
tool results counts against ``max_rounds`` (``bot/tools/``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Field, model_validator

from bot.config.errors import describe, toml_value
from bot.config.values import EnvName, EnvNameOrEmpty, PositiveSeconds, Section, http_url

MCP_KEY = "tools.mcp"
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""The names an OpenAI-compatible model accepts for a function."""
_SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_HEADER_RE = re.compile(r"^[A-Za-z0-9-]{1,64}$")
TAVILY_URL = "https://api.tavily.com"
TAVILY_KEY_ENV = "TAVILY_API_KEY"


def _server_name(value: str) -> str:
    if not _SERVER_NAME_RE.match(value):
        msg = 'must be 1 to 32 letters, digits, "-" or "_", e.g. "weather"'
        raise ValueError(msg)
    return value


def _allowed(value: tuple[str, ...]) -> tuple[str, ...]:
    for name in value:
        if name != "*" and not TOOL_NAME_RE.match(name):
            msg = (
                f'{toml_value(name)} is not a tool name: 1 to 64 letters, digits, "-" or "_";'
                ' or "*" for every tool of the server'
            )
            raise ValueError(msg)
    return value


def _env_table(value: dict[str, str]) -> dict[str, str]:
    for name in value:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            msg = f"{toml_value(name)} is not the name of an environment variable"
            raise ValueError(msg)
    return value


def _headers(value: dict[str, str]) -> dict[str, str]:
    for header, env_name in value.items():
        if not _HEADER_RE.match(header):
            msg = f"{toml_value(header)} is not an HTTP header name, e.g. Authorization"
            raise ValueError(msg)
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", env_name):
            msg = (
                f"{header} = {toml_value(env_name)}: name the environment variable that holds "
                "the header's value, e.g. WEATHER_MCP_TOKEN"
            )
            raise ValueError(msg)
    return value


ServerName = Annotated[str, AfterValidator(_server_name)]
AllowList = Annotated[tuple[str, ...], Field(min_length=1), AfterValidator(_allowed)]
EnvTable = Annotated[dict[str, str], AfterValidator(_env_table)]
HeadersEnv = Annotated[dict[str, str], AfterValidator(_headers)]


class McpServer(Section):
    """One ``[[tools.mcp]]``: an MCP server and the tools of it the model is offered."""

    name: ServerName
    """The server's name, shown by /tools and in the log."""
    command: str = ""
    """The program of a stdio server, started with the bot and stopped with it."""
    args: tuple[str, ...] = ()
    """The program's arguments."""
    env: EnvTable = Field(default_factory=dict)
    """Environment variables the program gets, written here (never a secret): with
    ``pass_env`` and ``PATH``, all the environment it sees."""
    pass_env: tuple[EnvName, ...] = ()
    """Names of variables of pacebot's own environment handed to the program as they are:
    how a key reaches a server without being written in this file."""
    url: Annotated[str, http_url("http://127.0.0.1:8000/mcp")] = ""
    """The endpoint of a streamable-HTTP server, instead of ``command``."""
    headers_env: HeadersEnv = Field(default_factory=dict)
    """HTTP headers sent to ``url``, each naming the environment variable holding its
    value: ``{ Authorization = "WEATHER_MCP_AUTH" }``."""
    allow: AllowList
    """The server's tools the model is offered, by name (required); ``["*"]``: all."""

    @property
    def transport(self) -> str:
        """``stdio`` for a command, ``http`` for a URL."""
        return "stdio" if self.command else "http"

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if bool(self.command) == bool(self.url):
            msg = "set either command (a stdio server) or url (a streamable-HTTP server)"
            raise ValueError(msg)
        if self.url and (self.env or self.pass_env or self.args):
            msg = "args, env and pass_env are for a command; a url server takes headers_env"
            raise ValueError(msg)
        if self.command and self.headers_env:
            msg = "headers_env is for a url server; a command takes env and pass_env"
            raise ValueError(msg)
        return self


class WebSearchConfig(Section):
    """``[tools.web_search]``: the ``web_search(query)`` tool."""

    provider: Literal["", "searxng", "tavily"] = ""
    """"searxng", "tavily", or "" for no web search."""
    base_url: Annotated[str, http_url("http://127.0.0.1:8888")] = ""
    """SearXNG: its address (its ``json`` format turned on); Tavily: "" = its API."""
    api_key_env: EnvNameOrEmpty = ""
    """Tavily: the environment variable with its key; "" = ``TAVILY_API_KEY``."""
    max_results: int = Field(default=5, ge=1, le=20)
    """The most results one search returns: title, URL and snippet each, 1 to 20."""

    @property
    def enabled(self) -> bool:
        return bool(self.provider)

    @property
    def key_env(self) -> str:
        """The variable holding Tavily's key."""
        return self.api_key_env or TAVILY_KEY_ENV

    @property
    def endpoint(self) -> str:
        """Where the searches go."""
        return (self.base_url or (TAVILY_URL if self.provider == "tavily" else "")).rstrip("/")

    @model_validator(mode="after")
    def _searxng_needs_an_address(self) -> Self:
        if self.provider == "searxng" and not self.base_url:
            msg = (
                'tools.web_search.base_url = "": provider "searxng" needs the address of a '
                "SearXNG, e.g. http://127.0.0.1:8888"
            )
            raise ValueError(msg)
        return self


class ToolsConfig(Section):
    """``[tools]``: MCP servers and web search, inside the call budget."""

    enabled: bool = False
    """Offer the model tools: the MCP servers below, web search, the memory tool."""
    max_rounds: int = Field(default=2, ge=1, le=8)
    """The most extra LLM calls a batch may spend on tool results (the memory tool's
    too), 1 to 8; then the tools are withheld and the reply is asked for."""
    timeout_s: PositiveSeconds = 10.0
    """How long one tool call may take, in seconds; then the model is told it failed."""
    in_groups: bool = True
    """Offer tools to group batches that address the bot."""
    in_private: bool = True
    """Offer tools in private chats."""
    in_initiative: bool = False
    """Offer tools to the bot's own batches: reminders, follow-ups, openers."""
    admins_only: tuple[str, ...] = ()
    """Tools offered only to a batch holding a message of one of ``bot.admins``."""
    max_result_chars: int = Field(default=4000, ge=200, le=100_000)
    """The most characters of one tool result the model reads; the rest is cut."""
    mcp: tuple[McpServer, ...] = ()
    """The MCP servers: ``[[tools.mcp]]`` tables."""
    web_search: WebSearchConfig = WebSearchConfig()
    """The ``web_search`` tool: SearXNG or Tavily."""

    @model_validator(mode="after")
    def _servers_named_once(self) -> Self:
        seen: set[str] = set()
        for number, server in enumerate(self.mcp, start=1):
            if server.name in seen:
                msg = f"{MCP_KEY} (item {number}): name = {toml_value(server.name)} is taken"
                raise ValueError(msg)
            seen.add(server.name)
        return self


def describe_server(error: Mapping[str, Any], data: Mapping[str, Any]) -> str | None:
    """Describe a validation error of ``[[tools.mcp]]``, naming the server by its item and
    name; ``None`` for an error elsewhere."""
    loc = tuple(error["loc"])
    if loc == ("tools", "mcp") and error["type"] in {"tuple_type", "list_type"}:
        return f"{MCP_KEY}: write each server as [[{MCP_KEY}]] (double brackets)"
    if loc[:2] != ("tools", "mcp") or len(loc) < 3 or not isinstance(loc[2], int):
        return None
    where = f"{MCP_KEY} (item {loc[2] + 1}"
    name = _server_name_in(data, loc[2])
    if (len(loc) < 4 or loc[3] != "name") and isinstance(name, str):
        where += f", name {toml_value(name)}"
    if len(loc) == 3:  # a check across the server's keys says which itself
        return f"{where}): {describe({**error, 'loc': ()}, model=McpServer)}"
    return f"{where}): {describe({**error, 'loc': loc[3:]}, model=McpServer)}"


def _server_name_in(data: Mapping[str, Any], index: int) -> object:
    tools = data.get("tools")
    servers = tools.get("mcp") if isinstance(tools, Mapping) else None
    if isinstance(servers, list) and index < len(servers):
        item = servers[index]
        return item.get("name") if isinstance(item, Mapping) else None
    return None
