"""A library's submodules imported without its package ``__init__``, until something asks.

Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` first, and some
packages import everything they have there: the ``mcp`` SDK's imports its server side
(sse-starlette, JWT and cryptography, OpenTelemetry's exporters) into a process that is
only ever a client; ``openai.types``'s imports the types of every endpoint the SDK knows.
:func:`defer_package_init` names such a package; when it is imported (as the parent of
the submodule asked for, or by its own parent's ``__init__``) it is made a module whose
``__init__`` has not run, so that importing one of its submodules loads that submodule
and what it imports, nothing else. The first time anything asks the package itself for
a name that is not one of its submodules (``from mcp import ClientSession``, say in a
nonebot plugin) its ``__init__`` runs then, and the name is there as it would have been;
a submodule asked for by name (``from openai import types``) is imported as the import
system would. This holds for packages whose ``__init__`` binds no submodule's name to
something else, which is so for those deferred here (``mcp``, ``mcp.client``,
``openai.types``, ``openai.types.responses``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

_completing = threading.Lock()  # a deferred __init__ runs once, from whichever thread asks


def defer_package_init(name: str) -> None:
    """Have the package ``name`` imported with its ``__init__`` deferred; do nothing if it
    is loaded already (an import of it then goes as it would)."""
    if name in sys.modules:
        return
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    _FINDER.names.add(name)


class _DeferringFinder(MetaPathFinder):
    """Find the packages named to it where the path finder does, once each, and hand
    them to a loader that defers their ``__init__``."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname not in self.names:
            return None
        self.names.discard(fullname)
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return spec  # not installed, or not a package: imported as it would be
        spec.loader = _DeferredInit(spec.loader)
        return spec


class _DeferredInit(Loader):
    """Create the package as its own loader would; leave its ``__init__`` for later."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__getattr__ = _completer(module, self._loader)  # type: ignore[method-assign]

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)  # get_source, get_resource_reader, …


_FINDER = _DeferringFinder()


def _completer(package: ModuleType, loader: Loader) -> Callable[[str], object]:
    """Return the module ``__getattr__`` (PEP 562) that runs the package's ``__init__``
    when a name it would have defined is asked for."""

    def complete(attribute: str) -> object:
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(attribute)  # introspection asks these of every module
        submodule = f"{package.__name__}.{attribute}"
        if importlib.util.find_spec(submodule) is not None:
            return importlib.import_module(submodule)  # what the __init__ would bind too
        with _completing:
            if package.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(package)
        return getattr(package, attribute)

    return complete
