"""``pacebot check --online`` for ``[tools]``: connect to each MCP server and list its
tools (those offered marked), and run one web search."""

from __future__ import annotations

import asyncio

from adapters.tools.mcp import CONNECT_TIMEOUT_S, McpServerLink
from adapters.tools.web_search import WebSearch
from bot.config.model import Config
from bot.errors import ToolFailed
from bot.secrets import Secrets

PROBE_QUERY = "pacebot"


async def check_tools(config: Config, secrets: Secrets) -> list[tuple[bool, str]]:
    """Return one finding per MCP server and one for the web search: (ok, line)."""
    values = secrets.tools_env
    links = [
        McpServerLink(
            server,
            env={**server.env, **{name: values[name] for name in server.pass_env}},
            headers={header: values[env] for header, env in server.headers_env.items()},
        )
        for server in config.tools.mcp
    ]
    findings = list(await asyncio.gather(*(_probe(link) for link in links)))
    search = config.tools.web_search
    if search.enabled:
        web = WebSearch(search, api_key=values.get(search.key_env))
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                found = await web.search({"query": PROBE_QUERY})
        except (ToolFailed, TimeoutError) as exc:
            findings.append((False, f"web search {web.where}: {exc or 'no answer'}"))
        else:
            results = found.count("\n\n") + 1 if found != "No results." else 0
            findings.append((True, f"web search {web.where}: answered ({results} result(s))"))
        finally:
            await web.aclose()
    return findings


async def _probe(link: McpServerLink) -> tuple[bool, str]:
    link.start()
    try:
        await link.wait_tried(within_s=CONNECT_TIMEOUT_S + 1)
    finally:
        await link.stop()
    where = f"MCP server {link.name}"
    if not link.listed and link.detail:
        return False, f"{where}: {link.detail}"
    names = ", ".join(f"{name} (offered)" if link.allows(name) else name for name in link.listed)
    return True, f"{where}: connected; tools: {names or 'none'}"
