"""Run the dashboard on its own uvicorn server inside ``pacebot run``'s event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn
from fastapi import FastAPI
from loguru import logger

from adapters import asgi
from bot.errors import ConfigError
from bot.tasks import start_task

START_WAIT_S = 10.0  # uvicorn starts in milliseconds; this only bounds a wedged start


@contextlib.asynccontextmanager
async def serving(app: FastAPI, *, host: str, port: int) -> AsyncIterator[str]:
    """Serve ``app`` on ``host:port`` until the block ends; yield the dashboard's URL.

    Raise ``ConfigError`` if the address cannot be bound or the server does not start.
    """
    sock = asgi.bind(host, port, what="for the dashboard", keys="web.host and web.port")
    bound_host, bound_port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        log_config=None,  # uvicorn's records go through pacebot's logging
        access_log=False,  # the live overview polls every 1.5 s: that is not news
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    server = asgi.Server(config)
    task = start_task(
        asgi.serve(server, sock, failure="the dashboard server failed to start"),
        name="web:server",
        failure="the dashboard server crashed",
    )
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT_S):
                while not server.started and not task.done():  # noqa: ASYNC110 - a plain flag
                    await asyncio.sleep(0.01)
        if not server.started:
            msg = f"the dashboard did not start on {host}:{port}"
            raise ConfigError(msg)
        host_part = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{host_part}:{bound_port}"
        logger.info("dashboard running at {}", url)
        yield url
    finally:
        await asgi.stop(server, task, name="the dashboard server")
        logger.info("dashboard stopped")
