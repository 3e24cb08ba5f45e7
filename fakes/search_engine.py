"""A fake web search on loopback that answers as SearXNG and as Tavily do.

::

    async with FakeSearch() as search:
        search.results = [("Title", "https://example.org/a", "snippet")]
        ...  # [tools.web_search] provider = "searxng", base_url = search.base_url

``GET /search?q=…&format=json`` answers SearXNG's JSON (``{"query", "results": [{"title",
"url", "content", "engine"}]}``; without ``format=json`` a 403, as an instance without the
JSON format); ``POST /search`` with ``{"query", "max_results"}`` and a Bearer key answers
Tavily's (``{"query", "results": [{"title", "url", "content", "score"}]}``; a wrong key
gets 401 when ``api_key`` is set). Each query is recorded in ``queries`` (with the
headers in ``headers``); ``hang_s`` holds every answer back that long; ``status`` answers
every request with that HTTP status instead.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self

from aiohttp import web


class FakeSearch:
    """Serve ``/search`` on 127.0.0.1 as SearXNG (GET) and Tavily (POST)."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.results: list[tuple[str, str, str]] = [
            ("杭州天气预报", "https://weather.example.org/hangzhou", "杭州今天多云，18 到 24 度。"),
        ]
        self.queries: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.hang_s = 0.0
        self.status = 200
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._closing = asyncio.Event()

    @property
    def base_url(self) -> str:
        assert self._port is not None, "the server is not started"
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_post("/search", self._tavily)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _held(self) -> None:
        if self.hang_s:
            try:
                async with asyncio.timeout(self.hang_s):
                    await self._closing.wait()
            except TimeoutError:
                pass

    async def _searxng(self, request: web.Request) -> web.Response:
        self.queries.append(request.query.get("q", ""))
        self.headers.append(dict(request.headers))
        await self._held()
        if self.status != 200:
            return web.json_response({"error": "fake"}, status=self.status)
        if request.query.get("format") != "json":
            return web.Response(status=403, text="Forbidden")
        results = [
            {"title": title, "url": url, "content": content, "engine": "fake"}
            for title, url, content in self.results
        ]
        return web.json_response({"query": request.query.get("q", ""), "results": results})

    async def _tavily(self, request: web.Request) -> web.Response:
        body: Any = await request.json()
        self.queries.append(str(body.get("query", "")))
        self.headers.append(dict(request.headers))
        await self._held()
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            return web.json_response({"detail": {"error": "Unauthorized"}}, status=401)
        if self.status != 200:
            return web.json_response({"error": "fake"}, status=self.status)
        count = int(body.get("max_results", 5))
        results = [
            {"title": title, "url": url, "content": content, "score": 0.9}
            for title, url, content in self.results[:count]
        ]
        return web.json_response({"query": body.get("query"), "results": results})
