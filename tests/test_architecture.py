"""The core depends on nothing outside it: bot/ imports no adapter, storage or scheduler."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "bot"
OUTSIDE = ("adapters", "storage", "scheduler", "telegram", "openai", "aiosqlite", "nonebot")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_module_imports_only_the_core(path: Path) -> None:
    """Each bot/ module imports neither the outer packages nor a platform or LLM library."""
    leaks = sorted(m for m in imported_modules(path) if m.split(".")[0] in OUTSIDE)
    assert leaks == []
