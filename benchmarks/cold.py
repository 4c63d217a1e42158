"""Cold starts: fresh environment → first response, for the floor and each Lambda-style target.

Two views, run interleaved (A B C … A B C …):
- ``probe``: a fresh interpreter (``cold_process``) that imports the handler module and calls
  it (in process):
  the breakdown (interpreter, imports, model load, warm-up, other init, first request) and the
  peak RSS. The floors are measured the same way (``baselines.floor``, ``baselines.capi_floor``).
- ``emulated`` (``onnx_lambda.plan.emulated``, which ``tune`` uses too): the same handler in a
  fresh environment of the local emulator (real awslambdaric, Invoke API with
  ``LogType=Tail``): the client-observed time to the first response, and the REPORT line's
  Init Duration, Duration and Max Memory Used.

Every probe child starts as Lambda starts the function's code (``interpreter``): bytecode
compiled beforehand (``bytecode``), and none of this virtual environment's start-up hooks — its
editable install's finder imports ``pathlib``, ``re`` and ``enum`` before any code runs, which
would hide their cost from every target; the task root and the packages come from
``PYTHONPATH``, as ``LAMBDA_TASK_ROOT`` and the layer do. ``cold_init`` is the one definition
of the cold-init figure every report compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from typing import Any

from benchmarks.targets import CAPI_FLOOR, FLOOR, FLOOR_HANDLER, LAMBDA_TARGETS
from handler.model import threads_for, visible_cpus
from onnx_lambda.plan.bytecode import compile_shipped
from onnx_lambda.plan.emulated import FUNCTION, emulated
from onnx_lambda.plan.subject import Subject
from onnx_lambda.source_tree import root

TRACE_ID = "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0"


# stages that are not the cold init: the interpreter's own start (the same for every target)
# and the first request after it (unless the target's first inference only happens there)
NOT_INIT = ("interpreter", "first request")


def cold_init(breakdown: dict[str, float]) -> float:
    """The cold-init figure (ms) every report compares (``python -m benchmarks``'s targets,
    ``handler_overhead``): from the interpreter running the target's code to its first inference
    done — imports, model load, the first inference and any other init. The first inference is
    the warm-up for a target that runs one at init (ours), the floors' one run (their "first
    request"), else the first request (a target that loads its model lazily). The interpreter's
    start-up is the same for every target and left out; so is our first request, which comes
    after the init."""
    first = "warm-up" if "warm-up" in breakdown else "first request"
    return sum(v for k, v in breakdown.items() if k not in NOT_INIT or k == first)


def interpreter() -> tuple[list[str], dict[str, str]]:
    """The command-line prefix and environment of a child started as Lambda starts a function:
    no ``site`` hooks (``-S``), the task root and the installed packages on ``PYTHONPATH``."""
    path = os.pathsep.join([str(root()), sysconfig.get_paths()["purelib"]])
    return [sys.executable, "-S"], {"PYTHONPATH": path}


def _child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    compile_shipped(args[1])  # args: -m MODULE ...
    prefix, base = interpreter()
    argv = [*prefix, *args]
    spawned = time.time()
    started = time.perf_counter()
    out = subprocess.run(argv, cwd=root(), capture_output=True, text=True, check=False,
                         env={**os.environ, **base, "BENCH_SPAWNED_AT": repr(spawned), **env})
    wall = (time.perf_counter() - started) * 1e3
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr[-2000:]}")
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall": wall,
            "spawned_at": spawned}


def floor(subject: Subject, baseline: str = "floor", memory_mb: int = 1769) -> dict[str, Any]:
    """``baselines.floor`` (numpy + the binding: the portable model, default options) or
    ``baselines.capi_floor`` (ctypes: the file ours loads, with the session options ours sets)."""
    if baseline == "capi_floor":
        args = [str(subject.runtime_file), str(subject.request_file),
                subject.runtime_optimization, str(threads_for(memory_mb, visible_cpus()))]
    else:
        args = [str(subject.portable), str(subject.request_file)]
    return run_baseline(f"benchmarks.baselines.{baseline}", args)


def run_baseline(module: str, args: list[str]) -> dict[str, Any]:
    """A baseline child ``module`` that prints ``rss.print_floor_line``'s JSON line: its wall
    clock, peak RSS and cold-start breakdown."""
    result = _child(["-m", module, *args], {})
    spawned = result["spawned_at"]
    return {"wall": result["wall"], "rss_mb": result["rss_mb"], "breakdown": {
        "interpreter": max(0.0, (result["started_at"] - spawned) * 1e3),
        "imports": result["imports"], "model-load": result["model-load"],
        "first request": result["first-request"]}}


def probe(subject: Subject, module: str, memory_mb: int,
          extra_env: dict[str, str] | None = None, warm: int = 20) -> dict[str, Any]:
    """``module``'s init and first request in a fresh process, then ``warm`` more requests."""
    env = {**subject.environment(memory_mb), "AWS_LAMBDA_FUNCTION_NAME": FUNCTION,
           "_X_AMZN_TRACE_ID": TRACE_ID, "ONNX_LAMBDA_LOG_LEVEL": "warning", **(extra_env or {})}
    result = _child(["-m", "benchmarks.cold_process", module, str(subject.event_file),
                     "--warm", str(warm)], env)
    if result["status"] != 200:
        raise RuntimeError(f"{module}: first request answered {result['status']}")
    marks, lazy = result["marks"], result["lazy"]
    # the probe's own start-up (argparse, json, ...) is nobody's cold start: left out
    breakdown = {"interpreter": result["interpreter"],
                 "imports": marks.get("imports", 0.0),
                 "model-load": marks.get("model-load", 0.0) + lazy.get("model-load", 0.0)}
    if "warmup" in marks:  # absent: the target's first inference is its first request
        breakdown["warm-up"] = marks["warmup"]
    breakdown["other init"] = max(0.0, result["init"] - sum(
        v for k, v in marks.items() if k in ("imports", "model-load", "warmup")))
    breakdown["first request"] = result["first-request"] - lazy.get("model-load", 0.0)
    return {"wall": result["wall"], "rss_mb": result["rss_mb"], "warm_ms": result["warm"],
            "breakdown": breakdown}


def scenarios(subject: Subject, memory_mb: int, *, emulator: bool,
              targets: dict[str, str] | None = None) -> dict[str, Callable[[], Any]]:
    """Named zero-argument runs for ``stats.interleave``: ``(target, view)`` keys joined
    by ``|``."""
    runs: dict[str, Callable[[], Any]] = {
        f"{FLOOR}|probe": lambda: floor(subject),
        f"{CAPI_FLOOR}|probe": lambda: floor(subject, "capi_floor", memory_mb)}
    if emulator:  # the first response every handler on numpy + the binding is bounded by
        runs[f"{FLOOR}|emulated"] = lambda: emulated(subject, FLOOR_HANDLER, memory_mb)
    for name, module in (targets or LAMBDA_TARGETS).items():
        runs[f"{name}|probe"] = lambda m=module: probe(subject, m, memory_mb)
        if emulator:
            runs[f"{name}|emulated"] = lambda m=module: emulated(subject, m, memory_mb)
    return runs
