"""QQ as an official bot of the QQ Open Platform, through nonebot2's ``nonebot-adapter-qq``.

- :mod:`adapters.qqbot.platform`: :class:`QQBotPlatform`, the platform the core talks to
  (lifecycle, inbound delivery with the gateway's sequence, ``send``).
- :mod:`adapters.qqbot.gateway`: the adapter registered on nonebot, and the gateway
  connection pacebot runs itself (resuming a stored session after a restart).
- :mod:`adapters.qqbot.normalise`: a group or C2C message event →
  :class:`~bot.models.IncomingMessage`.
- :mod:`adapters.qqbot.outbound`: passive replies (``msg_id`` + ``msg_seq``), proactive
  messages within the monthly quota, rich media uploads.
- :mod:`adapters.qqbot.plugins`: the bot as a road for nonebot plugins: its events as
  the adapter's, a plugin's replies numbered in the store and kept as the bot's.
- :mod:`adapters.qqbot.errors`: the platform's refusals → the :mod:`bot.errors` tree.
- :mod:`adapters.qqbot.probe`: the access token and the gateway URL, asked over plain
  HTTP (``pacebot check --online``).

Nothing is imported here; :mod:`adapters.qqbot.probe` and :mod:`adapters.qqbot.ledger`
import no platform library, the rest import nonebot (see :mod:`adapters.qq.wire` for what
that does to logging).
"""
