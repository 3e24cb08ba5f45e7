"""QQ through a OneBot v11 implementation (NapCat, Lagrange) and nonebot2.

- :mod:`adapters.qq.platform`: :class:`QQPlatform`, the platform the core talks to
  (lifecycle, connections, inbound delivery, ``send``, ``show_typing``).
- :mod:`adapters.qq.normalise`: a OneBot message event → :class:`~bot.models.IncomingMessage`.
- :mod:`adapters.qq.wire`: nonebot's one-time set-up, the OneBot adapter, the uvicorn server.
- :mod:`adapters.qq.errors`: nonebot's OneBot errors → the :mod:`bot.errors` tree.

Nothing is imported here. Importing any of these modules initialises nothing, but it
imports nonebot, which drops loguru's sinks: the composition root imports QQ before it
sets up logging (see :mod:`adapters.qq.wire`).
"""
