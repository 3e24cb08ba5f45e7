"""Summarise samples: percentiles of one run, medians over runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Return the ``fraction`` quantile (0..1) of ``samples``, linearly interpolated."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True, slots=True)
class Spread:
    """The shape of one run's samples: how many, the median, the tail and the worst."""

    count: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread:
        """Summarise ``samples`` (NaN everywhere when there are none)."""
        if not samples:
            return cls(0, math.nan, math.nan, math.nan)
        return cls(
            count=len(samples),
            p50=percentile(samples, 0.50),
            p99=percentile(samples, 0.99),
            max=max(samples),
        )

    def scaled(self, factor: float) -> Spread:
        """Return the same spread in another unit (e.g. seconds × 1000 → ms)."""
        return Spread(self.count, self.p50 * factor, self.p99 * factor, self.max * factor)


def median(values: Sequence[float]) -> float:
    """Return the median of the finite ``values`` (NaN when there are none)."""
    finite = [value for value in values if math.isfinite(value)]
    return statistics.median(finite) if finite else math.nan
