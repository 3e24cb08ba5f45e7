"""ASGI middleware around the whole dashboard: bounded request bodies, security headers.

Both are plain ASGI, so they see every response, error pages included, and a body that
is too large is refused before the app reads it: at once when ``Content-Length`` says so,
else as soon as the chunks received pass the limit.
"""

from __future__ import annotations

import json

from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

BODY_BYTES_MAX = 64 * 1024  # the dashboard's forms and API calls are tiny
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS = {
    "content-security-policy": _CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def _too_large(max_bytes: int) -> str:
    return f"request body over {max_bytes} bytes"


class _TooLarge(HTTPException):
    """The body grew past the limit while it was being received.

    An ``HTTPException``, so that FastAPI, reading a form, passes it on as it is rather
    than calling it a parse error; the app's error handler answers it.
    """

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, _too_large(max_bytes))


async def _refuse_too_large(send: Send, max_bytes: int) -> None:
    body = json.dumps({"error": _too_large(max_bytes)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Answer 413 to a request whose body is over ``max_bytes``, without reading all of it."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = BODY_BYTES_MAX) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            await _refuse_too_large(send, self.max_bytes)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except _TooLarge:
            if not started:
                await _refuse_too_large(send, self.max_bytes)


class SecurityHeaders:
    """Add a strict CSP, no framing and no caching (the pages hold private chats)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_static = str(scope.get("path", "")).startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if not is_static:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)
