"""Read and change ``config.toml`` for the dashboard: its comments, order and layout kept.

A change is a set of keys to set (dotted, ``"pacing.debounce_min_s"``) and keys to unset
(back to their default). It is made on the TOML document (``tomlkit``), checked with the
same model as ``pacebot check`` (personas and profiles included), and only then written:
the file before it is kept under ``<data_dir>/config-backups/``, the new one replaces it
whole, the change is logged with who made it, and the running bot reloads it
(:class:`adapters.reload.Reloader`). A change that fails its check writes nothing and
names the key, the value and the form expected.

The file holds no secret (only the names of the environment variables that hold them),
so what it shows holds none either.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import tomlkit
from loguru import logger
from pydantic_core import to_jsonable_python
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from adapters.reload import Reloader
from bot.config.keys import config_keys
from bot.config.model import load_config, parse_config
from bot.config.personas import read_persona, read_profile_personas
from bot.config.settings import Reloaded, Settings, restart_only
from bot.errors import ConfigError

BACKUPS = "config-backups"


class ConfigRefused(Exception):
    """A change the config's rules refuse; ``key`` names the key at fault, if one is."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class ConfigView:
    """What the dashboard shows of the config: every key's running value, the keys whose
    value in the file waits for a restart, and the profiles."""

    values: dict[str, Any]
    restart_needed: tuple[str, ...]
    profiles: tuple[dict[str, Any], ...]


class ConfigFile:
    """The config file a running bot was started from."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        reloader: Reloader,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self._path = path
        self._settings = settings
        self._reloader = reloader
        self._now = now
        self._known = {key.key for key in config_keys()}

    def view(self) -> ConfigView:
        """Return the running values, what waits for a restart, and the profiles."""
        running = self._settings.current
        values = _flat(to_jsonable_python(running.model_dump(exclude={"profiles"})))
        values["profiles"] = to_jsonable_python(running.model_dump()["profiles"])
        waiting: tuple[str, ...] = ()
        try:
            in_file = _flat(to_jsonable_python(load_config(self._path).model_dump()))
            waiting = tuple(
                key
                for key, value in sorted(in_file.items())
                if restart_only(key) and values.get(key) != value
            )
        except ConfigError:  # the file no longer loads: its next change will say why
            pass
        return ConfigView(values, waiting, tuple(values["profiles"]))

    def change(self, to_set: Mapping[str, Any], to_unset: Sequence[str], *, by: str) -> Reloaded:
        """Set and unset keys in the file, check, back up, write, reload; log who did it.

        Raise :class:`ConfigRefused` (nothing written) when a key is unknown, a value
        breaks the config's rules, or the file cannot be read or written.
        """
        for key in [*to_set, *to_unset]:
            if key not in self._known:
                msg = f"{key}: unknown key; check its spelling against config.toml"
                raise ConfigRefused(msg, key=key)
        old = self._read()
        document = tomlkit.parse(old)
        for key, value in to_set.items():
            _put(document, key, value)
        for key in to_unset:
            _remove(document, key)
        new = tomlkit.dumps(document)
        self._check(new, changed=[*to_set, *to_unset])
        self._backup(old)
        self._write(new)
        logger.info("config.toml changed by {}: {}", by, ", ".join([*to_set, *to_unset]))
        return self._reloader.reload(by=by)

    def _read(self) -> str:
        try:
            return self._path.read_text(encoding="utf-8")
        except OSError as exc:
            msg = f"cannot read {self._path}: {exc.strerror}"
            raise ConfigRefused(msg) from None

    def _check(self, text: str, *, changed: Sequence[str]) -> None:
        """Check the changed file as ``pacebot check`` would; name the key at fault."""
        try:
            config = parse_config(tomlkit.parse(text).unwrap(), base_dir=self._path.parent)
            Settings(config, persona=read_persona(config), personas=read_profile_personas(config))
        except (ConfigError, TOMLKitError) as exc:
            problems = [line.removeprefix("  - ") for line in str(exc).splitlines()[1:]]
            problem = problems[0] if problems else str(exc)
            at_fault = next((key for key in changed if problem.startswith(key)), None)
            raise ConfigRefused(problem, key=at_fault) from None

    def _backup(self, old: str) -> None:
        """Keep the file as it was under ``<data_dir>/config-backups/``, dated."""
        backups = self._settings.bot.data_dir / BACKUPS
        stamp = f"{self._now().astimezone(self._settings.bot.zone):%Y%m%d-%H%M%S}"
        try:
            backups.mkdir(parents=True, exist_ok=True)
            (backups / f"config-{stamp}.toml").write_text(old, encoding="utf-8")
        except OSError as exc:
            msg = f"cannot keep a backup in {backups}: {exc.strerror}; nothing changed"
            raise ConfigRefused(msg) from None

    def _write(self, text: str) -> None:
        """Replace the file whole: a reader never sees half of it."""
        partial = self._path.with_name(f".{self._path.name}.new")
        try:
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self._path)
        except OSError as exc:
            msg = f"cannot write {self._path}: {exc.strerror}; nothing changed"
            raise ConfigRefused(msg) from None


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _put(document: tomlkit.TOMLDocument, key: str, value: Any) -> None:
    """Set a dotted key in the document, making its tables where they are missing."""
    *tables, name = key.split(".")
    container: Any = document
    for table in tables:
        if table not in container:
            container[table] = tomlkit.table()
        container = container[table]
        if not isinstance(container, Table | dict):
            msg = f"{key}: {table} is no table in config.toml"
            raise ConfigRefused(msg, key=key)
    container[name] = value


def _remove(document: tomlkit.TOMLDocument, key: str) -> None:
    """Remove a dotted key from the document, if it is there: it takes its default."""
    *tables, name = key.split(".")
    container: Any = document
    for table in tables:
        if table not in container:
            return
        container = container[table]
    if name in container:
        del container[name]
