"""BASELINE — the C-API floor: a bare interpreter, ``ctypes`` over libonnxruntime, one session.

    python -m onnx_lambda.bench.baselines.capi_floor MODEL.onnx REQUEST.json

The least a C-API runtime can do: load the C library (``handler.ort``, nothing else of the
handler), create a session with the floor's options (all graph optimizations, a thread per
visible CPU), run the request once; prints the same JSON line as ``baselines.floor``.
"""

from __future__ import annotations

import time

_STARTED_AT = time.time()
_T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

from handler.ort.session import Session  # noqa: E402  (timed: ctypes and the binding)
from handler.ort.tensor import from_values  # noqa: E402
from onnx_lambda.bench.rss import print_floor_line  # noqa: E402


def _flat(value: Any) -> tuple[tuple[int, ...], list[Any]]:
    """Nested lists → (shape, C-order values)."""
    shape, level = [], [value]
    while level and isinstance(level[0], list):
        shape.append(len(level[0]))
        level = [v for item in level for v in item]
    return tuple(shape), level


def main(model: str, request: str) -> None:
    imported = time.perf_counter()
    session = Session(model, intra_op_threads=len(os.sched_getaffinity(0)), optimization="all")
    loaded = time.perf_counter()
    with open(request, encoding="utf-8") as fh:
        inputs = json.load(fh)["inputs"]
    if not isinstance(inputs, dict):
        inputs = {session.inputs[0].name: inputs}
    feeds = {}
    for spec in session.inputs:
        shape, flat = _flat(inputs[spec.name])
        feeds[spec.name] = from_values(spec.dtype, shape, flat)
    session.run(feeds)
    done = time.perf_counter()
    print_floor_line(_STARTED_AT, _T0, imported, loaded, done)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
