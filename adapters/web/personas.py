"""The personas page: the base persona and each profile's, edited in a text area, and a
preview of the system prompt a chosen chat would get now.

A persona written in ``config.toml`` is saved through the config file's change path
(``bot.persona``, or the profile's ``persona`` in its own ``[[profiles]]`` table, found by
its name; comments and order kept, the old file backed up, reloaded live, logged with
``web`` as who): the next answer starts with it. A persona read from a file
(``persona_file``) is shown with the file's path and edited there. A profile's text area
left empty takes the base persona. The preview is :meth:`bot.ops.status.StatusOps.prompt_view`,
the prompt ``/prompt`` and ``GET /api/chats/{chat}/prompt`` show (persona, the chat's
summaries, its people), with its token count and its profile; the page's script redraws
it when another chat is picked, and the form does the same without script.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response

from adapters.config_file import ConfigFile, ConfigRefused, Persona, RunningConfig
from adapters.web.auth import Access
from adapters.web.dashboard import WHO
from adapters.web.depends import EditedConfig, Granted, Operations, access
from adapters.web.pages import back_to, render, words_of
from bot.errors import ConfigError
from bot.models import ChatKey
from bot.ops import Ops

RECENT_CHATS = 50  # the chats the preview offers to pick from, the most recently active first
CHAT_KEY_CHARS_MAX = 200

router = APIRouter(dependencies=[Depends(access)])


def personas_url(chat: str) -> str:
    """Return the personas page's path, previewing ``chat`` (if one is named)."""
    return "/personas" + (f"?{urlencode({'chat': chat})}" if chat else "")


async def show(
    request: Request,
    ops: Ops,
    granted: Access,
    *,
    chosen: str,
    typed: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """Render the page, previewing ``chosen`` (else the most recently active chat); after a
    refused Save, with the text as typed and why beside its persona."""
    shown: RunningConfig | None = request.app.state.config_file
    recent = await ops.status.chats(search="", limit=RECENT_CHATS)
    chosen = chosen.strip() or (str(recent[0].chat) if recent else "")
    preview, preview_error = None, None
    if chosen:
        try:
            preview = await ops.status.prompt_view(ChatKey.from_text(chosen))
        except ConfigError as exc:
            preview_error = str(exc)
    return render(
        request,
        "personas.html",
        granted,
        status_code,
        personas=[] if shown is None else shown.personas(),
        editable=isinstance(shown, ConfigFile),
        typed=typed or {},
        errors=errors or {},
        recent=recent,
        chosen=chosen,
        listed=any(str(chat.chat) == chosen for chat in recent),
        preview=preview,
        preview_error=preview_error,
    )


@router.get("/personas")
async def personas_page(
    request: Request,
    ops: Operations,
    granted: Granted,
    chat: Annotated[str, Query(max_length=CHAT_KEY_CHARS_MAX)] = "",
    typed: Annotated[str, Query(max_length=CHAT_KEY_CHARS_MAX)] = "",
) -> HTMLResponse:
    """Every persona, and the prompt of the chat picked (``chat``) or typed (``typed``)."""
    return await show(request, ops, granted, chosen=typed.strip() or chat)


@router.post("/personas")
async def save_persona(
    request: Request,
    ops: Operations,
    granted: Granted,
    edited: EditedConfig,
    persona: Annotated[str, Form()] = "",
    profile: Annotated[str, Form()] = "",
    chat: Annotated[str, Form(max_length=CHAT_KEY_CHARS_MAX)] = "",
) -> Response:
    """Save the base persona (``profile`` empty) or a profile's, then show the page again
    saying so; on a refusal, the text as typed with the reason beside it."""
    t = words_of(request)
    text = persona.replace("\r\n", "\n").strip()
    found = next((p for p in edited.personas() if (p.profile or "") == profile), None)
    if found is None:
        raise HTTPException(404, f"no profile is named {profile!r}")
    if found.file is not None:
        error = t("persona_in_file", path=found.file)
    elif not text and found.profile is None:
        error = t("persona_blank")
    elif text == (found.text if found.own else ""):
        return back_to(request, granted, personas_url(chat), t("persona_unchanged"))
    else:
        try:
            _write(edited, found, text)
        except (ConfigRefused, ConfigError) as exc:
            error = str(exc)
        else:
            who = found.profile or t("persona_base")
            notice = t("persona_saved", name=who, who=WHO)
            return back_to(request, granted, personas_url(chat), notice)
    return await show(
        request,
        ops,
        granted,
        chosen=chat,
        typed={profile: text},
        errors={profile: error},
        status_code=400,
    )


def _write(edited: ConfigFile, found: Persona, text: str) -> None:
    """Write a persona to the file: ``bot.persona``, or the profile's own (an empty one
    is taken out: the profile runs with the base persona)."""
    if found.profile is None:
        edited.change({"bot.persona": text}, [], by=WHO)
    elif text:
        edited.change_profile(found.profile, {"persona": text}, [], by=WHO)
    else:
        edited.change_profile(found.profile, {}, ["persona"], by=WHO)
