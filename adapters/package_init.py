"""A library's submodules imported without its package ``__init__``, until something asks.

Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` first, and some
packages import everything they have there: the ``mcp`` SDK's imports its server side
(sse-starlette, JWT and cryptography, OpenTelemetry's exporters) into a process that is
only ever a client. :func:`defer_package_init` registers such a package as a module
whose ``__init__`` has not run, so that importing one of its submodules loads that
submodule and what it imports, nothing else. The first time anything asks the package
itself for a name (``from mcp import ClientSession``, say in a nonebot plugin) its
``__init__`` runs then, and the name is there as it would have been.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable
from importlib.abc import Loader
from types import ModuleType

_completing = threading.Lock()  # a deferred __init__ runs once, from whichever thread asks


def defer_package_init(name: str) -> None:
    """Register the installed package ``name`` with its ``__init__`` not run yet (its
    parent package first, as an import would); do nothing if it is loaded already or
    not installed (an import of it then goes as it would)."""
    if name in sys.modules:
        return
    parent, _, child = name.rpartition(".")
    if parent:
        defer_package_init(parent)
        if parent not in sys.modules:
            return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    package.__getattr__ = _completer(package, spec.loader)  # type: ignore[method-assign]  # PEP 562
    sys.modules[name] = package
    if parent:
        setattr(sys.modules[parent], child, package)


def _completer(package: ModuleType, loader: Loader) -> Callable[[str], object]:
    """Return the module ``__getattr__`` that runs the package's ``__init__`` when a name
    it would have defined is asked for."""

    def complete(attribute: str) -> object:
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(attribute)  # introspection asks these of every module
        with _completing:
            if package.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(package)
        return getattr(package, attribute)

    return complete
