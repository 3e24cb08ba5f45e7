"""Serve an ASGI app inside pacebot's own event loop: QQ's OneBot socket and the dashboard.

Each gets its own :class:`Server` on a socket bound beforehand, so a taken port fails at
once with the address named, and SIGINT/SIGTERM stay pacebot's: the servers install no
signal handlers, and pacebot stops them when it stops. Both may run in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from loguru import logger

from bot.errors import ConfigError

STOP_WAIT_S = 5.0  # how long a stopping server may finish its connections


class Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that runs it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind(host: str, port: int, *, what: str, keys: str) -> socket.socket:
    """Open the listening socket; raise ``ConfigError`` naming the address if it fails.

    ``what`` listens there (e.g. "for OneBot"), ``keys`` name the config keys to check.
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family)
    except OSError as error:
        msg = f"cannot listen {what} on {host}:{port} ({error.strerror or error}); check {keys}"
        raise ConfigError(msg) from None


async def serve(server: Server, sock: socket.socket, *, failure: str) -> None:
    """Serve on ``sock`` until stopped; log ``failure`` if uvicorn cannot start; close it."""
    try:
        await server.serve(sockets=[sock])
    except SystemExit:  # uvicorn's answer to a failed start-up; the process goes on
        logger.error(failure)
    finally:
        sock.close()


async def stop(server: Server, task: asyncio.Task[None], *, name: str) -> None:
    """Ask ``server`` to finish its connections and stop; cancel it if it takes too long."""
    server.should_exit = True
    done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_S)
    if not done:
        logger.warning("{} did not stop in time; cancelling it", name)
        server.force_exit = True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
