"""The toolbox opened beside the platforms, not before them.

The ``mcp`` SDK takes about a second to import and each server a moment to start;
neither should hold the bot's start-up. :class:`LateToolbox` imports the toolbox in a
worker thread and starts the servers in a task of its own while the platforms come up;
until then it offers nothing, and a batch that would be offered tools waits for the
servers' first attempts (``started``), at most ``[tools] timeout_s``.

The SDK is imported only with a ``[[tools.mcp]]`` server to talk to, and then only its
client side: the ``mcp`` package's ``__init__`` imports its server side as well, some 180
modules and 9 MiB that a bot would hold all its life for nothing
(:mod:`adapters.package_init` defers it).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Mapping
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Self

from adapters.package_init import defer_package_init
from bot.config.tools import ToolsConfig
from bot.errors import ToolFailed
from bot.models import ToolSpec
from bot.tasks import start_task
from bot.tools.ports import ToolSource

if TYPE_CHECKING:
    from adapters.tools.toolbox import Tools


class LateToolbox:
    """A :class:`~bot.tools.ports.Toolbox` whose servers start in the background."""

    def __init__(self, config: ToolsConfig, secrets: Mapping[str, str]) -> None:
        self._config = config
        self._secrets = dict(secrets)
        self._tools: Tools | None = None
        self._opened = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._task = start_task(
            self._open(), name="tools:open", failure="tools: the toolbox could not be opened"
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        if self._task is not None:
            await asyncio.wait({self._task})

    async def _open(self) -> None:
        module = await asyncio.to_thread(_import_toolbox, self._config)
        if self._stopping.is_set():
            return
        async with module.opened_toolbox(self._config, self._secrets) as tools:
            self._tools = tools
            self._opened.set()
            await self._stopping.wait()
        self._tools = None

    async def started(self, *, within_s: float) -> None:
        """Wait until every source has tried to start, ``within_s`` at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                await self._opened.wait()
        if self._tools is not None:
            await self._tools.started(within_s=max(0.0, deadline - loop.time()))

    def ready(self) -> tuple[ToolSpec, ...]:
        return self._tools.ready() if self._tools is not None else ()

    async def call(self, name: str, arguments: Mapping[str, object]) -> str:
        if self._tools is None:
            msg = "the tools are still starting"
            raise ToolFailed(msg)
        return await self._tools.call(name, arguments)

    def sources(self) -> tuple[ToolSource, ...]:
        if self._tools is not None:
            return self._tools.sources()
        return tuple(
            ToolSource(server.name, server.transport, "starting") for server in self._config.mcp
        )


def _import_toolbox(config: ToolsConfig) -> ModuleType:
    """Import the toolbox, and the MCP client when a server is configured."""
    if config.mcp:
        defer_package_init("mcp")  # the SDK's client modules alone, not its server
        defer_package_init("mcp.client")
        importlib.import_module("adapters.tools.mcp")
    return importlib.import_module("adapters.tools.toolbox")
