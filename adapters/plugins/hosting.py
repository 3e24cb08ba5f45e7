"""Host the nonebot plugins on the QQ roads for a run: load them, attach the host.

The composition root calls :func:`hosting_plugins` between building the platforms (which
initialises nonebot) and starting them (which runs the plugins' start-up functions).
It loads nothing unless ``[plugins] nonebot`` names a plugin and a QQ road is on; this
module imports nonebot only then, so a Telegram-only run never loads it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.config.model import Config

if TYPE_CHECKING:
    from adapters.plugins.host import PluginHost, PluginStore
    from adapters.plugins.loading import PluginState


@runtime_checkable
class HostsPlugins(Protocol):
    """A QQ road that can run its messages through nonebot plugins (QQ's platforms)."""

    def host_plugins(self, host: PluginHost) -> None: ...


@contextlib.asynccontextmanager
async def hosting_plugins(
    config: Config,
    store: PluginStore,
    platforms: Iterable[object],
    *,
    now: Callable[[], datetime],
) -> AsyncIterator[None]:
    """Load the plugins and host them on every QQ road among ``platforms`` while the block
    runs; nothing at all without a plugin to load or a QQ road to host it."""
    roads = [platform for platform in platforms if isinstance(platform, HostsPlugins)]
    if not config.plugins.nonebot or not roads:
        yield
        return
    from adapters.plugins.host import PluginHost
    from adapters.plugins.loading import load_plugins

    plugins = load_plugins(config)
    async with PluginHost(plugins, store, bot_name=config.bot.name, now=now) as host:
        for road in roads:
            road.host_plugins(host)
        yield


def hosted_plugins() -> Sequence[PluginState]:
    """What became of each plugin of the host running now; none while none runs."""
    if "adapters.plugins.host" not in sys.modules:  # not even loaded: nothing is hosted
        return ()
    from adapters.plugins.host import PluginHost

    host = PluginHost.running
    return host.plugins.states if host is not None else ()
