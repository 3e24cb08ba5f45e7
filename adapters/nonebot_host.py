"""nonebot2, set up once per process for both QQ roads: OneBot v11 and the official bot.

nonebot is a process-wide singleton: :func:`nonebot_driver` initialises it the first time
a QQ platform is built, never at import, explicitly configured (no environment variable
or ``.env`` file decides anything), and returns its driver; each road then registers its
adapter on it (:func:`adapters.qq.wire.onebot_adapter`,
:func:`adapters.qqbot.gateway.qqbot_adapter`). The driver serves ASGI (OneBot's reverse
WebSocket) and is an HTTP and a WebSocket client (the official bot's REST calls and
gateway), so both roads, and Telegram beside them, run in one process.

Logging: ``nonebot.init()`` replaces loguru's patcher and extra; :func:`nonebot_driver`
puts back whatever was configured before it, keeps nonebot's start-up lines out of the
log, and drops nonebot's stdout sink if it is still there.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any, Final

import nonebot
import nonebot.log
from loguru import logger
from nonebot.config import Config as NonebotConfig
from nonebot.drivers import Driver

DRIVER: Final = "~fastapi+~httpx+~websockets"
"""FastAPI serves OneBot's reverse WebSocket; httpx and websockets are the official
bot's HTTP and WebSocket clients."""
# A truthy value naming no regular file: nonebot.init() replaces a falsy ``_env_file``
# with ``.env`` and ``.env.{environment}`` from the working directory.
_NO_DOTENV_FILES: Final = (os.devnull,)


def nonebot_settings() -> dict[str, Any]:
    """Return a value for every nonebot setting, so no environment variable decides one.

    nonebot reads variables named like its settings (``HOST``, ``PORT``, ``DRIVER``,
    ``SUPERUSERS``...); arguments to ``nonebot.init()`` take precedence over them.
    Host and port are unused: ``QQPlatform`` serves the app itself.
    """
    settings = {
        name: field.get_default(call_default_factory=True)
        for name, field in NonebotConfig.model_fields.items()
    }
    settings.update(
        driver=DRIVER,
        log_level="INFO",
        api_timeout=60.0,  # a backstop: each call is bounded by the platform's own timeout
        superusers=set(),
        nickname=set(),  # pacebot finds its name in the text itself
    )
    return settings


@contextlib.contextmanager
def _loguru_left_alone() -> Iterator[None]:
    """Undo what ``nonebot.init()`` does to loguru, and keep its start-up lines out.

    It replaces loguru's patcher (pacebot's redacts secrets) and its default extra (which
    pacebot's log format reads). loguru offers no getter for either, hence ``_core``.
    """
    core = logger._core  # type: ignore[attr-defined]  # no public getter for patcher/extra
    patcher, extra = core.patcher, dict(core.extra)
    logger.disable("nonebot")
    try:
        yield
    finally:
        logger.enable("nonebot")
        with core.lock:
            core.patcher = patcher
            core.extra.clear()
            core.extra.update(extra)


@functools.cache
def nonebot_driver() -> Driver:
    """Initialise nonebot once per process, explicitly, and return its driver."""
    # nonebot's import added its own stdout sink; drop it so nonebot's chatter stays out
    # of stdout (pacebot's set-up has usually removed it already).
    with contextlib.suppress(ValueError):
        logger.remove(nonebot.log.logger_id)
    with _loguru_left_alone():
        nonebot.init(_env_file=_NO_DOTENV_FILES, **nonebot_settings())
    return nonebot.get_driver()


@contextlib.contextmanager
def registering() -> Iterator[Driver]:
    """Yield the driver to register an adapter on, nonebot's lines kept out meanwhile."""
    driver = nonebot_driver()
    with _loguru_left_alone():
        yield driver
