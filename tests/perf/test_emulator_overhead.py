"""Smoke run of the emulator's overhead benchmark (``python -m
benchmarks.emulator_overhead``): every target answers, every figure is finite, the report
states the percentile definition. No timing is asserted."""

from __future__ import annotations

import math

from benchmarks import emulator_overhead
from onnx_lambda.stats import DEFINITION


def test_emulator_overhead_smoke() -> None:
    results = emulator_overhead.measure(requests=40, cold_repeat=1)
    for target in (emulator_overhead.IN_PROCESS, emulator_overhead.INVOKE,
                   emulator_overhead.HTTP):
        assert results[target]["n"] > 0 and math.isfinite(results[target]["p99"]), target
    assert [row["concurrency"] for row in results["throughput"]] == [1.0, 2.0, 4.0]
    assert all(row["rps"] > 0 for row in results["throughput"])
    (cold,) = results["cold start"]
    assert cold["imports"] > 0 and cold["model load"] > 0  # the handler's Server-Timing came back
    assert all(math.isfinite(v) for v in cold.values())
    text = emulator_overhead.report(results)
    assert DEFINITION in text and "cold start through the emulator" in text
