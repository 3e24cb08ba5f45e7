"""The forms a value of ``config.toml`` may take, each checked in one place, and the
:class:`Section` every table is read into.

Each ``Annotated`` type below is a field type of ``bot/config/model.py`` or
``bot/config/groups.py``; its check raises ``ValueError`` with the expected form in TOML's
words, which ``bot/config/errors.py`` puts after the key and the value.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import time
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from bot.config.errors import toml_value
from bot.errors import ConfigError
from bot.hours import window_minutes
from bot.models import ChatKey

_ADMIN_RE = re.compile(r"^[a-z][a-z0-9_]*:\d+$")
_OPENID_ADMIN_RE = re.compile(r"^qqbot:[A-Za-z0-9_]{1,64}$")  # the official QQ bot's openids
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` names a loopback address (only this machine can connect)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_name(value: str) -> str:
    if not _ENV_NAME_RE.match(value):
        msg = "must be the name of an environment variable, e.g. PACEBOT_LLM_API_KEY"
        raise ValueError(msg)
    return value


def _env_name_or_empty(value: str) -> str:
    return value and _env_name(value)


def http_url(example: str) -> AfterValidator:
    """Accept an http(s) URL or "", naming ``example`` as the expected form."""
    return _url(("http://", "https://"), "an http(s) URL", example)


def ws_url(example: str) -> AfterValidator:
    """Accept a ws(s) URL or "", naming ``example`` as the expected form."""
    return _url(("ws://", "wss://"), "a ws(s) URL", example)


def _url(schemes: tuple[str, ...], form: str, example: str) -> AfterValidator:
    def check(value: str) -> str:
        if value and not value.startswith(schemes):
            msg = f"must be {form} such as {example}, or empty"
            raise ValueError(msg)
        return value

    return AfterValidator(check)


def _app_id(value: str) -> str:
    if value and not (value.isascii() and value.isdigit() and len(value) <= 20):
        msg = 'must be the bot\'s AppID, digits such as "102000001", or ""'
        raise ValueError(msg)
    return value


def _iana_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        msg = "must be an IANA time zone such as Asia/Shanghai or Europe/Berlin"
        raise ValueError(msg) from None
    return value


def _admin_ids(value: tuple[str, ...]) -> tuple[str, ...]:
    for admin in value:
        if not _ADMIN_RE.match(admin) and not _OPENID_ADMIN_RE.match(admin):
            msg = (
                f"{toml_value(admin)} is not an admin id; use platform:numeric-id, "
                'e.g. "telegram:123456789" or "qq:10001", or qqbot:openid '
                "(what /whoami answers on the official QQ bot)"
            )
            raise ValueError(msg)
    return value


def _is_clock_time(value: str) -> bool:
    try:
        time.fromisoformat(value)
    except ValueError:
        return False
    return re.fullmatch(r"\d{2}:\d{2}", value) is not None


def _clock_time(value: str) -> str:
    if not _is_clock_time(value):
        msg = "must be a time of day HH:MM, e.g. 04:00"
        raise ValueError(msg)
    return value


def _hours(value: str) -> str:
    if window_minutes(value) is None:
        msg = (
            'must be a window of local time "HH:MM-HH:MM", e.g. "09:00-22:00" '
            '("22:00-02:00" runs past midnight, "00:00-24:00" is the whole day)'
        )
        raise ValueError(msg)
    return value


def _quiet_hours(value: str) -> str:
    if value and window_minutes(value) is None:
        msg = 'must be a span of local times HH:MM-HH:MM, e.g. "01:00-08:00", or "" for none'
        raise ValueError(msg)
    return value


def _interests(value: tuple[str, ...]) -> tuple[str, ...]:
    for interest in value:
        if not interest.strip():
            msg = f'{toml_value(interest)} is blank; name a word or phrase, e.g. ["原神", "猫"]'
            raise ValueError(msg)
    return tuple(interest.strip() for interest in value)


def _group_chat_key(value: str) -> str:
    try:
        chat = ChatKey.parse(value)
    except ConfigError:
        chat = None
    if chat is None or not chat.is_group:
        msg = 'must be the chat key of a group, platform:group:id, e.g. "qq:group:123456"'
        raise ValueError(msg)
    if chat.topic:
        msg = (
            f"names a forum topic; name the whole group, {toml_value(str(chat.room))}:"
            " its settings cover every topic"
        )
        raise ValueError(msg)
    return value


class Section(BaseModel):
    """A table of ``config.toml``: unknown keys refused, frozen once read; a switch is
    ``true`` or ``false``, never ``"yes"``, ``"true"`` or ``1`` (as a price is a number,
    never a string)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, use_attribute_docstrings=True
    )

    @field_validator("*", mode="before")
    @classmethod
    def _strict_switch(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and field.annotation is bool and not isinstance(value, bool):
            msg = "must be true or false, without quotes"
            raise ValueError(msg)
        return value


LogLevel = Literal["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR"]
ReplyMode = Literal["mention", "always", "smart"]
PositiveSeconds = Annotated[float, Field(gt=0)]
NonNegativeSeconds = Annotated[float, Field(ge=0)]
EnvName = Annotated[str, AfterValidator(_env_name)]
"""The name of the environment variable that holds a secret."""
EnvNameOrEmpty = Annotated[str, AfterValidator(_env_name_or_empty)]
"""As :data:`EnvName`, or "" to fall back to another setting."""
IanaZone = Annotated[str, AfterValidator(_iana_zone)]
AppId = Annotated[str, AfterValidator(_app_id)]
"""An app's id on the QQ Open Platform (its AppID): digits, or "" while unset."""
AdminIds = Annotated[tuple[str, ...], AfterValidator(_admin_ids)]
ClockTime = Annotated[str, AfterValidator(_clock_time)]
"""A time of day, ``HH:MM``."""
Hours = Annotated[str, AfterValidator(_hours)]
"""A window of local time, ``HH:MM-HH:MM``; it may run past midnight."""
QuietHours = Annotated[str, AfterValidator(_quiet_hours)]
"""A span of local times ``HH:MM-HH:MM`` (it may run past midnight), or ""."""
Interests = Annotated[tuple[str, ...], AfterValidator(_interests)]
GroupChatKey = Annotated[str, AfterValidator(_group_chat_key)]
"""The chat key of a whole group, e.g. ``qq:group:123456``."""
Tokens = Annotated[int, Field(ge=0, strict=True)]
"""A number of tokens; 0 = no cap."""
Price = Annotated[float, Field(ge=0, strict=True)]
"""A price per million tokens: a number, never a string."""
