"""Chat events handed to a function: a debouncer heard on its own, without a pipeline."""

from __future__ import annotations

import random
from collections.abc import Callable

from bot.config.model import PacingConfig
from bot.conversation import Unheard, WaitEnd
from bot.debounce import Debouncer
from bot.models import ChatKey


class OnQuiet(Unheard):
    """Events that hand each chat that went quiet to ``on_quiet``; the rest go unheard."""

    def __init__(self, on_quiet: Callable[[ChatKey], object]) -> None:
        self._on_quiet = on_quiet

    def quiet(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        self._on_quiet(chat)


def debouncer_calling(
    pacing: PacingConfig,
    on_quiet: Callable[[ChatKey], object],
    *,
    rng: random.Random | None = None,
) -> Debouncer:
    """Return a debouncer that calls ``on_quiet(chat)`` when a chat goes quiet."""
    debouncer = Debouncer(pacing, rng=rng)
    debouncer.report_to(OnQuiet(on_quiet))
    return debouncer
