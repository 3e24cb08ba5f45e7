"""Talk to Telegram through python-telegram-bot, without letting it own the process.

The package is split by concern; import the module you need (this file imports nothing,
so loading one part never loads the rest):

- :mod:`adapters.telegram.normalise`: pure functions that turn a PTB ``Message`` into an
  :class:`~bot.models.IncomingMessage` (chat key, placeholders, mentions, commands
  addressed to one bot, the forwarded prefix).
- :mod:`adapters.telegram.wire`: the bootstrap of PTB's ``Application`` (the builder, the
  getUpdates connection that confirms only stored updates and skips unreadable ones),
  keeping the token out of logs, and the ``timedelta`` opt-in.
- :mod:`adapters.telegram.errors`: PTB's ``TelegramError`` mapped to the
  :mod:`bot.errors` tree, including whether a failed send may still have arrived, and how
  long a 429 asks to wait.
- :mod:`adapters.telegram.platform`: :class:`TelegramPlatform`, the lifecycle (connecting
  in the background with retries), polling, sending, typing and the command menu.
"""
