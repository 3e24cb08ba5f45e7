"""Build the dashboard's ASGI app: routes, static files, error answers, guards.

Errors under ``/api/`` are JSON ``{"error": "..."}``; pages answer with a short page.
A 401 says that and nothing else, whoever asks, except a browser opening a page: it is
sent to the login form, and back to that page once logged in.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from adapters.config_file import RunningConfig
from adapters.web import api, pages, personas, settings
from adapters.web.auth import Gate, Sessions
from adapters.web.depends import TEMPLATES
from adapters.web.guards import BodyLimit, SecurityHeaders
from adapters.web.pages import login_url
from adapters.web.server import serving
from adapters.web.words import Words
from bot.config.model import Config
from bot.log import LOG_FILE
from bot.ops import Ops
from bot.texts import Language

STATIC = Path(__file__).parent / "static"


@contextlib.asynccontextmanager
async def serving_dashboard(
    config: Config,
    token: str,
    ops: Ops,
    *,
    config_file: RunningConfig | None = None,
    plugins: Callable[[], Sequence[object]] = tuple,
) -> AsyncIterator[str]:
    """Serve the dashboard of this running bot at ``[web] host:port``; yield its URL.
    Its settings page shows ``config_file``, and changes it when it is a
    :class:`~adapters.config_file.ConfigFile`."""
    app = create_app(
        ops,
        token=token,
        zone=config.bot.zone,
        log_file=config.log_dir / LOG_FILE,
        config_file=config_file,
        plugins=plugins,
        language=config.bot.language,
    )
    async with serving(app, host=config.web.host, port=config.web.port) as url:
        yield url


def create_app(
    ops: Ops,
    *,
    token: str,
    zone: ZoneInfo,
    log_file: Path,
    config_file: RunningConfig | None = None,
    plugins: Callable[[], Sequence[object]] = tuple,
    language: Language = "en",
) -> FastAPI:
    """Return the dashboard app over ``ops``, open to the holder of ``token`` only, in
    ``language``; its overview lists what ``plugins`` returns (the nonebot plugins hosted,
    each with ``module``, ``name``, ``loaded``, ``problem`` and ``matchers``)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.ops = ops
    app.state.config_file = config_file
    app.state.plugins = plugins
    app.state.words = Words(language)
    app.state.log_file = log_file
    app.state.gate = Gate(token, Sessions())
    app.state.zone = zone
    app.include_router(api.router)
    app.include_router(pages.public)
    app.include_router(pages.router)
    app.include_router(settings.router)
    app.include_router(personas.router)
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
    words: Words = request.app.state.words
    return TEMPLATES.TemplateResponse(
        request,
        "error.html",
        {"status": status, "message": message, "t": words, "html_lang": words.html_lang},
        status_code=status,
        headers=headers,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 401 and _opens_a_page(request):
        url = request.url
        return RedirectResponse(login_url(url.path + (f"?{url.query}" if url.query else "")), 303)
    return _error(request, exc.status_code, str(exc.detail), exc.headers)


def _opens_a_page(request: Request) -> bool:
    """Tell whether a browser asked for a page: not the API, not a change, and no token
    in the URL (that stays a bare 401, and never travels on to the login form)."""
    checker: Gate = request.app.state.gate
    return (
        request.method in ("GET", "HEAD")
        and not request.url.path.startswith("/api/")
        and not checker.leaks_token(request)
    )


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
    )
    return _error(request, 400, problems, None)
