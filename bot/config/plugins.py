"""``[plugins]``: the nonebot2 plugins hosted beside pacebot on QQ, and their settings.

A plugin is named by its Python module; its settings are handed to nonebot's config as a
plain nonebot bot's ``.env`` would hold them, except the ones pacebot sets itself (its
driver, server and log, the OneBot and QQ adapters' tokens and addresses).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from bot.config.errors import toml_value
from bot.config.values import Section

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_SETTING_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# nonebot's own settings that pacebot sets from its config (its driver, its server, its
# log, the OneBot and QQ adapters' tokens and addresses): a plugin setting never changes them.
_PACEBOTS_NONEBOT_SETTINGS = frozenset(
    {"driver", "host", "port", "log_level", "api_timeout", "environment", "fastapi_reload"}
)
_PACEBOTS_SETTING_PREFIXES = (
    "onebot_",
    "qq_bots",
    "qq_is_sandbox",
    "qq_api_base",
    "qq_sandbox_api_base",
    "qq_auth_base",
    "qq_custom_gateway_url",
)


def _plugin_modules(modules: tuple[str, ...]) -> tuple[str, ...]:
    for module in modules:
        if not _MODULE_RE.match(module):
            msg = (
                f"{toml_value(module)} is not a Python module name: name the module, "
                'e.g. "nonebot_plugin_status", not the package "nonebot-plugin-status"'
            )
            raise ValueError(msg)
    if len(set(modules)) < len(modules):
        msg = "names a module twice"
        raise ValueError(msg)
    return modules


def _plugin_settings(settings: dict[str, Any]) -> dict[str, Any]:
    for key in settings:
        name = key.lower()
        if not _SETTING_RE.match(key):
            msg = f"plugins.config.{key}: not a setting name (letters, digits and _ only)"
            raise ValueError(msg)
        if name in _PACEBOTS_NONEBOT_SETTINGS or name.startswith(_PACEBOTS_SETTING_PREFIXES):
            msg = f"plugins.config.{key}: pacebot sets this itself (from [bot] and [qq])"
            raise ValueError(msg)
    return settings


class PluginsConfig(Section):
    """``[plugins]``: nonebot2 plugins loaded beside pacebot when QQ is on."""

    nonebot: Annotated[tuple[str, ...], AfterValidator(_plugin_modules)] = ()
    """nonebot2 plugins to load beside pacebot when QQ is on, by module name."""
    config: Annotated[dict[str, Any], AfterValidator(_plugin_settings)] = Field(
        default_factory=dict
    )
    """Settings handed to nonebot's config for the plugins, as a plain nonebot bot's
    ``.env`` would (e.g. ``server_status_only_superusers = false``)."""
