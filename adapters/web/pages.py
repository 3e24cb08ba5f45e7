"""The dashboard's pages, rendered on the server: overview, chats, one chat, log tail, login.

The pages need no front-end build: Jinja2 templates, one stylesheet and one small script
(``static/dashboard.js``) that keeps the overview live by polling ``/api/status``. Forms
that change something post back here with the session's CSRF token and are redirected
(post/redirect/get), so a reload never pops twice.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from adapters.web import chart
from adapters.web.auth import CSRF_FIELD, SESSION_COOKIE, SESSION_TTL_S, Access, Gate
from adapters.web.dashboard import WHO, chat_url, log_tail, thumbnail_url
from adapters.web.depends import (
    TEMPLATES,
    FactId,
    Granted,
    KnownChat,
    LaterId,
    Operations,
    StickerLabel,
    UserId,
    access,
    gate,
)
from bot.budget import format_cost, is_priced
from bot.ops.initiative import Cancelled
from bot.ops.status import OVERVIEW_CHATS

CHART_DAYS = 7  # the overview's chart of spending
CHAT_MESSAGES = 50  # the newest messages one chat's page shows
CHAT_TRACES = 10  # the newest batch traces one chat's page shows
CHAT_LIST_MAX = 200  # the chats the chat list shows; a search narrows them
LOG_LINES_DEFAULT = 200
LOG_LINES_MAX = 2000
NOTICES = {
    "popped": f"Popped the newest summary (audited as {WHO}). Restore undoes it.",
    "restored": "Restored the last popped summary.",
    "nothing-to-pop": "Nothing to pop: only the initial persona is left.",
    "nothing-to-restore": "Nothing to restore: nothing was popped, or a newer summary came since.",
    "forgot-fact": f"Forgot the fact (audited as {WHO}). It no longer reaches the prompt.",
    "forgot-person": f"Forgot every fact about that person here (audited as {WHO}).",
    "forgot-person-none": "Nothing was remembered about that person here; nothing they wrote "
    "up to today will be learned.",
    "nothing-to-forget": "Nothing to forget: it was forgotten already.",
    "unknown-person": "That person never wrote here: nothing was done.",
    "banned-sticker": f"Banned the sticker (audited as {WHO}): it is never offered, sent or "
    "collected again.",
    "nothing-to-ban": "Nothing to ban: that sticker is banned already or left the collection.",
    "cancelled-later": f"Cancelled it (audited as {WHO}): it will not run.",
    "nothing-to-cancel": "Nothing to cancel: it ran already, or was cancelled.",
}

public = APIRouter()
router = APIRouter(dependencies=[Depends(access)])


def local_target(target: str) -> str | None:
    """Return ``target`` if it is a path of this dashboard to go back to after logging in.

    Only a local path will do (``/chats?q=x``): never another site (``//evil.example``,
    ``https://…``, ``/\\evil.example``), and never the login form itself.
    """
    parts = urlsplit(target)
    if (
        not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
        or any(ord(char) < 0x20 or ord(char) == 0x7F for char in target)
        or parts.scheme
        or parts.netloc
        or parts.path == "/login"
    ):
        return None
    return target


def login_url(target: str) -> str:
    """Return the login form's path, sending the browser back to ``target`` (if local)."""
    local = local_target(target)
    return "/login" if local is None or local == "/" else "/login?" + urlencode({"next": local})


def render(
    request: Request, name: str, granted: Access | None, status_code: int = 200, **context: Any
) -> HTMLResponse:
    """Render template ``name`` with what every page needs."""
    zone: ZoneInfo = request.app.state.zone

    def local(moment: datetime | None) -> str:
        return "—" if moment is None else moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")

    session = None if granted is None else granted.session
    return TEMPLATES.TemplateResponse(
        request,
        name,
        {
            **context,
            "csrf": "" if session is None else session.csrf,
            "csrf_field": CSRF_FIELD,
            "logged_in": session is not None,
            "local": local,
            "chat_url": chat_url,
            "thumbnail_url": thumbnail_url,
            "zone": zone.key,
        },
        status_code=status_code,
    )


@public.get("/login")
async def login_form(
    request: Request, back_to: Annotated[str, Query(alias="next")] = ""
) -> HTMLResponse:
    """The login form; ``next`` is the page to go back to once logged in."""
    return render(request, "login.html", None, next=local_target(back_to) or "")


@public.post("/login")
async def login(
    request: Request,
    checker: Annotated[Gate, Depends(gate)],
    token: Annotated[str, Form()] = "",
    back_to: Annotated[str, Form(alias="next")] = "",
) -> Response:
    """Open a session for the token's holder and go back to ``next`` (a local path only);
    401 and the form again for anyone else."""
    back = local_target(back_to)
    if not checker.is_token(token):
        return render(request, "login.html", None, status_code=401, failed=True, next=back or "")
    session = checker.sessions.open()
    response = RedirectResponse(back or "/", status_code=303)
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    response.set_cookie(
        SESSION_COOKIE,
        session.id,
        max_age=int(SESSION_TTL_S),
        path="/",
        httponly=True,
        samesite="strict",
        secure=secure,
    )
    return response


@router.post("/logout")
async def logout(checker: Annotated[Gate, Depends(gate)], granted: Granted) -> Response:
    """End the session and go back to the login form."""
    if granted.session is not None:
        checker.sessions.close(granted.session.id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/")
async def overview(request: Request, ops: Operations, granted: Granted) -> HTMLResponse:
    """Platforms, what waits, LLM errors, today's spending, and the recent chats' phases,
    kept live by script; the last days' spending as a chart."""
    status = await ops.status.overview()
    budget = status.today.budget
    by_cost = is_priced(budget)
    days = await ops.cost.daily(days=CHART_DAYS)
    return render(
        request,
        "overview.html",
        granted,
        status=status,
        shown=OVERVIEW_CHATS,
        bars=chart.bars(days, currency=budget.currency, by_cost=by_cost),
        chart=chart,
        by_cost=by_cost,
        format_cost=format_cost,
    )


@router.get("/chats")
async def chats(request: Request, ops: Operations, granted: Granted, q: str = "") -> HTMLResponse:
    """The chats, the most recently active first, searchable by key or sender name."""
    found = await ops.status.chats(search=q.strip(), limit=CHAT_LIST_MAX)
    return render(request, "chats.html", granted, chats=found, query=q)


@router.get("/chats/{chat}")
async def chat_page(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat, notice: str = ""
) -> HTMLResponse:
    """One chat: its phase, prompt stack, people's facts, stickers, what it has pending
    (later items, openers, quiet periods), latest traces and messages."""
    return render(
        request,
        "chat.html",
        granted,
        chat=chat,
        chat_name=await ops.status.name(chat),
        phase=ops.status.phase(chat),
        messages=await ops.status.messages(chat, limit=CHAT_MESSAGES),
        stack=await ops.memory.prompt_stack(chat),
        people=await ops.memory.people(chat),
        stickers_on=ops.stickers.enabled,
        stickers=await ops.stickers.collection(chat),
        traces=await ops.traces.recent(chat, count=CHAT_TRACES),
        initiative=await ops.initiative.view(chat),
        notice=NOTICES.get(notice),
        format_cost=format_cost,
    )


@router.post("/chats/{chat}/pop")
async def pop(ops: Operations, chat: KnownChat) -> Response:
    """Pop the newest summary, then show the chat again."""
    notice = "nothing-to-pop" if await ops.memory.pop(chat, by=WHO) is None else "popped"
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.post("/chats/{chat}/restore")
async def restore(ops: Operations, chat: KnownChat) -> Response:
    """Undo the last pop, then show the chat again."""
    notice = "nothing-to-restore" if await ops.memory.restore(chat, by=WHO) is None else "restored"
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.post("/chats/{chat}/facts/{fact_id}/forget")
async def forget_fact(ops: Operations, chat: KnownChat, fact_id: FactId) -> Response:
    """Forget one fact, then show the chat again."""
    forgotten = await ops.memory.forget_fact(chat, fact_id, by=WHO)
    notice = "nothing-to-forget" if forgotten is None else "forgot-fact"
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.post("/chats/{chat}/people/{user_id}/forget")
async def forget_person(ops: Operations, chat: KnownChat, user_id: UserId) -> Response:
    """Forget a person here as their ``/forgetme`` would, then show the chat again."""
    count = await ops.memory.forget_person(chat, user_id, by=WHO)
    notice = {None: "unknown-person", 0: "forgot-person-none"}.get(count, "forgot-person")
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.get("/chats/{chat}/stickers/{sticker}/thumbnail")
async def sticker_thumbnail(ops: Operations, chat: KnownChat, sticker: StickerLabel) -> Response:
    """A sticker of the chat's collection as a small PNG, fetched by pacebot itself: the
    browser never sees a platform's URL (a Telegram file URL holds the bot token)."""
    png = await ops.stickers.thumbnail(chat, sticker)
    if png is None:
        raise HTTPException(404, f"sticker {sticker} of {chat} cannot be drawn")
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


@router.post("/chats/{chat}/stickers/{sticker}/ban")
async def ban_sticker(ops: Operations, chat: KnownChat, sticker: StickerLabel) -> Response:
    """Ban a sticker of the chat's collection, then show the chat again."""
    banned = await ops.stickers.ban(chat, sticker, by=WHO)
    notice = "nothing-to-ban" if banned is None else "banned-sticker"
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.post("/chats/{chat}/later/{item_id}/cancel")
async def cancel_later(ops: Operations, chat: KnownChat, item_id: LaterId) -> Response:
    """Cancel a pending later item, then show the chat again."""
    outcome, _ = await ops.initiative.cancel(chat, item_id, by=WHO)
    notice = "cancelled-later" if outcome is Cancelled.DONE else "nothing-to-cancel"
    return RedirectResponse(f"{chat_url(chat)}?notice={notice}", status_code=303)


@router.get("/logs")
async def logs(
    request: Request,
    granted: Granted,
    lines: Annotated[int, Query(ge=1, le=LOG_LINES_MAX)] = LOG_LINES_DEFAULT,
) -> HTMLResponse:
    """The end of the log file (secrets are scrubbed before a line is written)."""
    path: Path = request.app.state.log_file
    shown = await log_tail(path, lines=lines)
    return render(request, "logs.html", granted, lines=shown, count=lines, path=path)
