"""Statistics used by every benchmark."""

from __future__ import annotations

import math

import numpy as np
import pytest

from onnx_lambda import stats


@pytest.mark.parametrize("q", [0, 10, 50, 90, 99, 99.9, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    samples = [5.0, 1.0, 3.0, 2.0, 8.0, 13.0, 21.0]
    assert stats.percentile(samples, q) == pytest.approx(np.percentile(samples, q))


def test_summary_of_empty_is_nan() -> None:
    out = stats.summary([])
    assert out["n"] == 0
    assert all(math.isnan(v) for k, v in out.items() if k != "n")


def test_summary_keys_and_values() -> None:
    out = stats.summary(range(1, 101))
    assert set(out) == {"n", "mean", "min", "max", "p50", "p95", "p99", "p99.9"}
    assert out["p50"] == pytest.approx(50.5)
    assert (out["min"], out["max"], out["mean"]) == (1, 100, 50.5)


def test_interleave_alternates_scenarios() -> None:
    calls: list[str] = []
    result = stats.interleave({"a": lambda: calls.append("a") or 1,
                               "b": lambda: calls.append("b") or 2}, 3)
    assert calls == ["a", "b"] * 3
    assert result == {"a": [1, 1, 1], "b": [2, 2, 2]}


def test_ratio_handles_missing_and_zero() -> None:
    assert stats.ratio(2.0, 4.0) == 0.5
    assert math.isnan(stats.ratio(1.0, 0.0))
    assert math.isnan(stats.ratio(math.nan, 1.0))


def test_cdf_is_monotone_and_ends_at_one() -> None:
    xs, ys = stats.cdf([3.0, 1.0, 2.0])
    assert xs == [1.0, 2.0, 3.0]
    assert ys[-1] == 1.0 and ys == sorted(ys)


@pytest.mark.parametrize("emulator", [True, False])
def test_bench_progress_counts_every_cold_run(emulator: bool) -> None:
    from benchmarks import cold, comparison

    opts = comparison.Options(repeat=3, requests=10, concurrency=[1, 2], rounds=2,
                              iterations=10, emulator=emulator)
    runs = cold.scenarios(None, opts.memory_mb, emulator=emulator)  # type: ignore[arg-type]
    assert comparison.steps(opts) == opts.repeat * len(runs) + opts.rounds * 2 + 1
