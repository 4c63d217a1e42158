"""Smoke run of the streaming overhead benchmark (``python -m benchmarks.stream_first_byte``):
every response arrives as its chunks, every figure is finite, the report states the percentile
definition. No timing is asserted."""

from __future__ import annotations

import math

from benchmarks import stream_first_byte
from onnx_lambda.stats import DEFINITION


def test_stream_first_byte_smoke() -> None:
    results = stream_first_byte.measure(requests=5, chunks=3)
    assert results["first"]["n"] == 5 and results["later"]["n"] == 10
    assert all(math.isfinite(results[key][p]) and results[key][p] >= 0
               for key in ("first", "later") for p in ("p50", "p99"))
    text = stream_first_byte.report(results)
    assert DEFINITION in text and "first chunk" in text
