"""The dashboard's pages, rendered on the server: overview, chats, one chat, log tail, login.

The pages need no front-end build: Jinja2 templates, one stylesheet and one small script
(``static/dashboard.js``) that keeps the overview live by polling ``/api/status`` and
asks before a pop or a forget. Every page speaks ``bot.language`` (:mod:`words`); a
trace is shown line by line as ``/trace`` shows it (:func:`bot.trace_lines.trace_lines`).
Forms that change something post back here with the session's CSRF token and are
redirected (post/redirect/get), so a reload never pops twice; the page they go back to
says what was done, once (the session keeps it).
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
from adapters.web.words import Words
from bot.budget import format_cost, is_priced
from bot.models import ChatKey
from bot.ops.initiative import Cancelled
from bot.ops.status import OVERVIEW_CHATS
from bot.texts import Texts
from bot.trace_lines import trace_lines

CHART_DAYS = 7  # the overview's chart of spending
CHAT_MESSAGES = 50  # the newest messages one chat's page shows
CHAT_TRACES = 10  # the newest batch traces one chat's page shows
CHAT_LIST_MAX = 200  # the chats the chat list shows; a search narrows them
LOG_LINES_DEFAULT = 200
LOG_LINES_MAX = 2000
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")
"""The levels a log line may carry, least severe first (loguru's, as ``bot/log.py`` writes)."""

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
    checker: Gate = request.app.state.gate
    words: Words = request.app.state.words
    return TEMPLATES.TemplateResponse(
        request,
        name,
        {
            **context,
            "csrf": "" if session is None else session.csrf,
            "csrf_field": CSRF_FIELD,
            "logged_in": session is not None,
            "notice": None if session is None else checker.sessions.told(session),
            "local": local,
            "chat_url": chat_url,
            "thumbnail_url": thumbnail_url,
            "zone": zone.key,
            "t": words,
            "html_lang": words.html_lang,
            "script_words": words.for_script(),
            "cost_words": lambda amount, currency, priced: (
                format_cost(amount, currency) if priced else words("no_prices")
            ),
        },
        status_code=status_code,
    )


def back_to(request: Request, granted: Access, path: str, notice: str) -> Response:
    """Go back to the page at ``path``, which says (once) what was done there."""
    if granted.session is not None:
        checker: Gate = request.app.state.gate
        checker.sessions.tell(granted.session, notice)
    return RedirectResponse(path, status_code=303)


def back_to_chat(request: Request, granted: Access, chat: ChatKey, notice: str) -> Response:
    """Go back to the chat's page, which says (once) what was done there."""
    return back_to(request, granted, chat_url(chat), notice)


def words_of(request: Request) -> Words:
    """Return the dashboard's words, in ``bot.language``."""
    words: Words = request.app.state.words
    return words


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
        plugins=request.app.state.plugins(),
    )


@router.get("/chats")
async def chats(request: Request, ops: Operations, granted: Granted, q: str = "") -> HTMLResponse:
    """The chats, the most recently active first, searchable by key or sender name."""
    found = await ops.status.chats(search=q.strip(), limit=CHAT_LIST_MAX)
    return render(request, "chats.html", granted, chats=found, query=q)


@router.get("/chats/{chat}")
async def chat_page(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat
) -> HTMLResponse:
    """One chat: what an operator looks at first (its recent messages, how it is answered,
    this hour's unaddressed calls), then its prompt stack, people's facts, stickers, what
    it has pending (later items, openers, quiet periods) and its latest traces."""
    zone: ZoneInfo = request.app.state.zone
    say = Texts(words_of(request).language)
    traces = await ops.traces.recent(chat, count=CHAT_TRACES)
    return render(
        request,
        "chat.html",
        granted,
        chat=chat,
        chat_name=await ops.status.name(chat),
        phase=ops.status.phase(chat),
        shown=await ops.status.chat(chat),
        messages=list(reversed(await ops.status.messages(chat, limit=CHAT_MESSAGES))),
        stack=await ops.memory.prompt_stack(chat),
        people=await ops.memory.people(chat),
        stickers_on=ops.stickers.enabled,
        stickers=await ops.stickers.collection(chat),
        traces=[(one.trace, trace_lines(one, zone=zone, say=say)) for one in traces],
        initiative=await ops.initiative.view(chat),
        access=ops.access.of(chat),
    )


@router.post("/chats/{chat}/pop")
async def pop(request: Request, ops: Operations, granted: Granted, chat: KnownChat) -> Response:
    """Pop the newest summary, then show the chat again, saying which."""
    t = words_of(request)
    popped = await ops.memory.pop(chat, by=WHO)
    notice = t("nothing_to_pop") if popped is None else t("popped", day=popped.day, who=WHO)
    return back_to_chat(request, granted, chat, notice)


@router.post("/chats/{chat}/restore")
async def restore(request: Request, ops: Operations, granted: Granted, chat: KnownChat) -> Response:
    """Undo the last pop, then show the chat again, saying which."""
    t = words_of(request)
    restored = await ops.memory.restore(chat, by=WHO)
    notice = t("nothing_to_restore") if restored is None else t("restored", day=restored.day)
    return back_to_chat(request, granted, chat, notice)


@router.post("/chats/{chat}/facts/{fact_id}/forget")
async def forget_fact(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat, fact_id: FactId
) -> Response:
    """Forget one fact, then show the chat again, saying what about whom."""
    t = words_of(request)
    fact = await ops.memory.forget_fact(chat, fact_id, by=WHO)
    notice = (
        t("nothing_to_forget")
        if fact is None
        else t("forgot_fact", fact=fact.text, name=fact.user_name, who=WHO)
    )
    return back_to_chat(request, granted, chat, notice)


@router.post("/chats/{chat}/people/{user_id}/forget")
async def forget_person(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat, user_id: UserId
) -> Response:
    """Forget a person here as their ``/forgetme`` would, then show the chat again."""
    t = words_of(request)
    known = {person.user_id: person.name for person in await ops.memory.people(chat)}
    name = known.get(user_id, f"id {user_id}")
    count = await ops.memory.forget_person(chat, user_id, by=WHO)
    if count is None:
        notice = t("unknown_person")
    elif count == 0:
        notice = t("forgot_person_none", name=name)
    else:
        notice = t("forgot_person", count=count, name=name, who=WHO)
    return back_to_chat(request, granted, chat, notice)


@router.get("/chats/{chat}/stickers/{sticker}/thumbnail")
async def sticker_thumbnail(ops: Operations, chat: KnownChat, sticker: StickerLabel) -> Response:
    """A sticker of the chat's collection as a small PNG, fetched by pacebot itself: the
    browser never sees a platform's URL (a Telegram file URL holds the bot token)."""
    png = await ops.stickers.thumbnail(chat, sticker)
    if png is None:
        raise HTTPException(404, f"sticker {sticker} of {chat} cannot be drawn")
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


@router.post("/chats/{chat}/stickers/{sticker}/ban")
async def ban_sticker(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat, sticker: StickerLabel
) -> Response:
    """Ban a sticker of the chat's collection, then show the chat again."""
    t = words_of(request)
    banned = await ops.stickers.ban(chat, sticker, by=WHO)
    notice = (
        t("nothing_to_ban") if banned is None else t("banned_sticker", label=banned.label, who=WHO)
    )
    return back_to_chat(request, granted, chat, notice)


@router.post("/chats/{chat}/later/{item_id}/cancel")
async def cancel_later(
    request: Request, ops: Operations, granted: Granted, chat: KnownChat, item_id: LaterId
) -> Response:
    """Cancel a pending later item, then show the chat again, saying which."""
    t = words_of(request)
    outcome, item = await ops.initiative.cancel(chat, item_id, by=WHO)
    notice = (
        t("cancelled_later", id=item_id, note=item.note, who=WHO)
        if outcome is Cancelled.DONE and item is not None
        else t("nothing_to_cancel")
    )
    return back_to_chat(request, granted, chat, notice)


@router.post("/chats/{chat}/access")
async def switch_access(
    request: Request,
    ops: Operations,
    granted: Granted,
    chat: KnownChat,
    on: Annotated[bool, Form()],
) -> Response:
    """Switch the bot on or off in the chat as ``/bot on|off`` does, then show the chat
    again, saying how it stands (``[access]`` may still refuse it: no switch overrides it)."""
    t = words_of(request)
    state = await ops.access.switch(chat, on=on, by=WHO)
    notice = t("switched_on" if on else "switched_off", who=WHO)
    if state.refused_by_config and state.refusal is not None:
        notice += " " + t("access_by_config", why=state.refusal.value)
    return back_to_chat(request, granted, chat, notice)


def log_level_of(line: str) -> str | None:
    """Return the level a log line carries (``… | INFO    | …``); ``None`` for a line that
    goes on the one before (a traceback's)."""
    parts = line.split(" | ", 2)
    level = parts[1].strip() if len(parts) > 1 else ""
    return level if level in LOG_LEVELS else None


def filtered(lines: list[str], *, level: str, search: str) -> list[str]:
    """Keep the lines at ``level`` or above that hold ``search`` (any case); a line that goes
    on the one before it (a traceback's) goes with it."""
    least = LOG_LEVELS.index(level) if level in LOG_LEVELS else 0
    words = search.casefold()
    kept: list[str] = []
    keeping = False
    for line in lines:
        found = log_level_of(line)
        if found is not None:
            keeping = LOG_LEVELS.index(found) >= least and words in line.casefold()
        if keeping:
            kept.append(line)
    return kept


@router.get("/logs")
async def logs(
    request: Request,
    granted: Granted,
    lines: Annotated[int, Query(ge=1, le=LOG_LINES_MAX)] = LOG_LINES_DEFAULT,
    level: Annotated[str, Query(max_length=10)] = "",
    q: Annotated[str, Query(max_length=200)] = "",
) -> HTMLResponse:
    """The end of the log file (secrets are scrubbed before a line is written), at a level
    and above, holding some words."""
    path: Path = request.app.state.log_file
    tail = await log_tail(path, lines=lines)
    shown = filtered(tail, level=level.upper(), search=q.strip())
    return render(
        request,
        "logs.html",
        granted,
        lines=shown,
        tail_empty=not tail,
        count=lines,
        path=path,
        levels=LOG_LEVELS,
        level=level.upper(),
        query=q,
    )
