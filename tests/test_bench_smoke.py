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
from bench.runner import BENCHMARKS, run_in_process

# Every benchmark's quick run, each in a fresh process: about a minute on two cores, more
# beside other jobs. The suite's 60 s per test would cut it short as benchmarks are added.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Run every benchmark's quick version once, in its own event loop."""
    workdir = tmp_path_factory.mktemp("bench")
    return asyncio.run(run_in_process([], quick=True, workdir=workdir))


def test_every_benchmark_yields_finite_figures_with_units(report: Report) -> None:
    """Each benchmark contributes figures, each with a unit and a finite value."""
    produced = {result.name.split(".")[0] for result in report.results}
    bad = [r.name for r in report.results if not r.unit or not math.isfinite(r.median)]
    assert (produced, bad) == ({b.name for b in BENCHMARKS}, [])


def test_spec_targets_are_attached_and_limits_resolve(report: Report) -> None:
    """Every figure of docs/targets.md carries its target, and every limit named was measured."""
    with_targets = {r.name for r in report.results if r.target is not None}
    expected = {
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
    unresolved = [r.name for r in report.results if r.limit and report.to_limit(r) is None]
    assert (expected - with_targets, unresolved) == (set(), [])


def test_counted_outcomes_hold(report: Report) -> None:
    """What the benchmarks count, not time: nothing lost, one LLM call per batch, all re-armed."""
    counted = {
        name: report.result(name)
        for name in (
            "ingest.300/s.stored",
            "ingest.1000/s.armed",
            "economy.paced.calls_per_batch",
            "economy.naive.calls_per_message",
            "sender.delivered",
            "startup.rearmed",
        )
    }
    assert {name: r.median if r else None for name, r in counted.items()} == dict.fromkeys(
        counted, 1.0
    )


def test_report_renders_as_table_and_json(report: Report, tmp_path: Path) -> None:
    """The table names every figure and the JSON file reads back with the same figures."""
    path = tmp_path / "results.json"
    report.write_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    table = report.table()
    missing = [r.name for r in report.results if r.name not in table]
    assert ([item["name"] for item in data["results"]], missing) == (
        [r.name for r in report.results],
        [],
    )
