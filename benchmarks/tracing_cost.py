"""What turning tracing on costs a cold start: ``handler.app`` in fresh interpreters with
``ONNX_LAMBDA_TRACING`` off and on, interleaved (off on off on …), through the same probe as
``python -m benchmarks``'s cold starts.

    python -m benchmarks.tracing_cost [MODEL] [--repeat 15]

"On" runs in Lambda mode (``LAMBDA_TASK_ROOT``, a sampled trace header, a loopback UDP socket
as the X-Ray daemon), so the first request also pays for building and sending its subsegments.
Prints medians of each view and the difference; times on shared VMs swing, the interleaving
keeps the comparison fair.
"""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import cold
from onnx_lambda import stats
from onnx_lambda.plan.subject import prepare
from onnx_lambda.source_tree import root

MODULE = "handler.app"
SAMPLED = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
VIEWS = ("wall", "imports", "other init", "first request")


def _views(run: dict[str, Any]) -> dict[str, float]:
    return {"wall": run["wall"], **{k: run["breakdown"][k] for k in VIEWS[1:]}}


def measure(model: Path, repeat: int, memory_mb: int = 1769) -> dict[str, Any]:
    with prepare(model) as subject, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon:
        daemon.bind(("127.0.0.1", 0))  # receives (and drops) the subsegments
        traced = {"ONNX_LAMBDA_TRACING": "on", "LAMBDA_TASK_ROOT": str(root()),
                  "_X_AMZN_TRACE_ID": SAMPLED,
                  "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}"}
        runs = stats.interleave({
            "off": lambda: cold.probe(subject, MODULE, memory_mb, {"ONNX_LAMBDA_TRACING": "off"}),
            "on": lambda: cold.probe(subject, MODULE, memory_mb, traced),
        }, repeat)
    medians = {name: {view: stats.median([_views(r)[view] for r in results]) for view in VIEWS}
               for name, results in runs.items()}
    medians["on - off"] = {v: medians["on"][v] - medians["off"][v] for v in VIEWS}
    return {"model": str(model), "repeat": repeat, "medians_ms": medians}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, nargs="?", default=root() / "models" / "digits")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    result = measure(args.model, args.repeat)
    print(f"{'median ms':<14}" + "".join(f"{v:>15}" for v in VIEWS))
    for name, row in result["medians_ms"].items():
        print(f"{name:<14}" + "".join(f"{row[v]:>15.1f}" for v in VIEWS))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
