"""The tools outside the core, as one :class:`~bot.tools.ports.Toolbox`: the MCP servers
of ``[[tools.mcp]]`` and the web search of ``[tools.web_search]``.

:func:`opened_toolbox` starts every server (each in a task of its own, see
``adapters/tools/mcp.py``) and stops them all on exit; ``adapters/tools/late.py`` opens it
beside the platforms. A tool name two sources offer
goes to the first in the config (web search before the servers), and the memory tool's
name is never taken from the core; each clash is logged once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING

from loguru import logger

from adapters.tools.web_search import NAME as WEB_SEARCH_NAME
from adapters.tools.web_search import WEB_SEARCH, WebSearch
from bot.config.tools import ToolsConfig
from bot.errors import ToolFailed
from bot.memory.tool import NAME as MEMORY_TOOL
from bot.models import ToolSpec
from bot.tools.ports import ToolSource

if TYPE_CHECKING:
    from adapters.tools.mcp import McpServerLink


class Tools:
    """The MCP servers and the web search, behind one name per tool."""

    def __init__(self, links: Sequence[McpServerLink], web: WebSearch | None) -> None:
        self._links = tuple(links)
        self._web = web
        self._told: set[tuple[str, str]] = set()  # name clashes already logged

    async def started(self, *, within_s: float) -> None:
        """Wait until every server has tried to connect once, ``within_s`` at most."""
        await asyncio.gather(*(link.wait_tried(within_s=within_s) for link in self._links))

    def ready(self) -> tuple[ToolSpec, ...]:
        """Return the tools that can be called now, one per name."""
        taken = {MEMORY_TOOL}
        ready: list[ToolSpec] = []
        if self._web is not None:
            ready.append(WEB_SEARCH)
            taken.add(WEB_SEARCH_NAME)
        for link in self._links:
            for tool in link.tools:
                if tool.name in taken:
                    self._tell_clash(tool.name, link.name)
                    continue
                taken.add(tool.name)
                ready.append(tool)
        return tuple(ready)

    async def call(self, name: str, arguments: Mapping[str, object]) -> str:
        """Run the tool ``name`` at the source that offers it."""
        if name == WEB_SEARCH_NAME and self._web is not None:
            return await self._web.search(dict(arguments))
        for link in self._links:
            if any(tool.name == name for tool in link.tools):
                return await link.call(name, arguments)
        msg = f"no tool named {name!r} is ready"
        raise ToolFailed(msg)

    def sources(self) -> tuple[ToolSource, ...]:
        """Return the web search and each server, with its state."""
        web: tuple[ToolSource, ...] = ()
        if self._web is not None:
            web = (ToolSource(self._web.where, "web search", "running", (WEB_SEARCH_NAME,)),)
        return web + tuple(link.source for link in self._links)

    def _tell_clash(self, name: str, server: str) -> None:
        if (name, server) not in self._told:
            self._told.add((name, server))
            logger.warning(
                "tools: MCP server {} offers {}, a name already taken; it is left out",
                server,
                name,
            )


@contextlib.asynccontextmanager
async def opened_toolbox(config: ToolsConfig, secrets: Mapping[str, str]) -> AsyncIterator[Tools]:
    """Start the servers and open the web search; stop and close them on exit.

    ``secrets`` holds the values of the variables the config names (``pass_env``,
    ``headers_env``, the web search's key), by name.
    """
    links = _links(config, secrets)
    web = None
    if config.web_search.enabled:
        web = WebSearch(config.web_search, api_key=secrets.get(config.web_search.key_env))
    async with contextlib.AsyncExitStack() as stack:
        if web is not None:
            stack.push_async_callback(web.aclose)
        for link in links:
            link.start()
        stack.push_async_callback(_stopped, links)
        yield Tools(links, web)


def _links(config: ToolsConfig, secrets: Mapping[str, str]) -> list[McpServerLink]:
    """Return a link per MCP server; the ``mcp`` SDK is imported only when there is one."""
    if not config.mcp:
        return []
    from adapters.tools.mcp import McpServerLink

    return [
        McpServerLink(
            server,
            env={**server.env, **{name: secrets[name] for name in server.pass_env}},
            headers={header: secrets[env] for header, env in server.headers_env.items()},
        )
        for server in config.mcp
    ]


async def _stopped(links: Sequence[McpServerLink]) -> None:
    await asyncio.gather(*(link.stop() for link in links))
