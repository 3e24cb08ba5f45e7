"""The settings page: every key of ``config.toml`` by table, changed where it is shown.

Each key shows its description, its default, what the file gives it and whether it is
read only at start-up (:mod:`adapters.web.config_form`). Save posts the form with the
session's CSRF token; only the keys whose values changed go through the config file's
change path (:class:`adapters.config_file.ConfigFile`: checked as ``pacebot check``
checks, the old file backed up, written with its comments kept, reloaded live, logged
with ``web`` as who). A refusal shows the page again with the error beside its key, the
values as typed, and nothing changed. A bot started from no config file shows its
settings read only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from adapters.config_file import ConfigFile, ConfigRefused, RunningConfig
from adapters.web.auth import Access
from adapters.web.config_form import READ_ONLY_KINDS, Posted, read_form, row, tables
from adapters.web.dashboard import WHO
from adapters.web.depends import EditedConfig, Granted, access
from adapters.web.pages import back_to, render, words_of
from bot.config.keys import config_keys
from bot.config.settings import Reloaded
from bot.errors import ConfigError

router = APIRouter(dependencies=[Depends(access)])


def show(
    request: Request,
    granted: Access,
    *,
    posted: Posted | None = None,
    problem: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """Render the settings page; after a refused Save, with what was typed and why."""
    shown: RunningConfig | None = request.app.state.config_file
    view = None if shown is None else shown.view()
    posted = posted or Posted()
    return render(
        request,
        "settings.html",
        granted,
        status_code,
        tables=[] if view is None else tables(view, typed=posted.typed, errors=posted.errors),
        editable=isinstance(shown, ConfigFile) and view is not None and view.in_file is not None,
        problem=problem or (view and view.problem),
        path=shown.path if isinstance(shown, ConfigFile) else None,
        read_only_kinds=READ_ONLY_KINDS,
    )


@router.get("/settings")
async def settings_page(request: Request, granted: Granted) -> HTMLResponse:
    """Every key by table: its description, default, value and a typed input."""
    return show(request, granted)


@router.post("/settings")
async def save(request: Request, granted: Granted, edited: EditedConfig) -> Response:
    """Write the keys whose values changed, apply them live and say what applied and what
    needs a restart; on a refusal show the form again with the error beside its key."""
    t = words_of(request)
    form = await request.form()
    sent = {key: [v for v in form.getlist(key) if isinstance(v, str)] for key in form}
    posted = read_form(sent, edited.view(), t)
    if posted.errors:
        return show(request, granted, posted=posted, status_code=400)
    if not posted.changed:
        return back_to(request, granted, "/settings", t("settings_unchanged"))
    return _change(request, granted, edited, posted)


@router.post("/settings/reset")
async def reset(
    request: Request, granted: Granted, edited: EditedConfig, key: Annotated[str, Form()]
) -> Response:
    """Take a key out of the file: it runs with its default."""
    found = next((each for each in config_keys() if each.key == key), None)
    if found is None or row(found, edited.view()).kind in READ_ONLY_KINDS:
        raise HTTPException(400, f"{key}: no key of config.toml the settings page may reset")
    return _change(request, granted, edited, Posted(to_unset=[key]))


def _change(request: Request, granted: Access, edited: ConfigFile, posted: Posted) -> Response:
    """Make the change; go back to the page saying what it did, or show why not."""
    try:
        reloaded = edited.change(posted.to_set, posted.to_unset, by=WHO)
    except (ConfigRefused, ConfigError) as exc:
        key = exc.key if isinstance(exc, ConfigRefused) else None
        if key is not None and key in [*posted.typed, *posted.to_unset]:
            posted.errors[key] = str(exc)
            return show(request, granted, posted=posted, status_code=400)
        return show(request, granted, posted=posted, problem=str(exc), status_code=400)
    return back_to(request, granted, "/settings", said(request, posted.changed, reloaded))


def said(request: Request, changed: Sequence[str], reloaded: Reloaded) -> str:
    """Say what a Save changed, what applies now and what waits for a restart."""
    t = words_of(request)
    parts = [t("settings_saved", keys=", ".join(changed), who=WHO)]
    if reloaded.applied:
        parts.append(t("settings_applied", keys=", ".join(reloaded.applied)))
    if reloaded.restart_needed:
        parts.append(t("settings_restart", keys=", ".join(reloaded.restart_needed)))
    return " ".join(parts)
