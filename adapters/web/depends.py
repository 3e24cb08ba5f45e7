"""What every dashboard route depends on: the operations, proof of the token, a valid chat key.

Routes declare these as FastAPI dependencies, so none of them runs before the request
has shown the token (and, when it changes something with a cookie, the CSRF token), and
none looks a chat up before its key has passed the grammar of ``ChatKey.named``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi import Path as PathPart
from fastapi.templating import Jinja2Templates

from adapters.config_file import ConfigFile
from adapters.web.auth import Access, Gate
from bot.errors import ConfigError
from bot.models import PLATFORM_ID, ChatKey
from bot.ops import Ops

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
SQLITE_INT_MAX = 2**63 - 1  # a larger id would overflow SQLite's integer, not just miss
UNAUTHORIZED = "unauthorized"


def operations(request: Request) -> Ops:
    """Return the running bot's operations."""
    found: Ops = request.app.state.ops
    return found


def config_file(request: Request) -> ConfigFile:
    """Return the config file the bot runs from; 404 when it runs from none (a test's)."""
    found: object = request.app.state.config_file
    if not isinstance(found, ConfigFile):
        raise HTTPException(404, "this bot runs from no config file")
    return found


def gate(request: Request) -> Gate:
    """Return the app's gate."""
    found: Gate = request.app.state.gate
    return found


async def access(request: Request, checker: Annotated[Gate, Depends(gate)]) -> Access:
    """Let a request through only with the token (and the CSRF token where it must)."""
    granted = checker.access(request)
    if granted is None:
        raise HTTPException(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
    if not await checker.csrf_ok(request, granted):
        raise HTTPException(403, "the CSRF token is missing or wrong; reload the page")
    return granted


def chat_key(chat: str) -> ChatKey:
    """Parse the ``{chat}`` of a path; 400 naming the expected form if it is no chat key."""
    try:
        return ChatKey.from_text(chat)
    except ConfigError as exc:
        raise HTTPException(400, str(exc)) from None


async def known_chat(
    chat: Annotated[ChatKey, Depends(chat_key)], ops: Annotated[Ops, Depends(operations)]
) -> ChatKey:
    """Return the chat of the path; 404 if pacebot has never heard of it."""
    if not await ops.status.knows(chat):
        raise HTTPException(404, f"no chat {chat} is known")
    return chat


Operations = Annotated[Ops, Depends(operations)]
EditedConfig = Annotated[ConfigFile, Depends(config_file)]
AnyChat = Annotated[ChatKey, Depends(chat_key)]
FactId = Annotated[int, PathPart(ge=1, le=SQLITE_INT_MAX)]  # as /facts shows it
LaterId = Annotated[int, PathPart(ge=1, le=SQLITE_INT_MAX)]  # as /later shows it
UserId = Annotated[str, PathPart(pattern=f"^{PLATFORM_ID}$")]  # a person's platform id
StickerLabel = Annotated[str, PathPart(pattern=r"^[sS]?[0-9]{1,18}$")]  # as /stickers shows it
Granted = Annotated[Access, Depends(access)]
KnownChat = Annotated[ChatKey, Depends(known_chat)]
