"""Reload ``config.toml`` into the running bot: SIGHUP, ``pacebot reload``, the dashboard.

:class:`Reloader` reads and checks the file with the same model as ``pacebot check``
(personas and profiles included) and swaps it into the running
:class:`~bot.config.settings.Settings`: what is live applies from the next batch, what needs a
restart keeps its running value and is named. An invalid file changes nothing; why is
logged in TOML's words and raised to the caller.

``pacebot run`` writes its process id to ``<data_dir>/pacebot.pid`` while it runs, so that
``pacebot reload`` (:func:`ask_to_reload`) finds the process to signal; the file goes when
the run ends. The command imports no more than the config needs: it starts in a blink.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from loguru import logger

from bot.config.model import Config, load_config
from bot.config.personas import read_persona, read_profile_personas
from bot.config.settings import Reloaded, Settings
from bot.errors import ConfigError, PacebotError

PID_FILE = "pacebot.pid"


def running_settings(config: Config) -> Settings:
    """Return the settings to run ``config`` with: its persona files read, its profiles
    applied (raise ``ConfigError`` when one cannot be)."""
    return Settings(config, persona=read_persona(config), personas=read_profile_personas(config))


class Reloader:
    """Reload one config file into the running settings."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self._path = path
        self._settings = settings

    @property
    def path(self) -> Path:
        """The config file the bot runs from."""
        return self._path

    def reload(self, *, by: str) -> Reloaded:
        """Read, check and apply the file; log what changed and who asked. Raise
        ``ConfigError`` (and log it) when the file is invalid: nothing changes then."""
        try:
            config = load_config(self._path)
            reloaded = self._settings.reload(
                config, persona=read_persona(config), personas=read_profile_personas(config)
            )
        except ConfigError as exc:
            logger.warning("reload asked by {} refused, nothing changed: {}", by, exc)
            raise
        logger.info(
            "reload asked by {}: {} applied from the next batch{}",
            by,
            ", ".join(reloaded.applied) or "nothing changed",
            f"; needs a restart, kept as it runs: {', '.join(reloaded.restart_needed)}"
            if reloaded.restart_needed
            else "",
        )
        return reloaded


@contextlib.contextmanager
def pid_file(config: Config) -> Iterator[Path]:
    """Write this process's id to ``<data_dir>/pacebot.pid`` while the block runs."""
    path = config.bot.data_dir / PID_FILE
    path.write_text(f"{os.getpid()}\n", encoding="utf-8")
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            if path.read_text(encoding="utf-8").strip() == str(os.getpid()):
                path.unlink()


def signal_running(config: Config) -> int:
    """Send SIGHUP to the ``pacebot run`` of ``config``; return its process id. Raise
    ``ConfigError`` when no run of this config is found."""
    path = config.bot.data_dir / PID_FILE
    try:
        pid = int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        msg = f"no pacebot run of this config is running (no process id in {path})"
        raise ConfigError(msg) from None
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        msg = f"no pacebot run of this config is running (process {pid} of {path} is gone)"
        raise ConfigError(msg) from None
    except PermissionError:
        msg = f"process {pid} of {path} belongs to another user; run pacebot reload as that user"
        raise ConfigError(msg) from None
    return pid


def ask_to_reload(path: Path) -> int:
    """``pacebot reload``: check ``path`` as a reload would, then signal the ``pacebot run`` of
    it; say why and return 1 if either fails."""
    try:
        config = load_config(path)
        running_settings(config)  # the same checks as a reload: personas, profiles
        pid = signal_running(config)
    except (PacebotError, OSError) as exc:
        print(f"pacebot: {exc}", file=sys.stderr)
        return 1
    print(f"asked pacebot (process {pid}) to reload {path}; its log says what changed")
    return 0
