"""The arithmetic the benchmark report stands on: quantiles, targets, ratios, windows."""

from __future__ import annotations

import math

import pytest

from bench.report import Figure, Report, Target, at_least, at_most, exactly
from bench.sending import _busiest_second
from bench.stats import Spread, median, percentile


def test_percentile_interpolates_between_ranks() -> None:
    samples = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert [percentile(samples, f) for f in (0.0, 0.5, 0.99, 1.0)] == [1.0, 3.0, 4.96, 5.0]
    assert math.isnan(percentile([], 0.5))


def test_spread_and_median_of_runs() -> None:
    spread = Spread.of([0.001 * n for n in range(1, 101)]).scaled(1000)
    assert (spread.count, spread.p50, spread.max) == (100, pytest.approx(50.5), 100.0)
    assert median([3.0, math.nan, 1.0, 2.0]) == 2.0  # a failed run does not count


@pytest.mark.parametrize(
    ("target", "measured", "met"),
    [
        (at_most(50.0), 49.9, True),
        (at_most(50.0), 50.1, False),
        (at_least(300.0), 300.0, True),
        (at_least(300.0), 299.0, False),
        (exactly(1.0), 1.0, True),
        (exactly(1.0), 0.9, False),
        (at_most(50.0), math.nan, False),
    ],
)
def test_targets_face_the_right_way(target: Target, measured: float, met: bool) -> None:
    assert target.met(measured) is met


def test_a_figure_is_divided_by_the_median_of_its_limit() -> None:
    report = Report(command="test", quick=True, machine={})
    report.add_runs(
        [
            [Figure("limits.x", 2.0, "ms"), Figure("a.x", 5.0, "ms", limit="limits.x")],
            [Figure("limits.x", 4.0, "ms"), Figure("a.x", 9.0, "ms", limit="limits.x")],
            [Figure("limits.x", 3.0, "ms"), Figure("a.x", 6.0, "ms", limit="limits.x")],
        ]
    )
    result = report.result("a.x")
    assert result is not None
    assert (result.median, report.to_limit(result)) == (6.0, 2.0)


def test_busiest_second_is_a_sliding_window() -> None:
    assert _busiest_second([0.0, 0.5, 0.99, 1.0, 1.2, 1.4, 3.0]) == 5.0  # 0.5 … 1.4
    assert _busiest_second([]) == 0.0
