"""Warm cost in CPU instructions (callgrind): what wall-clock figures on a shared VM cannot pin.

    python -m benchmarks.warm_instructions [--model models/digits] [--n1 0] [--n2 500]

Each target runs under ``valgrind --tool=callgrind`` after a warm-up, collecting only inside
the one C call that makes the counted calls (``--toggle-collect``: the interpreter's start, the
imports and the init are not counted, and ONNX Runtime's timing-dependent start varied by
~100 M instructions between runs). Instructions per call = (total(n2) − total(n1)) / (n2 − n1);
``--n1 0`` (the default) skips the second process, total(0) being a few hundred instructions.
Targets: ``run`` (bare ``session.run`` on the handler's own C-API session and feeds) and
``handler`` (``Service(event, ctx)`` with the API Gateway HTTP API event ``handler_overhead``
sends, the request log written to ``/dev/null``). One intra-op thread (no pool thread's wait
counted) and ``PYTHONHASHSEED=0``. ``--keep DIR`` keeps the profiles for ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from onnx_lambda.source_tree import root

WARM_UP = 200
COUNTED = "functools_reduce"  # the C function that runs the counted calls
TARGETS = ("run", "handler")


def http_api_event(example: Any) -> dict[str, Any]:
    """The warm benchmarks' request: an API Gateway HTTP API ``POST /predict`` event, JSON body."""
    return {"version": "2.0", "rawPath": "/predict", "headers": {
        "content-type": "application/json"}, "requestContext": {
        "http": {"method": "POST", "path": "/predict"}, "stage": "$default"},
        "body": json.dumps({"inputs": example}), "isBase64Encoded": False}


def child(model: Path, target: str, calls: int) -> None:
    """Inside valgrind: build the service, warm it up, then ``calls`` calls of ``target``."""
    from handler.bootstrap import create
    from handler.settings import Settings
    from onnx_lambda.lambda_context import LambdaContext

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model),
                                        "ONNX_LAMBDA_THREADS": "1"}))
    service.telemetry.stream = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the run)
    example = service.example_inputs()
    if target == "run":
        session, feeds = service.model.session, service.pipeline.preprocess(example, {})
        call = lambda: session.run(feeds)  # noqa: E731
    else:
        event, ctx = http_api_event(example), LambdaContext("bench", 60_000)
        call = lambda: service(event, ctx)  # noqa: E731
    for _ in range(WARM_UP):
        call()
    # Counted: only inside this C function (``--toggle-collect``), which nothing else calls.
    functools.reduce(lambda _, __: call(), range(calls), None)
    service.telemetry.stream.close()


def total(model: Path, target: str, calls: int, out: Path) -> int:
    """Instructions of one whole child process (every thread) under callgrind."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    "--collect-atstart=no", f"--toggle-collect={COUNTED}",
                    sys.executable, "-m", "benchmarks.warm_instructions", "--child",
                    target, "--model", str(model), "--n2", str(calls)],
                   check=True, capture_output=True, env=env, cwd=root())
    found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{out}: no totals line")
    return int(found.group(1))


def measure(model: Path, n1: int, n2: int, keep: Path | None,
            jobs: int = 1) -> dict[str, float]:
    """Instructions per call of each target; ``jobs``: callgrind processes side by side (each
    counts only its own counted calls, the same whatever runs beside it)."""
    with tempfile.TemporaryDirectory(prefix="onnx-lambda-callgrind-") as scratch:
        folder = keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        # only the counted calls are collected: total(0) is a few hundred instructions
        runs = [(target, calls) for target in TARGETS for calls in ((n1, n2) if n1 else (n2,))]
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            totals = dict(zip(runs, pool.map(
                lambda run: total(model, run[0], run[1], folder / f"{run[0]}-{run[1]}.out"),
                runs), strict=True))
    return {target: (totals[target, n2] - totals.get((target, n1), 0)) / (n2 - n1)
            for target in TARGETS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=root() / "models" / "digits")
    parser.add_argument("--n1", type=int, default=0, help="0: one process per target")
    parser.add_argument("--n2", type=int, default=500)
    parser.add_argument("--keep", type=Path, default=None, help="folder for the profiles")
    parser.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.model, args.child, args.n2)
        return 0
    per_call = measure(args.model, args.n1, args.n2, args.keep)
    print(f"model: {args.model} (callgrind, {args.n2} vs {args.n1} calls, 1 intra-op thread)")
    print("| warm, instructions per call | count |\n|---|---|")
    print(f"| bare session.run | {per_call['run']:,.0f} |")
    print(f"| handler(event, ctx) | {per_call['handler']:,.0f} |")
    print(f"| handler overhead | {per_call['handler'] - per_call['run']:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
