"""Build the dashboard's ASGI app: routes, static files, error answers, guards.

Errors under ``/api/`` are JSON ``{"error": "..."}``; pages answer with a short page.
A 401 says that and nothing else, whoever asks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from adapters.web import api, pages
from adapters.web.auth import Gate, Sessions
from adapters.web.dashboard import Dashboard, DashboardStore
from adapters.web.depends import TEMPLATES
from adapters.web.guards import BodyLimit, SecurityHeaders
from adapters.web.server import serving
from bot.config import Config
from bot.log import LOG_FILE
from bot.memory.stack import Memory
from bot.pipeline import Pipeline
from bot.ports import Platform

STATIC = Path(__file__).parent / "static"


@contextlib.asynccontextmanager
async def serving_dashboard(
    config: Config,
    token: str,
    pipeline: Pipeline,
    store: DashboardStore,
    memory: Memory,
    platforms: Mapping[str, Platform],
) -> AsyncIterator[str]:
    """Serve the dashboard of this running bot at ``[web] host:port``; yield its URL."""
    board = Dashboard(
        pipeline=pipeline,
        store=store,
        memory=memory,
        platforms=platforms,
        log_file=config.log_dir / LOG_FILE,
        now=lambda: datetime.now(UTC),
    )
    app = create_app(board, token=token, zone=config.bot.zone)
    async with serving(app, host=config.web.host, port=config.web.port) as url:
        yield url


def create_app(board: Dashboard, *, token: str, zone: ZoneInfo) -> FastAPI:
    """Return the dashboard app for ``board``, open to the holder of ``token`` only."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.dashboard = board
    app.state.gate = Gate(token, Sessions())
    app.state.zone = zone
    app.include_router(api.router)
    app.include_router(pages.public)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit)  # added last, so it runs first
    return app


def _error(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None
) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    return TEMPLATES.TemplateResponse(
        request,
        "error.html",
        {"status": status, "message": message},
        status_code=status,
        headers=headers,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(request, exc.status_code, str(exc.detail), exc.headers)


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
    )
    return _error(request, 400, problems, None)
