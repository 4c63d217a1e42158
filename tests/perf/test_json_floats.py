"""The float32-JSON benchmark: it runs, and every way it measures reads back as float32."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from benchmarks.json_floats import WAYS, nine_digits, report
from handler.ort.tensor import from_values

# extremes of float32: the largest, the smallest normal and subnormal, a value needing 9 digits
AWKWARD = [3.4028234663852886e38, 1.1754943508222875e-38, 1.401298464324817e-45,
           0.1, -16777217.0, 0.0, -0.0, 13972.1044921875]  # the last needs all 9 digits


def test_nine_digits_is_json_that_reads_back_as_the_same_float32() -> None:
    exact = list(struct.unpack("<8f", struct.pack("<8f", *AWKWARD)))
    tensor = from_values("float32", (2, 2, 2), exact)
    nested = json.loads(nine_digits(tensor))
    assert [len(nested), len(nested[0]), len(nested[0][0])] == [2, 2, 2]
    flat = [v for plane in nested for row in plane for v in row]
    assert list(struct.unpack("<8f", struct.pack("<8f", *flat))) == exact


def test_json_floats_benchmark_smoke(model_dir: Path) -> None:
    table = report(model_dir / "linear.onnx", batch=2, repeat=1)
    for way in WAYS:
        assert f"| {way} |" in table, way
