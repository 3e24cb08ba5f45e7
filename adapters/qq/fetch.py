"""Fetch a URL that a QQ message carries (a picture's, a voice note's), safely.

The URL comes from the OneBot event, so whoever can send the bot a message chooses it.
Fetching it must not become a way into the bot's own network (SSRF): every hop is
resolved here and refused when any address it names is loopback, private, link-local,
multicast or reserved (unless ``qq.allow_private_image_hosts``, for a OneBot
implementation on the same host); the connection then goes to the address that was
checked, so a second DNS answer cannot swap it (the ``Host`` header and TLS server name
stay the URL's). Redirects are followed by hand, at most 3, each hop checked again; the
body is streamed with a size cap and the whole fetch has 10 s.

One :class:`SafeFetch` serves a running bot's pictures, stickers and voice notes alike
(``adapters/media.py`` opens it). httpx is the HTTP client PTB already brings.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from typing import Final

import httpx

from bot.errors import MediaUnavailable

MAX_REDIRECTS: Final = 3
TIMEOUT_S: Final = 10.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_public(address: IPAddress) -> bool:
    """Tell whether ``address`` is on the public internet (not loopback, private, …)."""
    return address.is_global and not address.is_multicast


class SafeFetch:
    """Download what a QQ message links to under the rules above.

    Its pool is httpx's default, 100 connections at once: far more than a batch's pictures
    take (4 at a time, ``bot/vision.py``), so a voice note being heard or a sticker being
    kept does not queue behind them.
    """

    def __init__(
        self,
        *,
        allow_private_hosts: bool = False,
        timeout_s: float = TIMEOUT_S,
        address_allowed: Callable[[IPAddress], bool] | None = None,
        allowed_by: str | None = "qq.allow_private_image_hosts = true",
    ) -> None:
        """Refuse non-public addresses unless ``allow_private_hosts``.

        ``address_allowed`` replaces that rule (tests use it to tell two loopback
        addresses apart); ``allowed_by`` names the setting that allows them in a refusal
        (``None``: none does).
        """
        self._allowed_by = allowed_by
        if address_allowed is None:
            address_allowed = (lambda _: True) if allow_private_hosts else is_public
        self._allowed = address_allowed
        self._timeout_s = timeout_s
        # No proxies from the environment: the checked address must be the one connected to.
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)

    async def fetch_bytes(
        self, url: str, *, max_bytes: int, what: str, unavailable: type[MediaUnavailable]
    ) -> bytes:
        """Download ``url`` (at most ``max_bytes``); raise ``unavailable`` naming ``what``."""
        fetch = _Fetch(what, unavailable, max_bytes)
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._download(url, fetch)
        except TimeoutError:
            msg = f"not fetched within {self._timeout_s:g} s"
            raise fetch.failed(msg) from None
        except httpx.HTTPError as error:
            msg = f"not fetched: {type(error).__name__}: {error}"
            raise fetch.failed(msg) from None

    async def _download(self, url: str, fetch: _Fetch) -> bytes:
        """Follow up to ``MAX_REDIRECTS`` redirects by hand, checking each hop."""
        target = fetch.parse(url)
        for _ in range(MAX_REDIRECTS + 1):
            address = await self._checked_address(target, fetch)
            request = self._client.build_request(
                "GET",
                target.copy_with(host=str(address)),
                # Raw bytes only: a compressed body could inflate past the cap in one chunk.
                headers={"Host": target.netloc.decode("ascii"), "Accept-Encoding": "identity"},
                extensions={"sni_hostname": target.host},
            )
            response = await self._client.send(request, stream=True)
            try:
                if not response.is_redirect:
                    return await fetch.body(response)
                location = response.headers.get("location", "")
                target = fetch.parse(str(target.join(location)))
            finally:
                await response.aclose()
        msg = f"not fetched: more than {MAX_REDIRECTS} redirects"
        raise fetch.failed(msg)

    async def _checked_address(self, target: httpx.URL, fetch: _Fetch) -> IPAddress:
        """Resolve the hop's host; refuse it if any of its addresses is not allowed."""
        port = target.port or (443 if target.scheme == "https" else 80)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                target.host, port, type=socket.SOCK_STREAM
            )
        except OSError as error:
            msg = f"host {target.host!r} does not resolve ({error})"
            raise fetch.failed(msg) from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        refused = [a for a in addresses if not self._allowed(a)]
        if refused or not addresses:
            hint = f" (set {self._allowed_by} to allow)" if self._allowed_by else ""
            msg = (
                f"host {target.host!r} is at {refused[0] if refused else 'nothing'}, "
                f"a private or local address{hint}"
            )
            raise fetch.failed(msg)
        return addresses[0]

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()


class _Fetch:
    """One download: what it fetches (for its errors), the error it raises, its size cap."""

    def __init__(self, what: str, unavailable: type[MediaUnavailable], max_bytes: int) -> None:
        self._what = what
        self._unavailable = unavailable
        self.max_bytes = max_bytes

    def failed(self, why: str) -> MediaUnavailable:
        return self._unavailable(f"{self._what} {why}")

    def parse(self, url: str) -> httpx.URL:
        """Return ``url`` if it is an http(s) URL with a host."""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in {"http", "https"} or not parsed.host:
            msg = f"URL {url[:80]!r} is not an http(s) URL"
            raise self.failed(msg)
        return parsed

    async def body(self, response: httpx.Response) -> bytes:
        """Read a 200 answer's body, refusing it once it passes the cap."""
        if response.status_code != httpx.codes.OK:
            msg = f"not fetched: HTTP {response.status_code}"
            raise self.failed(msg)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity":
            msg = f"came {encoding}-encoded, though only raw bytes were asked for"
            raise self.failed(msg)
        declared = response.headers.get("content-length", "")
        too_big = f"is larger than the {self.max_bytes} bytes allowed"
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self.failed(too_big)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > self.max_bytes:
                raise self.failed(too_big)
            chunks.append(chunk)
        return b"".join(chunks)
