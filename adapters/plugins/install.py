"""``pacebot plugin install NAME`` and ``pacebot plugin list``.

``install`` runs ``pip install NAME`` with pacebot's own interpreter (``sys.executable``:
the plugin lands where ``pacebot run`` imports from), finds the module the package
installed, and adds it to ``[plugins] nonebot`` of the config file, comments and order
kept (tomlkit). ``list`` loads the plugins the config names the way ``pacebot run`` does
(nonebot set up, nothing served) and prints each with its matchers' commands.

A failure is one line on stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import tomlkit
from tomlkit.items import Array, Table

from adapters import shell
from bot.commands.menu import parse_command
from bot.config.model import Config, load_config
from bot.errors import ConfigError, PacebotError

# A requirement as pip takes it on the command line: a name, extras, a version; never an
# option (a leading "-") and never more than one word.
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?([<>=!~].*)?$")


def install(path: Path, requirement: str) -> int:
    """Install a plugin into pacebot's environment and name it in ``[plugins] nonebot``."""
    try:
        load_config(path)  # a config that cannot take the plugin fails before pip runs
        if not _REQUIREMENT.match(requirement) or " " in requirement:
            msg = (
                f"{requirement!r} is not a package name pip takes, e.g. nonebot-plugin-status "
                "or nonebot-plugin-status==0.9.0"
            )
            raise ConfigError(msg)
        _pip_install(requirement)
        module = plugin_module(_project_name(requirement))
        added = add_to_config(path, module)
    except (PacebotError, OSError) as error:
        return shell.failed(error)
    where = f"[plugins] nonebot of {path}"
    if added:
        print(f"added {module} to {where}; restart pacebot to load it (QQ only)")
    else:
        print(f"{module} is in {where} already")
    return 0


def _pip_install(requirement: str) -> None:
    """Run pip with pacebot's interpreter, its output on the terminal."""
    command = [sys.executable, "-m", "pip", "install", requirement]
    try:
        done = subprocess.run(command, check=False)
    except OSError as error:
        msg = f"could not run pip with {sys.executable}: {error.strerror}"
        raise ConfigError(msg) from None
    if done.returncode != 0:
        msg = f"pip could not install {requirement} (exit code {done.returncode})"
        raise ConfigError(msg)


def _project_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~]", requirement, maxsplit=1)[0]


def plugin_module(project: str) -> str:
    """Return the module an installed package brings (a plugin's, if it brings several)."""
    wanted = _normalised(project)
    modules = sorted(
        module
        for module, projects in metadata.packages_distributions().items()
        if any(_normalised(name) == wanted for name in projects)
        and module.isidentifier()
        and not module.startswith("_")
    )
    if not modules:
        return project.replace("-", "_").replace(".", "_")
    plugins = [module for module in modules if module.startswith("nonebot_plugin")]
    return (plugins or modules)[0]


def _normalised(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


def add_to_config(path: Path, module: str) -> bool:
    """Add ``module`` to ``[plugins] nonebot`` in the file at ``path``, keeping its comments
    and order; ``False`` if it is there already. The file is replaced in one step."""
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    plugins = document.get("plugins")
    if plugins is None:
        plugins = tomlkit.table()
        document.append("plugins", plugins)
    if not isinstance(plugins, Table):
        msg = f"{path}: [plugins] must be a table to add {module} to it"
        raise ConfigError(msg)
    modules = plugins.get("nonebot")
    if modules is None:
        modules = tomlkit.array()
        plugins["nonebot"] = modules
    if not isinstance(modules, Array):
        msg = f"{path}: plugins.nonebot must be an array to add {module} to it"
        raise ConfigError(msg)
    if module in modules:
        return False
    modules.append(module)
    written = path.with_name(path.name + ".new")
    written.write_text(tomlkit.dumps(document), encoding="utf-8")
    os.replace(written, path)
    return True


def show(path: Path) -> int:
    """Print each plugin the config names, loaded as ``pacebot run`` loads it, with what
    sets off its matchers; 1 if any does not load."""
    try:
        config = load_config(path)
        if not config.plugins.nonebot:
            print(f"no plugin in [plugins] nonebot of {path}")
            return 0
        lines, all_loaded = _listing(config)
    except (PacebotError, OSError) as error:
        return shell.failed(error)
    print("\n".join(lines))
    return 0 if all_loaded else 1


def _listing(config: Config) -> tuple[list[str], bool]:
    from adapters.plugins.loading import load_plugins
    from adapters.qq.wire import onebot_adapter

    onebot_adapter()  # sets nonebot up as a QQ run does
    states = load_plugins(config).states
    lines = []
    for state in states:
        if not state.loaded:
            lines.append(f"{state.module}  not loaded: {state.problem}")
            continue
        named = f"  ({state.name})" if state.name != state.module else ""
        lines.append(f"{state.module}{named}")
        lines += [f"  {matcher}" for matcher in state.matchers] or ["  no matchers"]
        shadowed = [
            trigger
            for matcher in state.matchers
            for trigger in matcher.triggers
            if parse_command(trigger) is not None
        ]
        lines += [
            f"  {trigger} is pacebot's own command: it never reaches the plugin"
            for trigger in shadowed
        ]
    return lines, all(state.loaded for state in states)
