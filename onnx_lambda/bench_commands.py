"""``onnx-lambda bench``: the benchmark lab is not part of the package; it lives in the source
checkout's ``benchmarks/`` folder and serves the repository itself. From a checkout this runs
``python -m benchmarks`` with the same arguments; from an installed package it says to clone."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from onnx_lambda import extras
from onnx_lambda.source_tree import SourceTreeError, root


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # every argument (--help included) goes to the lab's own parser
    bench = subparsers.add_parser(
        "bench", add_help=False,
        help="cold start, warm latency, memory and artifact size vs the baselines (runs "
             "`python -m benchmarks` from a source checkout; `onnx-lambda bench --help`)")
    bench.set_defaults(func=run, passthrough=True)


def run(args: argparse.Namespace) -> int:
    lab = root() / "benchmarks"
    if not (lab / "__main__.py").is_file():
        raise SourceTreeError(f"{lab} is missing: the benchmark lab runs from a source checkout "
                              "(git clone, then python -m benchmarks from it)")
    missing = None
    try:
        extras.check("bench")
    except extras.MissingExtraError as error:
        if not {"-h", "--help"} & set(args.rest):
            raise
        missing = error  # the help needs none of it: print it, then say what running needs
    path = os.pathsep.join(p for p in (str(root()), os.environ.get("PYTHONPATH")) if p)
    code = subprocess.call([sys.executable, "-m", "benchmarks", *args.rest],
                           env={**os.environ, "PYTHONPATH": path})
    if missing is not None:
        print(f"\nto run it: {missing}", file=sys.stderr)
    return code
