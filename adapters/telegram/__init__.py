"""Talk to Telegram through python-telegram-bot, without letting it own the process.

The package is split by concern; import the module you need (this file imports only PTB
itself, see below, so loading one part never loads the rest):

- :mod:`adapters.telegram.normalise`: pure functions that turn a PTB ``Message`` into an
  :class:`~bot.models.IncomingMessage` (chat key, placeholders, mentions, commands
  addressed to one bot, the forwarded prefix).
- :mod:`adapters.telegram.wire`: PTB's ``Bot`` built for pacebot (timeouts, a getUpdates
  connection that skips unreadable updates), keeping the token out of logs, and the
  ``timedelta`` opt-in. ``telegram.ext`` is never imported.
- :mod:`adapters.telegram.polling`: the getUpdates loop that hands each page to the core
  at once and confirms it only once stored, and the back-off of Bot API retries.
- :mod:`adapters.telegram.errors`: PTB's ``TelegramError`` mapped to the
  :mod:`bot.errors` tree, including whether a failed send may still have arrived, and how
  long a 429 asks to wait.
- :mod:`adapters.telegram.platform`: :class:`TelegramPlatform`, the lifecycle (connecting
  in the background with retries), each page's messages and edits, sending, typing and
  the command menu.

PTB's Passport support imports ``cryptography`` when it is installed (the official QQ
adapter depends on it), which holds about 10 MiB that pacebot never uses: PTB is imported
here first, with ``cryptography`` hidden while it loads, and Passport stays off. A road
that needs ``cryptography`` imports it later as usual.
"""

from __future__ import annotations

import sys

_HIDE = "cryptography" not in sys.modules  # loaded already: PTB may as well use it
if _HIDE:
    sys.modules["cryptography"] = None  # type: ignore[assignment]  # "import" raises ImportError
try:
    import telegram  # noqa: F401 - loaded here, before any of this package's modules
finally:
    if _HIDE:
        del sys.modules["cryptography"]
