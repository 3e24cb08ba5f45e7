"""A package registered by ``adapters.package_init`` runs its ``__init__`` only when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = """
import sys
sys.path.insert(0, sys.argv[1])
from adapters.package_init import defer_package_init
defer_package_init("lib")
defer_package_init("lib.client")
import lib.client.session
ran = sys.modules["lib"].__dict__.get("RAN", [])
print("after the submodule:", lib.client.session.NAME, ran)
{then}
"""


def run(tmp_path: Path, then: str, *, runner: str = RUNNER) -> list[str]:
    """Build a package whose ``__init__`` files note that they ran and import a heavy
    part; run ``runner`` with ``then`` in a fresh interpreter; return what it printed."""
    package = tmp_path / "lib"
    (package / "client").mkdir(parents=True)
    (package / "server.py").write_text("HEAVY = True\n", encoding="utf-8")
    (package / "__init__.py").write_text(
        "RAN = ['lib']\nfrom lib.server import HEAVY\nfrom lib.client.session import NAME\n",
        encoding="utf-8",
    )
    (package / "client" / "__init__.py").write_text("RAN = ['lib.client']\n", encoding="utf-8")
    (package / "client" / "session.py").write_text("NAME = 'session'\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", runner.format(then=then), str(tmp_path)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return [*done.stdout.splitlines(), *done.stderr.splitlines()[-1:]]


def test_a_submodule_imports_without_the_packages_init(tmp_path: Path) -> None:
    """Importing a submodule of a deferred package loads it and leaves the heavy part out."""
    printed = run(tmp_path, "print('heavy part loaded:', 'lib.server' in sys.modules)")
    assert printed == ["after the submodule: session []", "heavy part loaded: False"]


@pytest.mark.parametrize(
    "ask",
    [
        "from lib import HEAVY; print('asked:', HEAVY)",
        "import lib; print('asked:', lib.HEAVY)",
    ],
)
def test_asking_the_package_for_a_name_runs_its_init_once(tmp_path: Path, ask: str) -> None:
    """The first name asked of the package runs its ``__init__``, once; the name is there."""
    then = f"{ask}\nimport lib\nprint('ran:', lib.RAN, 'lib.server' in sys.modules)"
    assert run(tmp_path, then) == [
        "after the submodule: session []",
        "asked: True",
        "ran: ['lib'] True",
    ]


def test_a_name_the_package_never_defines_is_still_an_error(tmp_path: Path) -> None:
    """Asking for a name the ``__init__`` does not define fails as it would have."""
    then = "from lib import MISSING"
    assert run(tmp_path, then)[-1] == (
        f"ImportError: cannot import name 'MISSING' from 'lib' ({tmp_path / 'lib' / '__init__.py'})"
    )


def test_a_deferred_subpackage_stays_deferred_when_its_parent_is_imported(
    tmp_path: Path,
) -> None:
    """With only ``lib.client`` deferred, importing ``lib`` runs ``lib``'s ``__init__``,
    whose import of ``lib.client.session`` leaves ``lib.client``'s own ``__init__`` unrun."""
    then = "print('client ran:', 'RAN' in vars(sys.modules['lib.client']))"
    runner = RUNNER.replace('defer_package_init("lib")\n', "").replace(
        "import lib.client.session", "import lib, lib.client.session"
    )
    assert run(tmp_path, then, runner=runner) == [
        "after the submodule: session ['lib']",
        "client ran: False",
    ]
