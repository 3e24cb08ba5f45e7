"""Read and change ``config.toml`` for the dashboard: its comments, order and layout kept.

:class:`RunningConfig` shows what a running bot runs with (a bot started from no file,
a test's, shows only that); :class:`ConfigFile` adds the file it was started from and
changes it. A change is a set of keys to set (dotted, ``"pacing.debounce_min_s"``) and
keys to unset (back to their default), or a profile's keys by the profile's name. It is
made on the TOML document (``tomlkit``; a text of several lines is written as a
multi-line string), checked with the same model as ``pacebot check`` (personas and
profiles included), and only then written:
the file before it is kept under ``<data_dir>/config-backups/``, the new one replaces it
whole, the change is logged with who made it, and the running bot reloads it
(:class:`adapters.reload.Reloader`). A change that fails its check writes nothing and
names the key, the value and the form expected.

The file holds no secret (only the names of the environment variables that hold them),
so what it shows holds none either; the one table where an operator could still write one,
``[plugins.config]`` (a plugin's settings), is shown without the values of the settings
named like secrets.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import tomlkit
from loguru import logger
from pydantic_core import to_jsonable_python
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table

from adapters.reload import Reloader
from bot.config.errors import names_a_secret
from bot.config.keys import config_keys
from bot.config.model import load_config, parse_config
from bot.config.personas import read_persona, read_profile_personas
from bot.config.profiles import PROFILES_KEY, Profile
from bot.config.settings import Reloaded, Settings, restart_only
from bot.errors import ConfigError

BACKUPS = "config-backups"
HIDDEN = "(not shown: named like a secret)"
"""What stands for the value of a plugin setting named like a secret."""


class ConfigRefused(Exception):
    """A change the config's rules refuse; ``key`` names the key at fault, if one is."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class ConfigView:
    """What the dashboard shows of the config: every key's running value, the keys whose
    value in the file waits for a restart, and the profiles; the running values and what
    the file itself sets as nested tables, and why the file does not load, if it does not."""

    values: dict[str, Any]
    restart_needed: tuple[str, ...]
    profiles: tuple[dict[str, Any], ...]
    running: dict[str, Any]
    in_file: dict[str, Any] | None = None  # as written; None: no file, or not TOML now
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Persona:
    """A persona the bot runs with: the base one, or a profile's."""

    profile: str | None  # None: the base persona
    chats: tuple[str, ...]  # the profile's chat patterns
    text: str  # what the prompt starts with now
    file: Path | None  # where the text is read from; None: written in config.toml
    own: bool  # False: a profile with no persona of its own runs with the base one


class RunningConfig:
    """The configuration a running bot runs with, to be read."""

    editable = False

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def view(self) -> ConfigView:
        """Return the running values, and the profiles."""
        running = _shown(to_jsonable_python(self._settings.current.model_dump()))
        values = _flat({key: value for key, value in running.items() if key != PROFILES_KEY})
        values[PROFILES_KEY] = running[PROFILES_KEY]
        return ConfigView(values, (), tuple(running[PROFILES_KEY]), running)

    def personas(self) -> list[Persona]:
        """Return the base persona, then each profile's, in the order they are tried."""
        settings = self._settings
        config = settings.current
        resolved = {profile.name: profile for profile in settings.profiles}
        found = [Persona(None, (), settings.persona, config.bot.persona_file, own=True)]
        for profile in config.profiles:
            own = profile.persona is not None or profile.persona_file is not None
            text = settings.persona_of(resolved[profile.name])
            found.append(Persona(profile.name, profile.chats, text, profile.persona_file, own))
        return found


class ConfigFile(RunningConfig):
    """The config file a running bot was started from."""

    editable = True

    def __init__(
        self,
        path: Path,
        settings: Settings,
        reloader: Reloader,
        *,
        now: Callable[[], datetime],
    ) -> None:
        super().__init__(settings)
        self._path = path
        self._reloader = reloader
        self._now = now
        self._known = {key.key for key in config_keys()}

    @property
    def path(self) -> Path:
        """The config file."""
        return self._path

    def view(self) -> ConfigView:
        """Return the running values, what waits for a restart, the profiles, and what the
        file sets."""
        shown = super().view()
        try:
            document = _parse(self._read()).unwrap()
        except ConfigRefused as exc:
            return replace(shown, problem=str(exc))
        try:
            in_file = _flat(to_jsonable_python(load_config(self._path).model_dump()))
        except ConfigError as exc:  # the file no longer loads: its next change will say why
            return replace(shown, in_file=_shown(document), problem=str(exc))
        running = _flat(to_jsonable_python(self._settings.current.model_dump()))
        waiting = tuple(
            key
            for key, value in sorted(in_file.items())
            if restart_only(key) and running.get(key) != value
        )
        return replace(shown, restart_needed=waiting, in_file=_shown(document))

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
        document = _parse(old)
        for key, value in to_set.items():
            _put(document, key, value)
        for key in to_unset:
            _remove(document, key)
        changed = [*to_set, *to_unset]
        return self._commit(old, document, changed=changed, named=changed, by=by)

    def change_profile(
        self, name: str, to_set: Mapping[str, Any], to_unset: Sequence[str], *, by: str
    ) -> Reloaded:
        """Set and unset keys of the profile named ``name``, in its place in the file, then
        check, back up, write and reload as :meth:`change` does."""
        for key in [*to_set, *to_unset]:
            if key not in Profile.model_fields:
                msg = f"{PROFILES_KEY}: {key}: unknown key of a profile"
                raise ConfigRefused(msg, key=PROFILES_KEY)
        old = self._read()
        document = _parse(old)
        profile = _profile_in(document, name)
        for key, value in to_set.items():
            profile[key] = _value(value, inline=isinstance(profile, InlineTable))
        for key in to_unset:
            if key in profile:
                del profile[key]
        named = [f"{PROFILES_KEY} ({name}).{key}" for key in [*to_set, *to_unset]]
        return self._commit(old, document, changed=[PROFILES_KEY], named=named, by=by)

    def _commit(
        self,
        old: str,
        document: tomlkit.TOMLDocument,
        *,
        changed: Sequence[str],
        named: Sequence[str],
        by: str,
    ) -> Reloaded:
        """Check the changed document, keep the old file, write the new, log, reload."""
        new = tomlkit.dumps(document)
        self._check(new, changed=changed)
        self._backup(old)
        self._write(new)
        logger.info("config.toml changed by {}: {}", by, ", ".join(named))
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
            kept = backups / f"config-{stamp}.toml"
            for again in itertools.count(2):  # two saves in one second keep both files
                if not kept.exists():
                    break
                kept = backups / f"config-{stamp}-{again}.toml"
            kept.write_text(old, encoding="utf-8")
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


def _parse(text: str) -> tomlkit.TOMLDocument:
    """Read the file's text as a TOML document; refuse a text that is no TOML."""
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        msg = f"config.toml does not read as TOML now ({exc}); mend it in the file"
        raise ConfigRefused(msg) from None


def _shown(tree: dict[str, Any]) -> dict[str, Any]:
    """Return the config's nested values with each plugin setting named like a secret
    hidden."""
    plugins = tree.get("plugins")
    settings = plugins.get("config") if isinstance(plugins, Mapping) else None
    if not isinstance(plugins, Mapping) or not isinstance(settings, Mapping):
        return tree
    hidden = {key: HIDDEN if names_a_secret(key) else value for key, value in settings.items()}
    return {**tree, "plugins": {**plugins, "config": hidden}}


def _profile_in(document: tomlkit.TOMLDocument, name: str) -> Any:
    """Return the table of the profile named ``name`` in the document."""
    for profile in document.get(PROFILES_KEY, []):
        if isinstance(profile, Mapping) and profile.get("name") == name:
            return profile
    msg = f"{PROFILES_KEY}: no profile is named {name!r} in config.toml"
    raise ConfigRefused(msg, key=PROFILES_KEY)


def _value(value: Any, *, inline: bool) -> Any:
    """Return ``value`` as the document should hold it: a text of several lines as a
    multi-line string, except inside an inline table (which stays on one line)."""
    if isinstance(value, str) and "\n" in value and not inline:
        return tomlkit.string(value, multiline=True)
    return value


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
    container[name] = _value(value, inline=isinstance(container, InlineTable))


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
