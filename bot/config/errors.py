"""Say what is wrong with a config value in TOML's words: the key, the value, the form.

pydantic reports in Python's words ("Input should be a valid tuple", "a valid dictionary
or instance of BotConfig"). The operator wrote TOML, so an error names the key as they
wrote it, shows the value as it stands in the file, and names the expected form as TOML
does: an array, a table, a string in double quotes, a whole number, true or false.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_ARRAY = 'must be an array of strings, e.g. ["one", "two"]'
_FORMS = {
    "tuple_type": _ARRAY,
    "list_type": _ARRAY,
    "string_type": "must be a string in double quotes",
    "path_type": "must be a path in double quotes",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_too_short": "must not be empty",
}
"""The expected form for each pydantic error type that is about the kind of value."""
_TABLE_TYPES = frozenset({"model_type", "model_attributes_type", "dict_type"})
_ARRAY_TYPES = frozenset({"tuple_type", "list_type"})
_SECRET_KEY = re.compile(r"(^|_)(token|key|secret|password|passwd|apikey)s?$", re.IGNORECASE)
"""A key whose name says its value is a secret: it is never written back."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOUNDS = {
    "greater_than": ("gt", "must be more than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
}


def names_a_secret(name: str) -> bool:
    """Tell whether a key's name says its value is a secret (``token``, ``api_key``)."""
    return _SECRET_KEY.search(name) is not None


def toml_value(value: object) -> str:
    """Write ``value`` as it would stand in a TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | Path):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        pairs = ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    if isinstance(value, date | time):
        return value.isoformat()
    return str(value)


_TWICE = re.compile(r"Cannot declare \((.*)\) twice \(at line (\d+), column \d+\)")
_OVERWRITE = re.compile(r"Cannot overwrite a value \(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_ASSIGNED = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=")


def toml_error(path: Path, text: str, error: ValueError) -> str:
    """Say what is wrong with a file tomllib could not read, in an operator's words.

    A table declared twice (a README snippet pasted below the table it already holds)
    names the line of the first; a key set twice in a table names both lines.
    """
    message = str(error)
    lines = text.splitlines()
    twice = _TWICE.fullmatch(message)
    if twice:
        table = ".".join(part.strip().strip("'\"") for part in twice[1].split(",") if part.strip())
        again = int(twice[2])
        first = _header_line(lines, table, before=again)
        where = f"at line {first}" if first else "above (by a dotted key or a sub-table)"
        return (
            f"{path.name} already has [{table}] {where}: edit that table instead of"
            f" declaring it again at line {again}"
        )
    overwrite = _OVERWRITE.fullmatch(message)
    if overwrite and (found := _set_twice(lines, int(overwrite[1]))):
        key, first = found
        return (
            f"{path.name} sets {key} twice, at line {first} and at line {overwrite[1]}:"
            " keep one of them"
        )
    return f"{path} is not valid TOML: {message}"


def _header_line(lines: list[str], table: str, *, before: int) -> int | None:
    """Return the number of the line before line ``before`` that opens ``[table]``."""
    for number, line in enumerate(lines[: before - 1], start=1):
        header = _HEADER.match(line)
        if header and header[1].replace(" ", "") == table.replace(" ", ""):
            return number
    return None


def _set_twice(lines: list[str], again: int) -> tuple[str, int] | None:
    """Return the key line ``again`` sets (with its table) and the line that set it first."""

    def key_at(index: int) -> str | None:
        assigned = _ASSIGNED.match(lines[index])
        return assigned[1].replace(" ", "") if assigned else None

    if not 1 <= again <= len(lines) or (key := key_at(again - 1)) is None:
        return None
    table, first = "", None
    for index in range(again - 1):
        header = _HEADER.match(lines[index])
        if header:
            table, first = header[1].replace(" ", ""), None
        elif key_at(index) == key:
            first = index + 1
    return (f"{table}.{key}" if table else key, first) if first else None


def describe(error: Mapping[str, Any], *, model: type[BaseModel]) -> str:
    """Return one line for one validation error of ``model``: key, value, expected form."""
    loc = tuple(error["loc"])
    key = _key(loc)
    kind = error["type"]
    value = error.get("input")
    secret = _secret_advice(model, loc, kind, value)
    if secret is not None:
        return f"{key}: {secret}"
    shown = toml_value(value)
    if kind == "extra_forbidden":
        return f"{key}: unknown key (value {shown}); check its spelling against config.toml"
    if kind == "missing":
        return f"{key}: required"
    if kind in _TABLE_TYPES:
        return f"{key} = {shown}: must be a table: a line [{key}] with its keys below it"
    if kind in _ARRAY_TYPES and isinstance(value, str):  # the brackets were forgotten
        return f"{key} = {shown}: must be an array, e.g. [{shown}]"
    reason = _expected(error, default=_default(model, loc))
    if isinstance(value, Mapping):  # a check across a table's keys names those keys itself
        return reason
    return f"{key} = {shown}: {reason}"


def _secret_advice(
    model: type[BaseModel], loc: tuple[str | int, ...], kind: str, value: object
) -> str | None:
    """Say where a secret belongs, without its value, if the key at ``loc`` holds one.

    That is a key named like a secret (``token``, ``api_key``), or one that names an
    environment variable (``api_key_env``) but holds no such name: likely the secret.
    """
    names = [part for part in loc if isinstance(part, str)]
    name = names[-1] if names else ""
    unknown = "unknown key; " if kind == "extra_forbidden" else ""
    if name.endswith("_env"):
        if not isinstance(value, str) or not value or _ENV_NAME.fullmatch(value):
            return None
        return (
            f"{unknown}must be the name of an environment variable, e.g. PACEBOT_LLM_API_KEY,"
            " never the secret itself (its value is not shown here): put the secret in that"
            " variable"
        )
    if not names_a_secret(name) or _default(model, loc) is not None:
        return None
    table = _model_at(model, tuple(names[:-1]))
    envs = [field for field in table.model_fields if field.endswith("_env")] if table else []
    chosen = [env for env in envs if env == f"{name}_env"] or envs
    advice = f"{unknown}a secret never goes in config.toml (its value is not shown here): "
    if table is None or not chosen:
        return advice + (
            "delete this line and put it in an environment variable; the table it belongs"
            " to names that variable (e.g. llm.api_key_env, telegram.token_env)"
        )
    where = ".".join(names[:-1])
    places = []
    for env in chosen:
        default = table.model_fields[env].default
        example = default or f"PACEBOT_{where.replace('.', '_').upper()}_KEY"
        places.append(f"{where}.{env} ({example}{' by default' if default else ', say'})")
    return (
        advice
        + "delete this line and put the secret in the environment variable named by "
        + " or ".join(places)
    )


def _model_at(model: type[BaseModel], names: tuple[str, ...]) -> type[BaseModel] | None:
    """Return the table model at ``names`` (``()``: ``model`` itself), if there is one."""
    current: type[BaseModel] = model
    for name in names:
        field = current.model_fields.get(name)
        annotation = None if field is None else field.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        current = annotation
    return current


def _key(loc: tuple[str | int, ...]) -> str:
    names = ".".join(str(part) for part in loc if isinstance(part, str))
    items = [part for part in loc if isinstance(part, int)]
    return f"{names} (item {items[-1] + 1})" if items else names


def _expected(error: Mapping[str, Any], *, default: object) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in _FORMS:
        example = f", e.g. {toml_value(default)}" if _is_example(default, kind) else ""
        return _FORMS[kind] + example
    if kind in _BOUNDS:
        name, form = _BOUNDS[kind]
        return form.format(ctx[name])
    if kind == "literal_error":
        return "must be one of " + str(ctx["expected"]).replace("'", '"').replace(" or ", ", ")
    return str(error["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")


def _is_example(default: object, kind: str) -> bool:
    """Tell whether a field's default shows the expected form (not an empty string or array)."""
    if kind == "string_too_short" or kind in _ARRAY_TYPES or isinstance(default, bool):
        return False
    return isinstance(default, str | Path | int | float) and str(default) != ""


def _default(model: type[BaseModel], loc: tuple[str | int, ...]) -> object:
    """Return the default of the field at ``loc`` (None if there is none to show)."""
    default: object = None
    current: type[BaseModel] | None = model
    for part in loc:
        field = current.model_fields.get(part) if current and isinstance(part, str) else None
        if field is None:
            return None
        default = field.default
        annotation = field.annotation
        is_table = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        current = annotation if isinstance(annotation, type) and is_table else None
    return default
