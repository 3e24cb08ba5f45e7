"""One MCP server of ``[[tools.mcp]]``, through the official ``mcp`` SDK.

:class:`McpServerLink` keeps one connection alive in a task of its own: it starts a stdio
server as a subprocess (``stdio_client``: only the environment the config names, plus
``PATH`` and the account basics the SDK passes) or connects to a streamable-HTTP one,
initialises the session and reads the tool list once, then waits until the process ends,
a call finds the connection broken, or the bot stops. A server that ends or cannot start
is tried again after a growing wait (1 s doubling up to 5 min, back to 1 s once it ran a
minute); the first failure of a run of them is logged once as a warning, the rest at
DEBUG, and its tools are out of the offer until it is back. The server's stderr is read
into the log at DEBUG, its last lines quoted when it dies. Stopping closes the session and
the SDK ends the subprocess (stdin closed, then SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import IO, Any, TextIO

import anyio
import httpx
from loguru import logger
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, PaginatedRequestParams, Tool

from bot.config.tools import TOOL_NAME_RE, McpServer
from bot.errors import ToolFailed
from bot.models import ToolSpec
from bot.prompt import clip
from bot.tasks import start_task
from bot.tools.ports import ToolSource

CONNECT_TIMEOUT_S = 30.0
"""How long starting a server and reading its tools may take."""
FIRST_WAIT_S = 1.0
LONGEST_WAIT_S = 300.0
STEADY_S = 60.0
"""A server that ran this long starts its waits from the first again when it dies."""
DESCRIPTION_CHARS_MAX = 1024
STOP_WAIT_S = 10.0
"""How long a stop waits for the connection to close before cancelling it."""
LAST_WORDS = 5  # lines of stderr kept to quote when a server dies
_PAGES_MAX = 20
_CONNECTION_CLOSED = -32000


class McpServerLink:
    """Keep one MCP server connected; answer calls of its allowed tools."""

    def __init__(
        self,
        server: McpServer,
        *,
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``env`` is what the subprocess gets besides ``PATH``; ``headers`` what an HTTP
        server is sent (their values read from the variables the config names)."""
        self._server = server
        self._env = dict(env or {})
        self._headers = dict(headers or {})
        self._session: ClientSession | None = None
        self._tools: tuple[ToolSpec, ...] = ()
        self._listed: tuple[str, ...] = ()  # every tool the server listed, allowed or not
        self._state = "starting"
        self._detail = ""
        self._tried = asyncio.Event()  # the first attempt came to something
        self._ended = asyncio.Event()  # the current connection is gone
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_words: deque[str] = deque(maxlen=LAST_WORDS)

    @property
    def name(self) -> str:
        return self._server.name

    @property
    def up(self) -> bool:
        """Whether the server is connected (and its connection not found broken)."""
        return self._session is not None and not self._ended.is_set()

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The allowed tools, while the server runs."""
        return self._tools if self.up else ()

    @property
    def listed(self) -> tuple[str, ...]:
        """Every tool the server listed at its last connect, allowed or not."""
        return self._listed

    def allows(self, name: str) -> bool:
        """Tell whether the server's allow list lets its tool ``name`` be offered."""
        allow = self._server.allow
        return bool(TOOL_NAME_RE.match(name)) and ("*" in allow or name in allow)

    @property
    def detail(self) -> str:
        """Why the server is not running, when it is not."""
        return self._detail

    @property
    def source(self) -> ToolSource:
        """What ``/tools`` shows of the server."""
        names = tuple(tool.name for tool in self.tools)
        state = "restarting" if self._state == "running" and not self.up else self._state
        return ToolSource(self.name, self._server.transport, state, names, self._detail)

    def start(self) -> None:
        """Start keeping the server connected, in a task of its own."""
        self._task = start_task(
            self._keep_connected(),
            name=f"tools:mcp:{self.name}",
            failure=f"tools: the link to MCP server {self.name} failed",
        )

    async def wait_tried(self, *, within_s: float) -> None:
        """Wait until the first attempt to connect succeeded or failed, ``within_s`` at most."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):
                await self._tried.wait()

    async def stop(self) -> None:
        """Close the session and end the server (a start still under way is cancelled)."""
        self._stopping.set()
        if self._task is not None:
            _, pending = await asyncio.wait({self._task}, timeout=STOP_WAIT_S)
            for task in pending:
                task.cancel()
                await asyncio.wait({task})
        self._state = "stopped"

    async def call(self, name: str, arguments: Mapping[str, object]) -> str:
        """Run one tool; raise ``ToolFailed`` with a short reason when it gives no result."""
        session = self._session
        if session is None or not self.up:
            msg = f"the server of {name} is {self.source.state}"
            raise ToolFailed(msg)
        try:
            result = await session.call_tool(name, dict(arguments))
        except McpError as exc:
            if exc.error.code == _CONNECTION_CLOSED:
                self._ended.set()
                msg = f"the server of {name} stopped while answering"
            else:
                msg = clip(exc.error.message or "the server refused the call", 300)
            raise ToolFailed(msg) from None
        except (OSError, httpx.HTTPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._ended.set()
            msg = f"the server of {name} cannot be reached"
            raise ToolFailed(msg) from None
        text = result_text(result)
        if result.isError:
            raise ToolFailed(clip(text or "the tool reported an error", 300))
        return text

    # -- the connection --------------------------------------------------------------

    async def _keep_connected(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping.is_set():
            started = loop.time()
            reason = await self._connection()
            self._session, self._tools = None, ()
            self._tried.set()
            if self._stopping.is_set():
                break
            failures = 1 if loop.time() - started >= STEADY_S else failures + 1
            wait_s = min(FIRST_WAIT_S * 2 ** (failures - 1), LONGEST_WAIT_S)
            self._state, self._detail = "restarting", reason
            self._tell_down(reason, wait_s, first=failures == 1)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await self._stopping.wait()

    async def _connection(self) -> str:
        """Connect, serve calls until the connection ends; return why it ended."""
        self._ended.clear()
        try:
            async with self._session_opened() as session:
                with anyio.fail_after(CONNECT_TIMEOUT_S):
                    await session.initialize()
                    listed = await self._list_tools(session)
                self._tools, self._session = listed, session
                self._state, self._detail = "running", ""
                self._tried.set()
                self._tell_ready(listed)
                await _first_of(self._stopping, self._ended)
        except Exception as exc:
            return self._why(_leaf(exc))
        words = "; ".join(self._last_words)
        return f"its connection ended{f' (it said: {clip(words, 300)})' if words else ''}"

    @contextlib.asynccontextmanager
    async def _session_opened(self) -> AsyncIterator[ClientSession]:
        """Open the transport and a session over it; a relay notes when the server's side
        of it ends (a stdio server that exits), so the link restarts it at once."""
        async with contextlib.AsyncExitStack() as stack:
            # streamable HTTP yields a third item, the session id's getter
            read, write, *_ = await stack.enter_async_context(self._transport(stack))
            sender, relayed = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._relay, read, sender)
            yield await stack.enter_async_context(ClientSession(relayed, write))

    async def _relay(self, read: Any, sender: Any) -> None:
        async with sender:
            async for item in read:
                await sender.send(item)
        self._ended.set()

    def _transport(
        self, stack: contextlib.AsyncExitStack
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self._server
        if server.command:
            parameters = StdioServerParameters(
                command=server.command, args=list(server.args), env=self._env
            )
            errlog = stack.enter_context(_StderrPipe(self._last_words))
            return stdio_client(parameters, errlog=errlog)
        timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=LONGEST_WAIT_S)
        client = httpx.AsyncClient(headers=self._headers, timeout=timeout)
        stack.push_async_callback(client.aclose)
        return streamable_http_client(server.url, http_client=client)

    async def _list_tools(self, session: ClientSession) -> tuple[ToolSpec, ...]:
        """Read the server's tools (every page) and keep those its allow list names."""
        self._listed = ()
        found: list[ToolSpec] = []
        cursor: str | None = None
        for _ in range(_PAGES_MAX):
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
            for tool in page.tools:
                self._listed += (tool.name,)
                spec = tool_spec(tool)
                if spec is not None and self.allows(tool.name):
                    found.append(spec)
            cursor = page.nextCursor
            if cursor is None:
                break
        return tuple(found)

    def _why(self, exc: BaseException) -> str:
        if isinstance(exc, FileNotFoundError):
            return f"its command {self._server.command!r} was not found"
        if isinstance(exc, TimeoutError):
            return f"it did not answer within {CONNECT_TIMEOUT_S:g} s"
        words = "; ".join(self._last_words)
        said = f" (it said: {clip(words, 300)})" if words else ""
        return f"it failed: {type(exc).__name__}: {clip(str(exc), 200)}{said}"

    def _tell_ready(self, tools: tuple[ToolSpec, ...]) -> None:
        names = ", ".join(tool.name for tool in tools) or "none"
        logger.info("tools: MCP server {} ready, offering {}", self.name, names)
        listed = {tool.name for tool in tools}
        missing = [name for name in self._server.allow if name != "*" and name not in listed]
        if missing:
            logger.warning(
                "tools: MCP server {} has no tool {} that its allow list names",
                self.name,
                ", ".join(missing),
            )

    def _tell_down(self, reason: str, wait_s: float, *, first: bool) -> None:
        say = logger.warning if first else logger.debug
        say(
            "tools: MCP server {} is down: {}; its tools are left out, trying again in {:g} s",
            self.name,
            reason,
            wait_s,
        )


def tool_spec(tool: Tool) -> ToolSpec | None:
    """Return an MCP tool as the model is offered it; ``None`` for a name models refuse."""
    if not TOOL_NAME_RE.match(tool.name):
        return None
    description = clip(tool.description or tool.name, DESCRIPTION_CHARS_MAX)
    return ToolSpec(tool.name, description, json.dumps(tool.inputSchema, ensure_ascii=False))


def result_text(result: CallToolResult) -> str:
    """Return what a tool call gave as text: its text parts, others named by kind."""
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts)


def _leaf(exc: BaseException) -> BaseException:
    """Return the first error inside nested exception groups (anyio's task groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


class _StderrPipe:
    """A pipe the server writes its stderr into, read line by line into the log (DEBUG),
    the last lines kept to quote when it dies."""

    def __init__(self, last_words: deque[str]) -> None:
        self._last_words = last_words
        self._reader: IO[bytes] | None = None
        self._writer: TextIO | None = None

    def __enter__(self) -> TextIO:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self._writer = os.fdopen(write_fd, "w")
        asyncio.get_running_loop().add_reader(read_fd, self._read)
        return self._writer

    def _read(self) -> bool:
        """Log what the server wrote; return whether more may come."""
        if self._reader is None:
            return False
        try:
            data = self._reader.read(65536)
        except BlockingIOError:
            return False
        if not data:
            self._close_reader()
            return False
        for line in data.decode("utf-8", "replace").splitlines():
            if line.strip():
                self._last_words.append(clip(line.strip(), 200))
                logger.debug("tools: MCP server says: {}", clip(line, 500))
        return True

    def _close_reader(self) -> None:
        if self._reader is not None:
            asyncio.get_running_loop().remove_reader(self._reader.fileno())
            self._reader.close()
            self._reader = None

    def __exit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()
        while self._read():  # what the server wrote before it ended
            pass
        self._close_reader()
