"""Who may use the dashboard: the holder of the token, and nobody else.

A request proves it holds the token in one of two ways. A script sends it as
``Authorization: Bearer <token>``. A browser posts it once to the login form and gets a
session cookie (HttpOnly, SameSite=Strict) holding a random session id, never the
token; every state-changing request made with that cookie must also carry the session's
CSRF token, as a form field or the ``X-CSRF-Token`` header. A token in the query string
is refused outright (it would end up in histories, proxies and logs). Tokens are
compared in constant time. Sessions live in memory: a restart logs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

SESSION_COOKIE = "pacebot_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf"
SESSION_TTL_S = 12 * 3600.0  # a login lasts this long, in seconds
SESSIONS_MAX = 64  # the oldest session is closed when a login would pass this
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Query parameters that look like a credential: refused whatever their value.
_CREDENTIAL_PARAMETERS = frozenset({"token", "access_token", "api_key", "key", "auth"})


@dataclass(frozen=True, slots=True)
class Session:
    """A browser logged in with the token."""

    id: str
    csrf: str
    expires_at: float  # on the ``clock`` of its :class:`Sessions`


@dataclass(frozen=True, slots=True)
class Access:
    """How a request proved that it holds the token."""

    session: Session | None  # None: it sent the token itself, as a Bearer header


class Sessions:
    """The logged-in browsers, by random session id."""

    def __init__(
        self, *, ttl_s: float = SESSION_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._notices: dict[str, str] = {}  # what the last change did, by live session id

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self) -> Session:
        """Start a session with fresh random ids, closing the oldest one past the cap."""
        now = self._clock()
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires_at > now}
        while len(self._sessions) >= SESSIONS_MAX:
            del self._sessions[next(iter(self._sessions))]
        self._notices = {k: n for k, n in self._notices.items() if k in self._sessions}
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self._ttl_s)
        self._sessions[session.id] = session
        return session

    def tell(self, session: Session, notice: str) -> None:
        """Keep what a change made in ``session`` did, for the page it goes back to."""
        if session.id in self._sessions:
            self._notices[session.id] = notice

    def told(self, session: Session) -> str | None:
        """Return (once) what the session's last change did, if it was not shown yet."""
        return self._notices.pop(session.id, None)

    def find(self, session_id: str | None) -> Session | None:
        """Return the live session of ``session_id``, if there is one."""
        session = self._sessions.get(session_id or "")
        if session is None or session.expires_at <= self._clock():
            return None
        return session

    def close(self, session_id: str) -> None:
        """End a session (logging out); an unknown id is ignored."""
        self._sessions.pop(session_id, None)
        self._notices.pop(session_id, None)


class Gate:
    """Decide whether a request holds the token, and open sessions for the login form."""

    def __init__(self, token: str, sessions: Sessions) -> None:
        self._token = token.encode()
        self.sessions = sessions

    def is_token(self, candidate: str) -> bool:
        """Compare ``candidate`` with the token in constant time."""
        return hmac.compare_digest(candidate.encode(), self._token)

    def leaks_token(self, request: Request) -> bool:
        """Tell whether the query string carries the token or anything named like one."""
        return any(
            name.lower() in _CREDENTIAL_PARAMETERS or self.is_token(value)
            for name, value in request.query_params.multi_items()
        )

    def access(self, request: Request) -> Access | None:
        """Return how ``request`` holds the token, or ``None`` if it does not.

        A request that sends an Authorization header is judged by it alone: a wrong
        Bearer token is refused even beside a valid cookie.
        """
        if self.leaks_token(request):
            return None
        header = request.headers.get("authorization")
        if header is not None:
            scheme, _, credential = header.partition(" ")
            ok = scheme.lower() == "bearer" and self.is_token(credential.strip())
            return Access(None) if ok else None
        session = self.sessions.find(request.cookies.get(SESSION_COOKIE))
        return None if session is None else Access(session)

    @staticmethod
    async def csrf_ok(request: Request, access: Access) -> bool:
        """Tell whether a request may change state: Bearer, or cookie plus the CSRF token."""
        session = access.session
        if session is None or request.method in SAFE_METHODS:
            return True
        sent = request.headers.get(CSRF_HEADER)
        content_type = request.headers.get("content-type", "")
        if sent is None and content_type.startswith("application/x-www-form-urlencoded"):
            field = (await request.form()).get(CSRF_FIELD)
            sent = field if isinstance(field, str) else None
        return sent is not None and hmac.compare_digest(sent.encode(), session.csrf.encode())
