"""Figures, their medians over runs, and how they compare with targets and limits.

A benchmark run returns :class:`Figure` values. The runner gathers the same figure from
every run into a :class:`Result` (the median of the runs, the spread between them), then
sets each result against its target (docs/targets.md) and against a limit of this machine measured
in the same invocation (the raw SQLite commit rate, a bare timer, a bare HTTP round trip).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bench.stats import Spread, median


@dataclass(frozen=True, slots=True)
class Target:
    """A bound of docs/targets.md a figure should stay within."""

    op: Literal["<=", ">=", "=="]
    value: float

    def met(self, measured: float) -> bool:
        """Tell whether ``measured`` is within the bound."""
        if not math.isfinite(measured):
            return False
        if self.op == "==":
            return measured == self.value
        return measured <= self.value if self.op == "<=" else measured >= self.value

    def __str__(self) -> str:
        symbol = {"<=": "≤", ">=": "≥", "==": "="}[self.op]
        return f"{symbol} {self.value:g}"


def at_most(value: float) -> Target:
    """Return the target ``figure ≤ value``."""
    return Target("<=", value)


def at_least(value: float) -> Target:
    """Return the target ``figure ≥ value``."""
    return Target(">=", value)


def exactly(value: float) -> Target:
    """Return the target ``figure = value``."""
    return Target("==", value)


@dataclass(frozen=True, slots=True)
class Figure:
    """One number measured by one run of a benchmark."""

    name: str  # benchmark.scenario.quantity, e.g. "ingest.300/s.p99"
    value: float
    unit: str
    target: Target | None = None
    limit: str | None = None  # the name of a figure this one is divided by
    note: str = ""


def spread_figures(
    prefix: str,
    spread: Spread,
    unit: str,
    *,
    p99_target: Target | None = None,
    max_target: Target | None = None,
    limit_prefix: str | None = None,
) -> list[Figure]:
    """Return ``p50``, ``p99`` and ``max`` figures of one spread (and the sample count)."""

    def limit(quantity: str) -> str | None:
        return f"{limit_prefix}.{quantity}" if limit_prefix else None

    return [
        Figure(f"{prefix}.p50", spread.p50, unit, limit=limit("p50")),
        Figure(f"{prefix}.p99", spread.p99, unit, target=p99_target, limit=limit("p99")),
        Figure(f"{prefix}.max", spread.max, unit, target=max_target, limit=limit("max")),
        Figure(f"{prefix}.samples", spread.count, "n"),
    ]


@dataclass(frozen=True, slots=True)
class Result:
    """One figure over every run: the median of the runs and how far they spread."""

    name: str
    unit: str
    runs: tuple[float, ...]
    target: Target | None
    limit: str | None
    note: str

    @property
    def median(self) -> float:
        return median(self.runs)

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.target.met(self.median)

    @property
    def to_target(self) -> float | None:
        """The median divided by the target value."""
        if self.target is None or self.target.value == 0:
            return None
        return self.median / self.target.value


@dataclass
class Report:
    """Everything one invocation measured."""

    command: str
    quick: bool
    machine: Mapping[str, Any]
    results: list[Result] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per benchmark
    failures: dict[str, str] = field(default_factory=dict)

    def add_runs(self, runs: Sequence[Sequence[Figure]]) -> None:
        """Fold the figures of every run of one benchmark into results, in first-seen order."""
        by_name: dict[str, list[Figure]] = {}
        for figures in runs:
            for figure in figures:
                by_name.setdefault(figure.name, []).append(figure)
        for name, figures in by_name.items():
            first = figures[0]
            self.results.append(
                Result(
                    name,
                    first.unit,
                    tuple(f.value for f in figures),
                    first.target,
                    first.limit,
                    first.note,
                )
            )

    def result(self, name: str) -> Result | None:
        """Return the result called ``name``, if it was measured."""
        return next((r for r in self.results if r.name == name), None)

    def to_limit(self, result: Result) -> float | None:
        """The median divided by the median of the limit it is compared with."""
        if result.limit is None:
            return None
        limit = self.result(result.limit)
        if limit is None or not limit.median:
            return None
        return result.median / limit.median

    def as_json(self) -> dict[str, Any]:
        """Return the report as plain JSON data."""
        return {
            "command": self.command,
            "quick": self.quick,
            "machine": dict(self.machine),
            "seconds": self.seconds,
            "failures": self.failures,
            "results": [
                {
                    "name": r.name,
                    "unit": r.unit,
                    "median": _finite(r.median),
                    "runs": [_finite(v) for v in r.runs],
                    "target": None if r.target is None else str(r.target),
                    "met": r.met,
                    "to_target": _finite(r.to_target),
                    "limit": r.limit,
                    "to_limit": _finite(self.to_limit(r)),
                    "note": r.note,
                }
                for r in self.results
            ],
        }

    def write_json(self, path: Path) -> None:
        """Write :meth:`as_json` to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.as_json(), indent=2, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")

    def table(self) -> str:
        """Return the results as a plain-text table, one figure per line."""
        header = ("figure", "median", "unit", "runs", "target", "vs target", "vs limit")
        rows = [header]
        for r in self.results:
            spread = f"{_number(min(r.runs))}–{_number(max(r.runs))}" if len(r.runs) > 1 else ""
            verdict = ""
            if r.target is not None:
                verdict = f"{r.to_target:.3g}× {'ok' if r.met else 'MISS'}" if r.to_target else ""
            to_limit = self.to_limit(r)
            limit = f"{to_limit:.3g}× {r.limit}" if to_limit is not None else ""
            target = "" if r.target is None else str(r.target)
            rows.append((r.name, _number(r.median), r.unit, spread, target, verdict, limit))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for name, error in self.failures.items():
            lines.append(f"FAILED {name}: {error}")
        return "\n".join(line.rstrip() for line in lines)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def figures_from_json(data: Iterable[Mapping[str, Any]]) -> list[Figure]:
    """Rebuild the figures a child process wrote (see :func:`figures_to_json`)."""
    figures = []
    for item in data:
        target = item.get("target")
        figures.append(
            Figure(
                name=item["name"],
                value=math.nan if item["value"] is None else float(item["value"]),
                unit=item["unit"],
                target=None if target is None else Target(target["op"], float(target["value"])),
                limit=item.get("limit"),
                note=item.get("note", ""),
            )
        )
    return figures


def figures_to_json(figures: Iterable[Figure]) -> list[dict[str, Any]]:
    """Return figures as JSON data for the parent process."""
    return [
        {
            "name": f.name,
            "value": _finite(f.value),
            "unit": f.unit,
            "target": None if f.target is None else {"op": f.target.op, "value": f.target.value},
            "limit": f.limit,
            "note": f.note,
        }
        for f in figures
    ]
