"""Ask the QQ Open Platform for an access token and the gateway URL, over plain HTTP.

``pacebot check --online`` runs this: it tells a wrong AppSecret (code 100016) from a
wrong AppID (100007) and from a platform that cannot be reached, and prints nothing of
the secret or the token. The running bot gets its token through the adapter instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import httpx

from bot.config.qq_official import QQOfficialConfig
from bot.errors import ConfigError, PlatformError

WRONG_APP_ID: Final = 100007
WRONG_SECRET: Final = 100016


@dataclass(frozen=True, slots=True)
class Probed:
    """What the platform answered: the gateway's URL and how long the token lives."""

    gateway_url: str
    token_expires_in_s: int


async def probe(config: QQOfficialConfig, secret: str, *, timeout_s: float) -> Probed:
    """Get a token, then the gateway URL with it.

    Raise ``ConfigError`` when the platform refuses the AppID or the AppSecret,
    ``PlatformError`` when it cannot be reached or answers something else.
    """
    async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as http:
        token, expires_in = await access_token(http, config, secret)
        headers = {"Authorization": f"QQBot {token}", "X-Union-Appid": config.app_id}
        where = f"{config.rest_base}gateway/bot"
        answer = await _json(http, "GET", where, headers=headers)
    url = answer.get("url")
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        msg = f"the gateway look-up at {where} named no WebSocket URL ({_code_of(answer)})"
        raise PlatformError(msg)
    return Probed(config.gateway_url or url, expires_in)


async def access_token(
    http: httpx.AsyncClient, config: QQOfficialConfig, secret: str
) -> tuple[str, int]:
    """Return an access token and its life in seconds; raise as :func:`probe` does."""
    body = {"appId": config.app_id, "clientSecret": secret}
    answer = await _json(http, "POST", config.token_url, json=body)
    token, expires_in = answer.get("access_token"), answer.get("expires_in")
    if isinstance(token, str) and token and str(expires_in).isdigit():
        return token, int(str(expires_in))
    code = answer.get("code")
    if code == WRONG_SECRET:
        msg = (
            f"the platform refused the AppSecret (code {code}): check the variable named by "
            "qq_official.secret_env"
        )
        raise ConfigError(msg)
    if code == WRONG_APP_ID:
        msg = (
            f"the platform does not know qq_official.app_id = {config.app_id!r} "
            f"(code {code}): copy the AppID from the QQ Open Platform"
        )
        raise ConfigError(msg)
    msg = f"the token endpoint {config.token_url} granted no token ({_code_of(answer)})"
    raise PlatformError(msg)


async def _json(http: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
    """Return the JSON object ``url`` answers with; raise ``PlatformError`` if it cannot."""
    try:
        response = await http.request(method, url, **kwargs)
    except httpx.HTTPError as error:
        msg = f"{url} cannot be reached ({type(error).__name__})"
        raise PlatformError(msg) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        msg = f"{url} answered HTTP {response.status_code} without a JSON object"
        raise PlatformError(msg)
    if response.status_code == httpx.codes.UNAUTHORIZED:
        msg = f"{url} refused the access token (HTTP 401, {_code_of(answer)})"
        raise PlatformError(msg)
    return answer


def _code_of(answer: dict[str, Any]) -> str:
    """Say the platform's code and words in an answer, kept short."""
    code, message = answer.get("code"), str(answer.get("message", ""))[:80]
    return f"code {code}: {message}" if code is not None else "no code"
