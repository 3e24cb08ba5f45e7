"""Describe the machine the figures come from, and read this process's memory."""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

_LIBRARIES = ("aiosqlite", "python-telegram-bot", "aiohttp", "httpx", "openai", "rjieba")


def describe() -> dict[str, Any]:
    """Return cores, memory, CPU, OS, Python, SQLite and library versions."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_mb": _meminfo_kb("MemTotal") // 1024,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "libraries": {name: _version(name) for name in _LIBRARIES},
        "load_average": os.getloadavg(),
    }


def rss_bytes() -> int:
    """Return this process's resident set size."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    for line in lines:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _meminfo_kb(field: str) -> int:
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
