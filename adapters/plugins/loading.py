"""Load the nonebot plugins ``[plugins] nonebot`` names, each on its own.

nonebot must be initialised first (QQ's wire does it when a QQ platform is built). Before
any plugin is imported, nonebot's config gets what a plain nonebot bot's ``.env`` would
hold: pacebot's defaults for what it knows (its QQ admins as superusers, its names as
nicknames, ``nonebot-plugin-localstore`` under ``<data_dir>/plugins/``,
``nonebot-plugin-apscheduler`` in ``bot.timezone``), then ``[plugins.config]`` over them.

A plugin that fails to import is one ERROR line (its traceback at DEBUG) and is left
out. So is one whose start-up function fails when the QQ server starts: nonebot would
let that failure stop the server, so each start-up and shutdown function a plugin
registers is guarded here, and a plugin that fails to start loses its matchers.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

import nonebot
from loguru import logger
from nonebot.log import LoguruHandler
from nonebot.plugin import Plugin
from nonebot.utils import is_coroutine_callable, run_sync

from adapters.plugins.matchers import MatcherInfo, matchers_of
from bot.config.model import Config

LifespanFunction = Callable[[], Any]

# pacebot's platform prefix of an admin → the adapter name nonebot's SUPERUSER checks.
_SUPERUSER_PREFIXES = {"qq": "onebot", "qqbot": "qq"}


@dataclass(frozen=True, slots=True)
class PluginState:
    """One plugin of ``[plugins] nonebot`` and what became of it."""

    module: str
    name: str  # its metadata's name, else the module
    loaded: bool
    problem: str = ""  # why it is not loaded, or was left out
    matchers: tuple[MatcherInfo, ...] = ()


class Plugins:
    """The plugins of this run, as the dashboard and ``pacebot plugin list`` show them.

    ``current`` is the latest loaded: nonebot keeps a plugin's start-up functions for the
    whole process, and one that fails tells the plugins of the run it fails in.
    """

    current: ClassVar[Plugins | None] = None

    def __init__(self, states: list[PluginState]) -> None:
        self._states = states
        Plugins.current = self

    @property
    def states(self) -> tuple[PluginState, ...]:
        return tuple(self._states)

    @property
    def loaded(self) -> tuple[PluginState, ...]:
        return tuple(state for state in self._states if state.loaded)

    def left_out(self, module: str, problem: str, error: BaseException) -> None:
        """Take a plugin that failed to start out of the run: its matchers go."""
        logger.error("plugins: {} left out: {}", module, problem)
        logger.opt(exception=error).debug("plugins: {} failed", module)
        plugin = nonebot.get_plugin_by_module_name(module)
        for matcher in list(plugin.matcher) if plugin is not None else []:
            with contextlib.suppress(ValueError):  # left out before, in an earlier run
                matcher.destroy()
        self._states = [
            replace(state, loaded=False, problem=problem, matchers=())
            if state.module == module
            else state
            for state in self._states
        ]


def nonebot_settings(config: Config) -> dict[str, Any]:
    """Return what nonebot's config gets for the plugins: pacebot's defaults, then
    ``[plugins.config]`` over them."""
    plugins_dir = config.bot.data_dir / "plugins"
    settings: dict[str, Any] = {
        "superusers": superusers(config.bot.admins),
        "nickname": {config.bot.name, *config.bot.aliases},
        "localstore_data_dir": str(plugins_dir / "data"),
        "localstore_cache_dir": str(plugins_dir / "cache"),
        "localstore_config_dir": str(plugins_dir / "config"),
        "apscheduler_config": {"apscheduler.timezone": config.bot.timezone},
    }
    settings.update((key.lower(), value) for key, value in config.plugins.config.items())
    return settings


def superusers(admins: tuple[str, ...]) -> set[str]:
    """Return pacebot's QQ admins as nonebot names its superusers (``onebot:10001``)."""
    named = set()
    for admin in admins:
        platform, _, user = admin.partition(":")
        if platform in _SUPERUSER_PREFIXES:
            named.add(f"{_SUPERUSER_PREFIXES[platform]}:{user}")
    return named


def load_plugins(config: Config) -> Plugins:
    """Set nonebot's config for the plugins, then load each plugin ``config`` names."""
    driver = nonebot.get_driver()
    for key, value in nonebot_settings(config).items():
        setattr(driver.config, key, value)
    command_start = min(driver.config.command_start, key=lambda start: (start != "/", start))
    states: list[PluginState] = []
    plugins = Plugins(states)
    for module in config.plugins.nonebot:
        with _guarding_lifespan(module):
            plugin, problem = _load(module)
        if plugin is None:
            logger.error("plugins: {} not loaded: {}", module, problem)
            states.append(PluginState(module, module, loaded=False, problem=problem))
            continue
        name = plugin.metadata.name if plugin.metadata is not None else module
        matchers = matchers_of(plugin, command_start=command_start)
        states.append(PluginState(module, name, loaded=True, matchers=matchers))
        logger.info("plugins: loaded {} ({}), {} matcher(s)", module, name, len(matchers))
    _one_route_for_library_logs()
    return plugins


def _one_route_for_library_logs() -> None:
    """Drop the loguru handlers plugins hang on stdlib loggers (nonebot-plugin-apscheduler
    does on ``apscheduler``): pacebot routes every stdlib record into loguru already, and
    a second route logs each line twice."""
    for library_logger in logging.root.manager.loggerDict.values():
        if not isinstance(library_logger, logging.Logger) or not library_logger.propagate:
            continue
        for handler in list(library_logger.handlers):
            if isinstance(handler, LoguruHandler):
                library_logger.removeHandler(handler)


def _load(module: str) -> tuple[Plugin | None, str]:
    """Load one plugin, quietly; return it, or ``None`` and why not in a few words.

    nonebot logs a failed import with its traceback and keeps the error; importing the
    module again (still as a plugin) raises it here, for the one line that says why.
    """
    loaded = nonebot.get_plugin_by_module_name(module)
    if loaded is not None:  # nonebot loads a module once per process
        return loaded, ""
    with _nonebot_quiet():
        try:
            plugin = nonebot.load_plugin(module)
        except RuntimeError as error:  # another plugin already has its name
            return None, str(error)
        if plugin is not None:
            return plugin, ""
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            package = module.partition(".")[0].replace("_", "-")
            return None, f"not installed (pacebot plugin install {package})"
        try:
            importlib.import_module(module)
        except Exception as error:
            logger.opt(exception=error).debug("plugins: importing {} failed", module)
            return None, f"{type(error).__name__}: {error}"
    plugin = nonebot.get_plugin_by_module_name(module)
    if plugin is None:
        return None, "not a nonebot plugin, or imported before it could be loaded as one"
    return plugin, ""


@contextlib.contextmanager
def _nonebot_quiet() -> Iterator[None]:
    """Keep nonebot's own lines about loading out of the log: pacebot says it in one."""
    logger.disable("nonebot")
    try:
        yield
    finally:
        logger.enable("nonebot")


@contextlib.contextmanager
def _guarding_lifespan(module: str) -> Iterator[None]:
    """Guard the start-up and shutdown functions registered while the block runs."""
    # nonebot keeps them in its driver's lifespan and runs them unguarded, so one that
    # raises stops the whole server; there is no public way to reach them.
    lifespan = nonebot.get_driver()._lifespan
    started, stopped = len(lifespan._startup_funcs), len(lifespan._shutdown_funcs)
    try:
        yield
    finally:
        starts, stops = lifespan._startup_funcs, lifespan._shutdown_funcs
        starts[started:] = [_guarded(f, module, start=True) for f in starts[started:]]
        stops[stopped:] = [_guarded(f, module, start=False) for f in stops[stopped:]]


def _guarded(
    function: LifespanFunction, module: str, *, start: bool
) -> Callable[[], Awaitable[None]]:
    """Return ``function`` run as nonebot runs it, its failure logged and kept to its plugin."""

    async def guarded() -> None:
        try:
            if is_coroutine_callable(function):
                await cast(Callable[[], Awaitable[Any]], function)()
            else:
                await run_sync(function)()
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
            if start and Plugins.current is not None:
                Plugins.current.left_out(module, f"failed to start: {problem}", error)
            else:
                logger.warning("plugins: {} failed to stop: {}", module, problem)

    return guarded
