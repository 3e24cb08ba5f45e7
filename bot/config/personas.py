"""The persona texts a config names: written in it, or read from a file beside it.

The base persona is ``bot.persona`` or ``bot.persona_file``; a profile's is its own
``persona``, its ``persona_file``, or else the base one. Files are read when the config is
loaded and at each reload (:class:`bot.config.settings.Settings` holds the texts), never while a
batch is answered.
"""

from __future__ import annotations

from pathlib import Path

from bot.config.errors import toml_value
from bot.config.model import Config
from bot.config.profiles import PROFILES_KEY
from bot.errors import ConfigError


def read_persona(config: Config) -> str:
    """Return the initial persona text, from ``persona_file`` when one is set."""
    if config.bot.persona_file is None:
        return config.bot.persona
    return _persona_from(config.bot.persona_file, key="bot.persona_file")


def read_profile_personas(config: Config) -> dict[str, str]:
    """Return the persona text of each profile that reads it from a file, by name."""
    return {
        profile.name: _persona_from(
            profile.persona_file,
            key=f"{PROFILES_KEY} (name {toml_value(profile.name)}).persona_file",
        )
        for profile in config.profiles
        if profile.persona_file is not None
    }


def _persona_from(path: Path, *, key: str) -> str:
    """Read a persona file; raise ``ConfigError`` naming ``key`` when it cannot be had."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        msg = f"{key} = {toml_value(path)}: cannot read it ({exc.strerror})"
        raise ConfigError(msg) from None
    except UnicodeDecodeError as exc:
        msg = (
            f"{key} = {toml_value(path)}: not UTF-8 text"
            f" (byte {exc.start} cannot be decoded); save it as UTF-8"
        )
        raise ConfigError(msg) from None
    if not text:
        msg = f"{key} = {toml_value(path)}: the file is empty"
        raise ConfigError(msg)
    return text
