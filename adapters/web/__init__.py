"""The web dashboard (README, "Dashboard"), served by ``pacebot run`` when ``[web] enabled``.

Imported only then (it loads FastAPI, uvicorn and Jinja2). ``site.py`` builds the app
from ``api.py`` (the JSON API) and ``pages.py`` (the server-rendered pages), guarded by
``auth.py`` (token, sessions, CSRF) and ``guards.py`` (body limit, security headers);
``dashboard.py`` answers their questions through the core's ports; ``server.py`` runs it.
"""
