"""``[qq_official]``: QQ as an official bot of the QQ Open Platform (AppID and AppSecret).

The platform's addresses are its defaults; a proxy or a test sets its own.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from bot.config.values import AppId, EnvName, Section, http_url, ws_url

QQ_OFFICIAL_API_BASE = "https://api.sgroup.qq.com/"
"""The QQ Open Platform's REST base."""
QQ_OFFICIAL_SANDBOX_API_BASE = "https://sandbox.api.sgroup.qq.com/"
"""The REST base of its sandbox, where a bot is tried before it is published."""
QQ_OFFICIAL_AUTH_BASE = "https://bots.qq.com/app/getAppAccessToken"
"""Where the platform hands out access tokens."""


class QQOfficialConfig(Section):
    enabled: bool = False
    """Run the bot as an official QQ bot of the QQ Open Platform (``pacebot run``)."""
    app_id: AppId = ""
    """The bot's AppID from the QQ Open Platform (digits); required when enabled."""
    secret_env: EnvName = "QQ_BOT_SECRET"
    """Environment variable that holds the bot's AppSecret."""
    sandbox: bool = False
    """Talk to the platform's sandbox (where a bot is tried before it is published)."""
    group_all_messages: bool = True
    """Take every group message where the owner granted it; false: only those that @ the bot."""
    proactive: bool = False
    """The group owners let the bot speak on its own: reminders, follow-ups, openers in groups."""
    proactive_per_month: int = Field(default=4, ge=0, le=1000)
    """Messages that answer nothing, per chat and calendar month (+08:00); more are dropped."""
    api_base: Annotated[str, http_url(QQ_OFFICIAL_API_BASE)] = ""
    """The platform's REST base; "" = the platform's (its sandbox's with ``sandbox``)."""
    auth_base: Annotated[str, http_url(QQ_OFFICIAL_AUTH_BASE)] = ""
    """The whole URL of the access token endpoint; "" = the platform's."""
    gateway_url: Annotated[str, ws_url("wss://api.sgroup.qq.com/websocket")] = ""
    """The WebSocket gateway; "" = the one the platform names (``GET /gateway/bot``)."""

    @model_validator(mode="after")
    def _app_id_when_enabled(self) -> Self:
        if self.enabled and not self.app_id:
            msg = (
                "qq_official.app_id is missing: with enabled = true, set it to the bot's "
                'AppID from the QQ Open Platform, e.g. app_id = "102000001"'
            )
            raise ValueError(msg)
        return self

    @property
    def rest_base(self) -> str:
        """The REST base to call: ``api_base``, else the platform's (or its sandbox's)."""
        if self.api_base:
            return self.api_base if self.api_base.endswith("/") else self.api_base + "/"
        return QQ_OFFICIAL_SANDBOX_API_BASE if self.sandbox else QQ_OFFICIAL_API_BASE

    @property
    def token_url(self) -> str:
        """The access token endpoint to ask: ``auth_base``, else the platform's."""
        return self.auth_base or QQ_OFFICIAL_AUTH_BASE
