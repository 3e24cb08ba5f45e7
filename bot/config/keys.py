"""List the keys of ``config.toml`` as the model declares them: each with its type, its
default and the description its field's docstring gives.

``docs/configuration.md`` is tested against this list, and a settings page can be drawn
from it.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from bot.config.model import Config

_TYPES: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "float",
    bool: "boolean",
    Path: "path",
}
"""The type of a value, in TOML's words ("path" is a string naming a file or directory)."""


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key of ``config.toml``."""

    key: str  # dotted, the table first: "pacing.debounce_min_s", "llm.splitter.model"
    type: str  # "string", "integer", "float", "boolean", "path", "array of strings",
    # "array of tables", or the values a string may take: '"cancel" | "finish"'
    default: object  # as the model holds it; None = unset
    description: str
    choices: tuple[str, ...] = ()  # the values a string may take, when it may take only some


@dataclass(frozen=True, slots=True)
class ConfigTable:
    """One table of ``config.toml``, as its field's docstring describes it."""

    table: str  # dotted: "llm", "llm.splitter"; "" for the keys outside every table
    description: str


def config_keys(model: type[BaseModel] = Config, *, table: str = "") -> list[ConfigKey]:
    """Return every key of ``model`` in the order it declares them, a nested table's keys
    in its place, each named with ``table`` before it."""
    keys: list[ConfigKey] = []
    for name, field in model.model_fields.items():
        key = f"{table}.{name}" if table else name
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.extend(config_keys(annotation, table=key))
        else:
            description = " ".join((field.description or "").split())  # one line
            default = field.get_default(call_default_factory=True)
            keys.append(
                ConfigKey(key, type_name(annotation), default, description, choices(annotation))
            )
    return keys


def config_tables(model: type[BaseModel] = Config, *, table: str = "") -> list[ConfigTable]:
    """Return every table of ``model`` in the order it declares them, a nested table
    right after its parent; the keys outside every table come first, as table ``""``."""
    tables = [ConfigTable(table, "")] if not table else []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            key = f"{table}.{name}" if table else name
            tables.append(ConfigTable(key, " ".join((field.description or "").split())))
            tables.extend(config_tables(annotation, table=key))
    return tables


def choices(annotation: object) -> tuple[str, ...]:
    """Return the values a ``Literal`` key may take; ``()`` for any other key."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return choices(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return tuple(str(value) for value in typing.get_args(annotation))
    return ()


def type_name(annotation: object) -> str:
    """Name the type of a key's value in TOML's words."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:  # a value with a check of its own: its type is the first
        return type_name(arguments[0])
    if origin is dict:
        return "table"
    if origin is typing.Literal:
        return " | ".join(f'"{value}"' for value in arguments)
    if origin in {typing.Union, types.UnionType}:  # an optional value: X | None
        return " | ".join(type_name(each) for each in arguments if each is not type(None))
    if origin is tuple:
        item = arguments[0]
        is_table = isinstance(item, type) and issubclass(item, BaseModel)
        return "array of tables" if is_table else f"array of {type_name(item)}s"
    return _TYPES[annotation]
