"""The settings page's form: each key of ``config.toml`` as a row with a typed input, and a
posted form read back into the keys it changes.

A row's input holds what the file gives the key (its own value, else the default), so a
Save changes only what was typed: a posted key whose value equals that is no change, and
a key that waits for a restart keeps what the file holds. Arrays and tables are typed as
TOML (``["a", "b"]``, ``{ key = 1 }``) and read back with ``tomllib``. The keys that name
environment variables are shown by that name only and never read from a form: a secret
cannot be typed in; ``[plugins.config]`` is shown without the values of the settings named
like secrets (:mod:`adapters.config_file`), and is edited in the file.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_core import to_jsonable_python

from adapters.config_file import ConfigView
from bot.config.errors import toml_value
from bot.config.keys import ConfigKey, config_keys, config_tables
from bot.config.settings import restart_only

READ_ONLY_KINDS = frozenset({"env", "shown"})
LONG_TEXTS = frozenset({"bot.persona"})  # edited in a text area
LONG_TEXT_CHARS = 80  # a string longer than this is edited in a text area too
SHOWN_ONLY = frozenset({"plugins.config"})  # may hold a plugin's secret: edited in the file
_MISSING = object()

Say = Callable[..., str]
"""The page's words: ``say("form_integer")``."""


@dataclass(frozen=True, slots=True)
class Row:
    """One key on the settings page."""

    key: str  # dotted: "pacing.debounce_min_s"
    name: str  # within its table: "debounce_min_s"
    kind: str  # switch, integer, float, choice, text, long, path, toml; env, shown (read only)
    description: str
    default: str  # as TOML
    value: str  # what the input holds: the file's value (read only: the running one)
    initial: str  # what the file gives the key: a Save sends the key only if it changed
    choices: tuple[str, ...]
    needs_restart: bool  # read once at start-up
    waiting: str | None  # the running value, while the file's waits for a restart
    in_file: bool  # the file sets it: it can be reset to its default
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """A table of ``config.toml`` with its keys."""

    table: str  # dotted; "" for the keys outside every table
    description: str
    rows: tuple[Row, ...]


@dataclass
class Posted:
    """What a posted form asks: the keys to set and unset, what was typed, what is wrong."""

    to_set: dict[str, Any] = field(default_factory=dict)
    to_unset: list[str] = field(default_factory=list)
    typed: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> list[str]:
        return [*self.to_set, *self.to_unset]


def kind_of(key: ConfigKey, value: object) -> str:
    """Return the input a key is edited with."""
    if key.key.endswith("_env"):
        return "env"
    if key.key in SHOWN_ONLY:
        return "shown"
    if key.choices:
        return "choice"
    simple = {"boolean": "switch", "integer": "integer", "float": "float", "path": "path"}
    if key.type in simple:
        return simple[key.type]
    if key.type == "string":
        long = key.key in LONG_TEXTS or "\n" in str(value) or len(str(value)) > LONG_TEXT_CHARS
        return "long" if long else "text"
    return "toml"


def as_text(value: object) -> str:
    """Write a value as its input holds it: a string as it is, anything else as TOML."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return toml_value(_without_none(value))


def tables(
    view: ConfigView,
    *,
    typed: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> list[Table]:
    """Return every table with its rows, in the order the model declares its keys (the
    keys outside every table, ``[[profiles]]``, last, as in ``config.toml``); an input
    holds what was ``typed`` where the form was refused, with its error beside it."""
    typed, errors = typed or {}, errors or {}
    rows: dict[str, list[Row]] = {}
    for key in config_keys():
        found = row(key, view, typed=typed.get(key.key))
        if key.key in errors:
            found = replace(found, error=errors[key.key])
        rows.setdefault(key.key.rpartition(".")[0], []).append(found)
    described = {table.table: table.description for table in config_tables()}
    return [Table(name, described.get(name, ""), tuple(found)) for name, found in rows.items()]


def row(key: ConfigKey, view: ConfigView, *, typed: str | None = None) -> Row:
    """Return a key's row: what the file gives it, and what runs while that waits."""
    default = to_jsonable_python(key.default)
    running = _at(view.running, key.key)
    if view.in_file is None:
        given, in_file = running, False
    else:
        found = _at(view.in_file, key.key)
        given, in_file = (default, False) if found is _MISSING else (found, True)
    initial = as_text(given)
    waiting = as_text(running) if key.key in view.restart_needed else None
    return Row(
        key=key.key,
        name=key.key.rpartition(".")[2],
        kind=kind_of(key, given),
        description=key.description,
        default='""' if default == "" else as_text(default) or "—",
        value=initial if typed is None else typed,
        initial=initial,
        choices=key.choices,
        needs_restart=restart_only(key.key),
        waiting=waiting,
        in_file=in_file,
    )


def read_form(posted: Mapping[str, Sequence[str]], view: ConfigView, say: Say) -> Posted:
    """Read the keys a posted form changes from what the file gives them; a value that
    cannot be read is an error beside its key (then nothing is changed)."""
    read = Posted()
    for key in config_keys():
        sent = posted.get(key.key)
        found = row(key, view)
        if not sent or found.kind in READ_ONLY_KINDS:
            continue
        text = sent[-1]  # a switch sends "false", then "true" when it is ticked
        read.typed[key.key] = text
        try:
            value = parse(found, text, say)
        except ValueError as exc:
            read.errors[key.key] = str(exc)
            continue
        before = _at(view.in_file, key.key) if view.in_file is not None else _MISSING
        if before is _MISSING:
            before = to_jsonable_python(key.default)
        if value is None and before is not None:
            read.to_unset.append(key.key)
        elif value != before:
            read.to_set[key.key] = value
    return read


def parse(found: Row, text: str, say: Say) -> Any:
    """Read what was typed into a key's input; raise ``ValueError`` saying the form
    expected, in the page's words."""
    kind = found.kind
    if kind == "switch":
        if text not in ("true", "false"):
            raise ValueError(say("form_switch"))
        return text == "true"
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(say("form_integer")) from None
    if kind == "float":
        return _number(text, say)
    if kind == "choice":
        if text not in found.choices:
            raise ValueError(say("form_choice", choices=", ".join(found.choices)))
        return text
    if kind == "path":
        return text.strip() or None  # empty: no file, the key's default
    if kind == "toml":
        return _toml(text, say)
    return text.replace("\r\n", "\n")  # a text area sends its lines with CR LF


def _number(text: str, say: Say) -> float:
    try:
        number = float(text.strip())
    except ValueError:
        raise ValueError(say("form_number")) from None
    if not math.isfinite(number):
        raise ValueError(say("form_number"))
    return number


def _toml(text: str, say: Say) -> Any:
    """Read a TOML value (an array, an inline table); nothing else may come with it."""
    try:
        read = tomllib.loads(f"value = {text.strip()}")
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(say("form_toml", problem=str(exc))) from None
    if list(read) != ["value"]:
        raise ValueError(say("form_toml", problem="more than one value"))
    return read["value"]


def _at(tree: Mapping[str, Any], key: str) -> Any:
    """Return the value at a dotted key of nested tables; ``_MISSING`` if it is not set."""
    found: Any = tree
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return _MISSING
        found = found[part]
    return found


def _without_none(value: Any) -> Any:
    """Leave out what is unset (``None``), which TOML cannot write."""
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(item) for item in value]
    return value
