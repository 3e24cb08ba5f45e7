"""The ``[groups]`` and ``[budget]`` sections: how the bot joins a group's talk, with a
table of overrides per group, and what its LLM calls may spend."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, model_validator

from bot.config.errors import describe, toml_value
from bot.config.values import (
    GroupChatKey,
    Interests,
    NonNegativeSeconds,
    PositiveSeconds,
    Price,
    QuietHours,
    ReplyMode,
    Section,
    Tokens,
)
from bot.hours import Window, window_minutes
from bot.models import ChatKey

OVERRIDE_KEY = "groups.override"


class GroupSettings(Section):
    """What a group's batches are answered by: the keys an override may set per group."""

    reply_mode: ReplyMode = "mention"
    """When a group batch is answered: addressed only, always, or when the gate lets it."""
    interests: Interests = ()
    """Words and phrases the bot cares about: one in a message is a reason to speak."""
    talk_value: float = Field(default=0.3, ge=0, le=1)
    """The chance, 0 to 1, that a batch with a reason to speak goes to the LLM."""
    unaddressed_calls_per_hour: int = Field(default=6, ge=0)
    """The most LLM calls per group in any hour for batches nobody addressed."""
    max_share: float = Field(default=0.25, ge=0, le=1)
    """Stay out while the bot wrote more than this share, 0 to 1, of the last 40 messages."""
    quiet_hours: QuietHours = ""
    """Local times ``HH:MM-HH:MM`` (``bot.timezone``) without unaddressed replies; "" = none."""
    continue_s: NonNegativeSeconds = 4.0
    """After an @, the asker's unaddressed lines re-arm the wait only while each comes
    within this many seconds of their previous line (still typing the question)."""
    answer_within_s: PositiveSeconds = 20.0
    """An addressed group batch is answered at most this many seconds after its first
    addressed message, however the room goes on (``pacing.max_wait_s`` still caps it)."""

    @property
    def quiet_window(self) -> Window | None:
        """``quiet_hours`` as minutes of the local day; ``None`` when there are none."""
        return window_minutes(self.quiet_hours)


class GroupOverride(GroupSettings):
    """One ``[[groups.override]]``: the settings of one group, each key it leaves out
    taken from ``[groups]``."""

    chat: GroupChatKey
    """The group, by its chat key ``platform:group:id`` (a forum's, without a topic)."""


class GroupsConfig(GroupSettings):
    store_unaddressed: bool = True
    """Keep unaddressed group messages as context."""
    override: tuple[GroupOverride, ...] = ()
    """Per-group settings, by the group's chat key; they cover every topic of a forum."""

    @model_validator(mode="after")
    def _one_override_per_group(self) -> Self:
        seen: set[str] = set()
        for number, override in enumerate(self.override, start=1):
            if override.chat in seen:
                msg = (
                    f"{OVERRIDE_KEY} (item {number}): chat = {toml_value(override.chat)}"
                    " has an override already; merge the two into one"
                )
                raise ValueError(msg)
            seen.add(override.chat)
        return self

    @functools.cached_property
    def _by_room(self) -> dict[str, GroupSettings]:
        shared = set(GroupSettings.model_fields)
        merged: dict[str, GroupSettings] = {}
        for override in self.override:
            given = {key: getattr(override, key) for key in override.model_fields_set & shared}
            base = GroupSettings.model_validate(self.model_dump(include=shared))
            merged[override.chat] = base.model_copy(update=given)
        return merged

    def for_chat(self, chat: ChatKey) -> GroupSettings:
        """Return the settings of ``chat``'s group: ``[groups]`` with its override applied.

        A forum topic takes its group's override: overrides match the whole group.
        """
        return self._by_room.get(str(chat.room), self)


class BudgetConfig(Section):
    daily_tokens: Tokens = 0
    """Soft cap, in tokens per chat day for the whole bot: over it optional calls stop; 0 = none."""
    hard_daily_tokens: Tokens = 0
    """Hard cap, in tokens per chat day: over it no call is made until the next; 0 = none."""
    chat_daily_tokens: Tokens = 0
    """Soft cap, in tokens per chat and chat day; 0 = none."""
    price_in_per_million: Price = 0.0
    """What a million input (prompt) tokens cost, in ``currency``."""
    price_out_per_million: Price = 0.0
    """What a million output (completion) tokens cost, in ``currency``."""
    currency: str = Field(default="USD", min_length=1, max_length=12)
    """The label the cost figures carry, e.g. USD or CNY."""


def describe_override(error: Mapping[str, Any], data: Mapping[str, Any]) -> str | None:
    """Describe a validation error of ``[[groups.override]]``, naming its item and its
    chat; ``None`` for an error elsewhere."""
    loc = tuple(error["loc"])
    if loc == ("groups", "override") and error["type"] in {"tuple_type", "list_type"}:
        return (
            f"{OVERRIDE_KEY}: write each group's settings as [[{OVERRIDE_KEY}]]"
            ' (double brackets), with chat = "platform:group:id" in it'
        )
    if loc[:2] != ("groups", "override") or len(loc) < 4 or not isinstance(loc[2], int):
        return None
    key = loc[3]
    where = f"{OVERRIDE_KEY} (item {loc[2] + 1}"
    chat = _override_chat(data, loc[2])
    if key != "chat" and chat is not None:
        where += f", chat {toml_value(chat)}"
    if key == "store_unaddressed" and error["type"] == "extra_forbidden":
        return f"{where}): store_unaddressed is set for every group under [groups], not per group"
    return f"{where}): {describe({**error, 'loc': loc[3:]}, model=GroupOverride)}"


def _override_chat(data: Mapping[str, Any], index: int) -> object:
    """Return the ``chat`` an override of the raw document names, if it names one."""
    groups = data.get("groups")
    overrides = groups.get("override") if isinstance(groups, Mapping) else None
    if isinstance(overrides, list) and index < len(overrides):
        item = overrides[index]
        return item.get("chat") if isinstance(item, Mapping) else None
    return None
