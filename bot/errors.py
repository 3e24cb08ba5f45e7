"""The errors pacebot raises; adapters translate library errors into this tree.

PacebotError
├── ConfigError            bad or missing configuration (names key, value, expected form)
├── StorageError           the database cannot be opened or migrated
├── LLMError
│   ├── LLMUnavailable     transport failure after retries: timeout, 429, 5xx, refused
│   │   └── ImagesRefused  the provider answered 400 to a request that held pictures
│   ├── BadLLMReply        the LLM answered, but nothing usable could be read from it
│   └── OverBudget         the hard cap of [budget] is reached: no call until the next day
├── ToolFailed             a tool call failed: its server is down, refused it, or broke
└── PlatformError
    ├── SendFailed         a send did not go through (``maybe_delivered`` says if unsure)
    ├── MessageRefused     the platform refused this message for good: drop it, go on
    ├── RateLimited        the platform asked us to wait ``retry_after_s`` seconds
    ├── ChatUnavailable    the bot was removed or blocked; stop sending to that chat
    ├── HistoryUnavailable the platform cannot fetch a chat's history (no such action)
    └── MediaUnavailable   a file a message carries cannot be had: a placeholder stays
        ├── PictureUnavailable  a picture cannot be fetched, is too big or does not decode
        └── VoiceUnavailable    a voice note cannot be fetched, is too big, too long or
                                not audio
"""

from __future__ import annotations


class PacebotError(Exception):
    """Base of every error pacebot raises on purpose."""


class ConfigError(PacebotError):
    """The configuration or environment is not usable."""


class StorageError(PacebotError):
    """The database cannot be opened, migrated or written."""


class SummaryExists(StorageError):
    """A chat day already has a live (not popped) summary."""


class LLMError(PacebotError):
    """An LLM call did not give a usable answer."""


class LLMUnavailable(LLMError):
    """The LLM could not be reached or refused, after the client's own retries."""


class ImagesRefused(LLMUnavailable):
    """The provider refused (HTTP 400) a request that held pictures: maybe no vision."""


class BadLLMReply(LLMError):
    """The LLM answered with something that is not a valid reply."""


class OverBudget(LLMError):
    """The hard cap of ``[budget]`` is reached: no LLM call until the next chat day."""


class ToolFailed(PacebotError):
    """A tool call did not give a result; the model is told so and answers anyway."""


class PlatformError(PacebotError):
    """A chat platform refused or failed a request."""


class SendFailed(PlatformError):
    """A message was not sent.

    ``maybe_delivered`` is true when the request may have reached the platform (a
    timeout after sending): such a message is never sent again, since a chatter would
    rather miss one line than read it twice.
    """

    def __init__(self, message: str, *, maybe_delivered: bool = False) -> None:
        super().__init__(message)
        self.maybe_delivered = maybe_delivered


class MessageRefused(PlatformError):
    """The platform refused this one message for good (a 400 about what it holds).

    Sending it again would be refused again: it is dropped, and the replies after it go on.
    """


class RateLimited(PlatformError):
    """The platform asked to wait before the next request."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ChatUnavailable(PlatformError):
    """The bot can no longer post in this chat (removed, blocked, chat gone)."""


class MediaUnavailable(PlatformError):
    """A file a message carries could not be had: its placeholder stays in the text."""


class PictureUnavailable(MediaUnavailable):
    """A picture could not be fetched, is too big or does not decode: a placeholder stays."""


class VoiceUnavailable(MediaUnavailable):
    """A voice note could not be fetched, is too big or too long, or is no audio the
    transcription endpoint takes: its placeholder stays."""


class HistoryUnavailable(PlatformError):
    """The platform cannot fetch a chat's history: it has no such action."""
