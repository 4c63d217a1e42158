"""Statistics shared by every benchmark, the build's before/after figures and the client's probe:
percentiles and interleaved scenarios. The one percentile definition of the project lives here
(every report that prints a percentile states it with ``DEFINITION``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


DEFINITION = ("percentiles interpolate linearly between the two closest ranks (numpy's "
              "default; p50 is the median)")


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]: rank (n - 1) * q / 100
    between the sorted samples around it."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def interleave(scenarios: dict[str, Callable[[], T]], repeat: int) -> dict[str, list[T]]:
    """Run A B C A B C … ``repeat`` times so slow machine drift hits every scenario alike."""
    results: dict[str, list[T]] = {name: [] for name in scenarios}
    for _ in range(repeat):
        for name, run in scenarios.items():
            results[name].append(run())
    return results


PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def summary(samples: Sequence[float]) -> dict[str, float]:
    """n, mean, min, max and the reported percentiles (keys ``p50``, ``p95``, ``p99``,
    ``p99.9``) of one set of samples; NaN everywhere for an empty set."""
    values = [float(v) for v in samples]
    out: dict[str, float] = {"n": float(len(values)),
                             "mean": math.fsum(values) / len(values) if values else math.nan,
                             "min": min(values, default=math.nan),
                             "max": max(values, default=math.nan)}
    for q in PERCENTILES:
        out[f"p{q:g}"] = percentile(values, q)
    return out


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50.0)


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``; NaN when either is missing or the baseline is zero."""
    if not (math.isfinite(value) and math.isfinite(baseline)) or baseline == 0:
        return math.nan
    return value / baseline


def paired_ratio(values: Sequence[float], baselines: Sequence[float]) -> float:
    """The median of ``values[i] / baselines[i]``: each ratio compares two runs of the same
    interleaved round (A B A B …), so drift that hits a whole round cancels; noise that differs
    from process to process does not (the reports show it beside the medians' ratio, which
    stays their verdict). NaN unless both have the same, non-zero, count."""
    if not values or len(values) != len(baselines):
        return math.nan
    return median([ratio(v, b) for v, b in zip(values, baselines, strict=True)])


def cdf(samples: Sequence[float]) -> tuple[list[float], list[float]]:
    """Sorted values and their cumulative fractions (for CDF plots)."""
    ordered = sorted(samples)
    n = len(ordered)
    return ordered, [(i + 1) / n for i in range(n)]
