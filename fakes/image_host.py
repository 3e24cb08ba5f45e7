"""A tiny local HTTP host for QQ picture URLs: pictures, redirects, slow and endless bodies.

::

    async with ImageHost() as host:
        url = host.serve("/cat.jpg", jpeg(800, 600))
        host.redirect("/hop", "/cat.jpg")
        ...  # an image segment with this URL goes to the bot
        assert host.requests == ["/cat.jpg"]

It listens on 127.0.0.1 and, with ``also_on``, on more loopback addresses (the whole of
127.0.0.0/8 reaches this machine on Linux), so a test can tell a host it trusts from
one it does not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from aiohttp import web


@dataclass(frozen=True, slots=True)
class _Route:
    body: bytes = b""
    status: int = 200
    location: str | None = None
    delay_s: float = 0.0
    endless: bool = False  # stream chunks for ever, without a Content-Length


class ImageHost:
    """Serve scripted paths over HTTP on loopback addresses, recording each request."""

    def __init__(self, *, also_on: tuple[str, ...] = ()) -> None:
        self.requests: list[str] = []
        self.hosts: list[str] = []  # the Host header of each request
        self._routes: dict[str, _Route] = {}
        self._addresses = ("127.0.0.1", *also_on)
        self._runner: web.AppRunner | None = None
        self.port = 0

    def url(self, path: str, *, address: str = "127.0.0.1") -> str:
        """Return the URL of ``path`` on ``address``."""
        return f"http://{address}:{self.port}{path}"

    def serve(self, path: str, body: bytes, *, delay_s: float = 0.0) -> str:
        """Answer ``path`` with ``body`` (after ``delay_s``); return its URL."""
        self._routes[path] = _Route(body=body, delay_s=delay_s)
        return self.url(path)

    def redirect(self, path: str, location: str, *, status: int = 302) -> str:
        """Answer ``path`` with a redirect to ``location``; return its URL."""
        self._routes[path] = _Route(status=status, location=location)
        return self.url(path)

    def endless(self, path: str) -> str:
        """Answer ``path`` with a body that never ends; return its URL."""
        self._routes[path] = _Route(endless=True)
        return self.url(path)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await runner.setup()
        for address in self._addresses:
            site = web.TCPSite(runner, address, self.port, reuse_address=True)
            await site.start()
            if not self.port:
                self.port = runner.addresses[0][1]
        self._runner = runner

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        self.hosts.append(request.headers.get("Host", ""))
        route = self._routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="not found")
        if route.delay_s:
            await asyncio.sleep(route.delay_s)
        if route.location is not None:
            return web.Response(status=route.status, headers={"Location": route.location})
        if not route.endless:
            return web.Response(body=route.body, content_type="image/jpeg")
        response = web.StreamResponse(headers={"Content-Type": "image/jpeg"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        chunk = b"\xff" * 65536
        while True:
            await response.write(chunk)
