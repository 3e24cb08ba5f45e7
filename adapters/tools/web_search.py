"""The ``web_search(query)`` tool of ``[tools.web_search]``: SearXNG or Tavily.

SearXNG answers ``GET /search?q=…&format=json`` (only where its ``json`` format is turned
on; otherwise it answers 403); Tavily ``POST /search`` with its key as a Bearer token.
Either way the model reads each result as its title, URL and snippet, at most
``max_results`` of them. A failure is a ``ToolFailed`` with a short reason that names
neither the key nor the address's credentials.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from bot.config.tools import WebSearchConfig
from bot.errors import ToolFailed
from bot.models import ToolSpec
from bot.prompt import clip

NAME = "web_search"
QUERY_CHARS_MAX = 300
SNIPPET_CHARS_MAX = 500
TIMEOUT_S = 30.0  # the tool loop's timeout_s bounds a call first

WEB_SEARCH = ToolSpec(
    name=NAME,
    description=(
        "Search the web. Use it for facts that may have changed or that you do not know: "
        "news, prices, opening hours, the weather, a name you do not recognise."
    ),
    parameters=json.dumps(
        {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to search for"}},
            "required": ["query"],
        }
    ),
)


class WebSearch:
    """Search the web through SearXNG or Tavily over one HTTP client."""

    def __init__(
        self,
        config: WebSearchConfig,
        *,
        api_key: str | None = None,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._config = config
        self._api_key = api_key
        self._client = client or httpx2.AsyncClient(timeout=TIMEOUT_S)

    @property
    def where(self) -> str:
        """The provider and its address, for ``check`` and ``/tools``."""
        return f"{self._config.provider} at {self._config.endpoint}"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def search(self, arguments: dict[str, object]) -> str:
        """Run one search; return its results as lines of title, URL and snippet."""
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            msg = "query must be a non-empty string"
            raise ToolFailed(msg)
        query = clip(query.strip(), QUERY_CHARS_MAX)
        try:
            response = await self._request(query)
        except httpx2.HTTPError as exc:
            msg = f"the search engine cannot be reached ({type(exc).__name__})"
            raise ToolFailed(msg) from None
        if response.status_code != 200:
            msg = f"the search engine answered HTTP {response.status_code}"
            raise ToolFailed(msg)
        try:
            body = response.json()
        except ValueError:
            msg = "the search engine answered something that is not JSON"
            raise ToolFailed(msg) from None
        return render(results_of(body)[: self._config.max_results]) or "No results."

    async def _request(self, query: str) -> httpx2.Response:
        endpoint = self._config.endpoint
        if self._config.provider == "tavily":
            headers = {"Authorization": f"Bearer {self._api_key or ''}"}
            body = {"query": query, "max_results": self._config.max_results}
            return await self._client.post(f"{endpoint}/search", json=body, headers=headers)
        params = {"q": query, "format": "json"}
        return await self._client.get(f"{endpoint}/search", params=params)


def results_of(body: Any) -> list[tuple[str, str, str]]:
    """Return the (title, URL, snippet) of each result an answer holds, in order."""
    results = body.get("results") if isinstance(body, dict) else None
    found = []
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict) or not isinstance(result.get("url"), str):
            continue
        title, snippet = result.get("title"), result.get("content")
        found.append(
            (
                title if isinstance(title, str) else "",
                result["url"],
                snippet if isinstance(snippet, str) else "",
            )
        )
    return found


def render(results: list[tuple[str, str, str]]) -> str:
    """Write results as the model reads them: a numbered title, its URL, its snippet."""
    blocks = [
        f"{number}. {clip(title, 200)}\n{url}\n{clip(' '.join(snippet.split()), SNIPPET_CHARS_MAX)}"
        for number, (title, url, snippet) in enumerate(results, start=1)
    ]
    return "\n\n".join(blocks)
