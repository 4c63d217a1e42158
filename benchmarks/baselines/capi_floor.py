"""BASELINE — the C-API floor: a bare interpreter, ``ctypes`` over libonnxruntime, one session.

    python -m benchmarks.baselines.capi_floor MODEL REQUEST.json [OPTIMIZATION THREADS]

REQUEST.json: ``{"inputs": {name: nested list}}``, and ``"shapes": {name: shape}`` for an input
whose flat values the nested list holds but whose shape it cannot say (a zero-length axis).

The least a C-API runtime can do with the model ours serves: load the C library
(``handler.ort``, nothing else of the handler), create a session on the same file with the same
session options (``python -m benchmarks`` passes the artifact's chosen file, the graph-optimization
level ``handler.model`` picks for it and the threads it gives the memory size; spinning off),
run the request once; prints the same JSON line as ``baselines.floor``. Without the last two
arguments: all graph optimizations, a thread per visible CPU.
"""

from __future__ import annotations

import time

_STARTED_AT = time.time()
_T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from handler.ort.session import Session  # noqa: E402  (timed: ctypes and the binding)
from handler.ort.tensor import from_values  # noqa: E402

TYPE_CHECKING = False  # no ``typing`` at run time: the floor imports the least it needs
if TYPE_CHECKING:
    from typing import Any


def _flat(value: Any) -> tuple[tuple[int, ...], list[Any]]:
    """Nested lists → (shape, C-order values)."""
    shape, level = [], [value]
    while level and isinstance(level[0], list):
        shape.append(len(level[0]))
        level = [v for item in level for v in item]
    return tuple(shape), level


def main(model: str, request: str, optimization: str = "all", threads: int = 0) -> None:
    imported = time.perf_counter()
    session = Session(model, intra_op_threads=threads or len(os.sched_getaffinity(0)),
                      optimization=optimization,
                      config={"session.intra_op.allow_spinning": "0"})
    loaded = time.perf_counter()
    with open(request, encoding="utf-8") as fh:
        body = json.load(fh)
    inputs = body["inputs"]
    if not isinstance(inputs, dict):
        inputs = {session.inputs[0].name: inputs}
    # shapes nested lists cannot carry: a zero-length axis (a decoder's empty cache)
    shapes = body.get("shapes", {})
    feeds = {}
    for spec in session.inputs:
        shape, flat = _flat(inputs[spec.name])
        feeds[spec.name] = from_values(spec.dtype, tuple(shapes.get(spec.name, shape)), flat)
    session.run(feeds)
    done = time.perf_counter()
    # the report's own import, after the last mark: not the floor's cost
    from benchmarks.rss import print_floor_line

    print_floor_line(_STARTED_AT, _T0, imported, loaded, done)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *sys.argv[3:4], *(int(t) for t in sys.argv[4:5]))
