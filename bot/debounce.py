"""Wait until a chat has gone quiet, then answer it once.

Each chat with waiting messages owns one ``loop.call_at`` handle: no idle task per chat.
A message that moves the deadline later leaves the handle alone; when it fires early it
re-arms once for the latest deadline. Only a deadline that moves sooner (a shorter fresh
draw, ``max_wait_s``, ``max_batch``) cancels and re-arms. This keeps a reset at about a
microsecond and keeps the loop's timer heap free of cancelled handles, whose clean-up
would otherwise re-sort the whole heap in one go (~0.4 s at 100,000 chats).
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass

from bot.config.model import PacingConfig
from bot.conversation import ChatEvents, Unheard, WaitEnd
from bot.models import ChatKey

# A last message like "我想想，" or "wait..." usually has more coming: wait the longest.
_UNFINISHED_ENDINGS = ("，", ",", "、", "...", "…", "：", ":", "——", "-")


def looks_unfinished(text: str) -> bool:
    """Tell whether a message reads like the sender is still typing."""
    stripped = text.rstrip()
    return stripped.endswith(_UNFINISHED_ENDINGS) or stripped in {"我想想", "等等", "wait"}


def quiet_deadline(
    pacing: PacingConfig,
    *,
    now: float,
    first_at: float,
    draw: float,
    unfinished: bool = False,
    answer_by: float = math.inf,
) -> tuple[float, WaitEnd]:
    """Return when to answer, and what set that moment: a fresh wait after ``now``,
    capped at ``max_wait_s`` after ``first_at`` and at the answer bound ``answer_by``.

    ``draw`` is a uniform random number in [0, 1]; ``unfinished`` stretches the wait to
    its maximum.
    """
    span = pacing.debounce_max_s - pacing.debounce_min_s
    wait = pacing.debounce_max_s if unfinished else pacing.debounce_min_s + draw * span
    deadline, ended_by = now + wait, WaitEnd.QUIET
    if answer_by < deadline:
        deadline, ended_by = answer_by, WaitEnd.ANSWER_BOUND
    if first_at + pacing.max_wait_s < deadline:
        deadline, ended_by = first_at + pacing.max_wait_s, WaitEnd.MAX_WAIT
    return deadline, ended_by


@dataclass(slots=True)
class _Waiting:
    first_at: float
    count: int
    counted: int  # of ``count``, those that count toward max_batch
    deadline: float  # when to answer (loop time)
    ended_by: WaitEnd  # what set the deadline
    armed_for: float  # when the handle fires: the deadline, or earlier if it moved since
    handle: asyncio.Handle
    answer_by: float  # the answer bound once someone addressed the bot; inf before


class Debouncer:
    """Tell the events ``quiet(chat)`` once a chat has been quiet long enough."""

    def __init__(
        self,
        pacing: PacingConfig,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self._pacing = pacing
        self._events: ChatEvents = Unheard()
        self._rng = rng or random.Random()
        self._waiting: dict[ChatKey, _Waiting] = {}

    def report_to(self, events: ChatEvents) -> None:
        """From now on, tell ``events`` each chat that went quiet."""
        self._events = events

    def __len__(self) -> int:
        return len(self._waiting)

    def waiting(self, chat: ChatKey) -> int:
        """Return how many messages of ``chat`` this debouncer is waiting on."""
        state = self._waiting.get(chat)
        return state.count if state else 0

    def touch(
        self,
        chat: ChatKey,
        *,
        count: int = 1,
        unfinished: bool = False,
        rearm: bool = True,
        restart_cap: bool = False,
        answer_within_s: float | None = None,
        pacing: PacingConfig | None = None,
    ) -> None:
        """Note ``count`` new messages in ``chat`` and restart its quiet wait.

        With ``rearm`` false they only join the wait already running as context (a
        bystander in a busy room): they neither move the deadline nor count toward
        ``max_batch``, since they cannot starve anyone. With ``restart_cap`` the caps count
        from these messages (the first question in a busy room gets a whole wait, not what
        is left of the room's). With ``answer_within_s`` these messages start the answer
        bound: however the wait goes on, it ends that long after them at the latest.
        ``pacing`` is the chat's own, where it has one (a profile's); else the default.
        """
        pacing = pacing or self._pacing
        loop = asyncio.get_running_loop()
        now = loop.time()
        state = self._waiting.get(chat)
        first_at = now if state is None or restart_cap else state.first_at
        total = count if state is None else state.count + count
        counted = count if state is None or restart_cap else state.counted + (count if rearm else 0)
        answer_by = math.inf if state is None else state.answer_by
        if answer_within_s is not None:
            answer_by = min(answer_by, now + answer_within_s)
        if counted >= pacing.max_batch:
            deadline, ended_by = now, WaitEnd.FULL_BATCH
        elif state is not None and not rearm:
            deadline, ended_by = state.deadline, state.ended_by
        else:
            deadline, ended_by = quiet_deadline(
                pacing,
                now=now,
                first_at=first_at,
                draw=self._rng.random(),
                unfinished=unfinished,
                answer_by=answer_by,
            )
        if state is None:
            handle = self._arm(loop, chat, deadline)
            self._waiting[chat] = _Waiting(
                first_at, total, counted, deadline, ended_by, deadline, handle, answer_by
            )
            return
        state.count = total
        state.counted = counted
        state.first_at = first_at
        state.deadline = deadline
        state.ended_by = ended_by
        state.answer_by = answer_by
        if deadline < state.armed_for:
            state.handle.cancel()
            state.handle = self._arm(loop, chat, deadline)
            state.armed_for = deadline

    def fire_all(self) -> None:
        """Answer every waiting chat now (used when the console input ends)."""
        for chat in list(self._waiting):
            self._waiting[chat].handle.cancel()
            self._answer(chat, WaitEnd.QUIET)

    def cancel_all(self) -> None:
        """Forget every wait; the messages stay stored and are re-armed on start."""
        for state in self._waiting.values():
            state.handle.cancel()
        self._waiting.clear()

    def _arm(
        self, loop: asyncio.AbstractEventLoop, chat: ChatKey, deadline: float
    ) -> asyncio.Handle:
        if deadline <= loop.time():  # a full batch: answer right away
            return loop.call_soon(self._fire, chat)
        return loop.call_at(deadline, self._fire, chat)

    def _fire(self, chat: ChatKey) -> None:
        state = self._waiting[chat]
        if state.deadline > state.armed_for:  # messages came since: wait for the latest
            loop = asyncio.get_running_loop()
            state.handle = self._arm(loop, chat, state.deadline)
            state.armed_for = state.deadline
            return
        self._answer(chat, state.ended_by)

    def _answer(self, chat: ChatKey, ended_by: WaitEnd) -> None:
        del self._waiting[chat]
        self._events.quiet(chat, ended_by)
