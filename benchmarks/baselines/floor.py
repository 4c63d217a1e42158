"""BASELINE — the floor: bare onnxruntime in a fresh process, nothing else.

    python -m benchmarks.baselines.floor MODEL.onnx REQUEST.json

Imports numpy + onnxruntime, creates a session with default options, runs the request once and
prints one JSON line: ``started_at`` (epoch at its first line, so the parent can tell the
interpreter's start-up), ``imports``, ``model-load``, ``first-request`` (ms, perf_counter) and
``rss_mb`` (peak resident set).
"""

from __future__ import annotations

import time

_STARTED_AT = time.time()
_T0 = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402

import numpy  # noqa: E402, F401  (timed: the import is part of the floor)
import onnxruntime  # noqa: E402

from benchmarks.baselines import io  # noqa: E402


def main(model: str, request: str) -> None:
    imported = time.perf_counter()
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    loaded = time.perf_counter()
    with open(request, encoding="utf-8") as fh:
        body = json.load(fh)
    session.run(None, io.feeds(session, body["inputs"]))
    done = time.perf_counter()
    # the report's own import, after the last mark: not the floor's cost
    from benchmarks.rss import print_floor_line

    print_floor_line(_STARTED_AT, _T0, imported, loaded, done)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
