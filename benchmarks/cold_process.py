"""One fresh execution environment, in process: the cold-start breakdown of a Lambda handler.

    python -m benchmarks.cold_process MODULE EVENT.json [--warm 20]

Imports ``MODULE`` (its init) before anything else of its own, so that the module pays for
every import it makes (a probe that loaded ``json`` or ``typing`` first would hand them to the
module for free, and not to the floors, which import them themselves), calls
``MODULE.handler(event, context)`` once (the first request) and ``--warm`` more times, and
prints one JSON line: ``interpreter`` (spawn → this module running, from the parent's
``BENCH_SPAWNED_AT`` epoch), ``init`` (the module import), the module's own marks
(``handler.app``'s ``SERVICE.init_durations`` or a baseline's ``MARKS``), ``first-request``,
``warm`` (median), ``rss_mb`` (peak resident set).
"""

import importlib
import sys
import time

_STARTED_EPOCH = time.time()
_STARTED = time.perf_counter()
# the init: first, with nothing preloaded (only when run as the probe, never on import)
_MODULE = importlib.import_module(sys.argv[1]) if __name__ == "__main__" else None
_IMPORTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

from benchmarks.rss import peak_rss_mb  # noqa: E402
from onnx_lambda.lambda_context import LambdaContext  # noqa: E402
from onnx_lambda.stats import median  # noqa: E402


def _context() -> LambdaContext:
    """A fresh request id per call, and the memory size the function runs with."""
    return LambdaContext(str(uuid.uuid4()), 60_000, function_name="Bench", memory_mb=int(
        os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1769")))


def _marks(module: Any) -> dict[str, float]:
    service = getattr(module, "SERVICE", None)
    if service is not None:
        return {k: v for k, v in service.init_durations.items() if k != "init"}
    return dict(getattr(module, "MARKS", {}))


def _status(response: Any) -> int:
    return int(response.get("statusCode", 200)) if isinstance(response, dict) else 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module")
    parser.add_argument("event")
    parser.add_argument("--warm", type=int, default=20)
    args = parser.parse_args(argv)
    with open(args.event, encoding="utf-8") as fh:
        event = json.load(fh)
    module = _MODULE
    marks_at_init = _marks(module)
    context = _context()
    started = time.perf_counter()
    status = _status(module.handler(event, context))
    first = time.perf_counter()
    warm = []
    for _ in range(args.warm):
        t = time.perf_counter()
        module.handler(event, _context())
        warm.append((time.perf_counter() - t) * 1e3)
    spawned = float(os.environ.get("BENCH_SPAWNED_AT", _STARTED_EPOCH))
    print(json.dumps({
        "interpreter": max(0.0, (_STARTED_EPOCH - spawned) * 1e3),
        "init": (_IMPORTED - _STARTED) * 1e3,
        "marks": marks_at_init,
        "lazy": {k: v for k, v in _marks(module).items() if k not in marks_at_init},
        "first-request": (first - started) * 1e3,
        "warm": median(warm) if warm else None,
        "status": status,
        "rss_mb": peak_rss_mb(),
    }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
