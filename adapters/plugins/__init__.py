"""nonebot2 plugins hosted beside pacebot on its QQ roads (SPEC §31).

- :mod:`adapters.plugins.loading`: nonebot's config for the plugins, loading each one (a
  failure is one log line), keeping a plugin that fails to start out.
- :mod:`adapters.plugins.host`: :class:`~adapters.plugins.host.PluginHost`, which runs each
  QQ message through nonebot's matchers before pacebot takes it, keeps what a plugin
  handled as context, paces a plugin's sends and keeps its words as the bot's.
- :mod:`adapters.plugins.matchers`: what sets off each of a plugin's matchers (its commands).
- :mod:`adapters.plugins.install`: ``pacebot plugin install`` and ``pacebot plugin list``.

Only :mod:`adapters.plugins.install` can be imported without nonebot; nothing here is
imported unless ``[plugins] nonebot`` names a plugin and a QQ road is on.
"""
