"""The benchmarks run: a tiny version of each yields well-formed figures (no timing asserted).

Performance is shown by ``python -m bench`` and ``docs/benchmarks.md``, not here; this only
keeps the benchmark code from rotting as the core changes.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from bench.report import Report
from bench.runner import BENCHMARKS, Benchmark, run_in_process

# One benchmark's quick run per test, so the workers share them out: the longest (the wire)
# takes about 20 s on two cores, more beside other jobs.
pytestmark = pytest.mark.timeout(120)

# Every figure of docs/targets.md: each carries its target.
TARGETED = {
    "ingest.300/s.latency.p99",
    "ingest.ceiling.1_at_once.rate",
    "timers.500.memory.armed",
    "sender.overhead.p99",
    "economy.paced.calls_per_batch",
    "economy.prompt.growth_1d_to_1y",
    "recall.date.p99",
    "recall.keyword.p99",
    "startup.rearm.longest_stall",
    "parse.all.p99",
    "llmcall.m32.loop_p50",
    "footprint.help.seconds",
    "footprint.run.ready",
    "footprint.run.rss_idle",
    "footprint.run.rss_after_answer",
    "footprint.night.rss_after_recall",
    "footprint.night.recalled",
    "footprint.tools.rss_after_answer",
    "footprint.tools.answered",
    "footprint.tools_qqbot.rss_after_answer",
    "footprint.tools_qqbot.answered",
    "gate.per_batch.mean",
    "groupweek.smart.unaddressed.busiest_hour",
    "wire.qq+plugin.300.added_p99",
    "wire.telegram+reload.reloads",
    "tools.addressed.calls_over_rounds",
    "tools.greedy.calls_per_batch",
    "tools.unaddressed.offered",
    "tools.hang.delay",
    "tools.off.identical",
    "tools.run.rss_after_answer",
    "soak.rss.growth",
}

# What the benchmarks count, not time: nothing lost, one LLM call per batch, all re-armed.
COUNTED = {
    "ingest.300/s.stored",
    "ingest.1000/s.armed",
    "economy.paced.calls_per_batch",
    "economy.naive.calls_per_message",
    "sender.delivered",
    "startup.rearmed",
}


def _run(names: list[str], workdir: Path) -> Report:
    return asyncio.run(run_in_process(names, quick=True, workdir=workdir))


def _measured(benchmark: Benchmark, workdir: Path) -> Report:
    """Run ``benchmark`` quickly, with the benchmarks its limits are measured by."""
    report = _run([benchmark.name], workdir)
    limits = {r.limit.split(".")[0] for r in report.results if r.limit} - {benchmark.name}
    if limits:
        report.results += _run(sorted(limits), workdir).results
    return report


def _of(benchmark: Benchmark, names: set[str]) -> set[str]:
    return {name for name in names if name.split(".")[0] == benchmark.name}


def test_every_target_and_count_belongs_to_a_benchmark() -> None:
    """A figure named above under no benchmark would never be checked."""
    assert {name.split(".")[0] for name in TARGETED | COUNTED} <= {b.name for b in BENCHMARKS}


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda b: b.name)
def test_each_benchmark_yields_its_figures_targets_limits_and_counts(
    benchmark: Benchmark, tmp_path: Path
) -> None:
    """Each benchmark contributes finite figures with units, the targets of docs/targets.md
    attached, limits that resolve to a measured figure, and its counted outcomes whole."""
    report = _measured(benchmark, tmp_path)
    mine = [r for r in report.results if r.name.split(".")[0] == benchmark.name]
    bad = [r.name for r in mine if not r.unit or not math.isfinite(r.median)]
    untargeted = _of(benchmark, TARGETED) - {r.name for r in mine if r.target is not None}
    unresolved = [r.name for r in mine if r.limit and report.to_limit(r) is None]
    counted = {
        name: getattr(report.result(name), "median", None) for name in _of(benchmark, COUNTED)
    }
    assert (bool(mine), bad, untargeted, unresolved, counted) == (
        True,
        [],
        set(),
        [],
        dict.fromkeys(counted, 1.0),
    )


def test_report_renders_as_table_and_json(tmp_path: Path) -> None:
    """The table names every figure and the JSON file reads back with the same figures."""
    report = _run(["limits", "items", "parse"], tmp_path)
    path = tmp_path / "results.json"
    report.write_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    table = report.table()
    missing = [r.name for r in report.results if r.name not in table]
    assert ([item["name"] for item in data["results"]], missing) == (
        [r.name for r in report.results],
        [],
    )
