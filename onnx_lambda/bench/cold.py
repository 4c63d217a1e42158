"""Cold starts: fresh environment → first response, for the floor and each Lambda-style target.

Two views, run interleaved (A B C … A B C …):
- ``probe``: a fresh interpreter (``cold_process``) that imports the handler module and calls
  it (in process):
  the breakdown (interpreter, imports, model load, warm-up, other init, first request) and the
  peak RSS. The floors are measured the same way (``baselines.floor``, ``baselines.capi_floor``).
- ``emulated``: the same handler in a fresh environment of the local emulator (real
  awslambdaric, Invoke API with ``LogType=Tail``): the client-observed time to the first
  response, and the REPORT line's Init Duration, Duration and Max Memory Used.

Every probe child starts as Lambda starts the function's code (``interpreter``): bytecode
compiled beforehand (``bytecode``), and none of this virtual environment's start-up hooks — its
editable install's finder imports ``pathlib``, ``re`` and ``enum`` before any code runs, which
would hide their cost from every target; the task root and the packages come from
``PYTHONPATH``, as ``LAMBDA_TASK_ROOT`` and the layer do. ``cold_init`` is the one definition
of the cold-init figure every report compares.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from handler.model import threads_for, visible_cpus
from onnx_lambda.bench import servers
from onnx_lambda.bench.bytecode import compile_shipped
from onnx_lambda.bench.subject import CAPI_FLOOR, FLOOR, FLOOR_HANDLER, LAMBDA_TARGETS, Subject
from onnx_lambda.client.timing import parse_server_timing
from onnx_lambda.source_tree import root

INVOKE_PATH = f"/2015-03-31/functions/{servers.FUNCTION}/invocations"
_REPORT = re.compile(r"(Init Duration|Billed Duration|Duration|Max Memory Used): ([\d.]+)")


def report_fields(log_tail: str) -> dict[str, float]:
    """The numbers of the last REPORT line in an Invoke API log tail (empty without one)."""
    line = log_tail[log_tail.rfind("REPORT"):] if "REPORT" in log_tail else ""
    return {key: float(value) for key, value in _REPORT.findall(line)}
_CPU = re.compile(r"CPU: ([^\t\n]+)")
TRACE_ID = "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0"


# stages that are not the cold init: the interpreter's own start (the same for every target)
# and the first request after it (unless the target's first inference only happens there)
NOT_INIT = ("interpreter", "first request")


def cold_init(breakdown: dict[str, float]) -> float:
    """The cold-init figure (ms) every report compares (``onnx-lambda bench``'s targets,
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
    compile_shipped()
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
    result = _child(["-m", f"onnx_lambda.bench.baselines.{baseline}", *args], {})
    spawned = result["spawned_at"]
    return {"wall": result["wall"], "rss_mb": result["rss_mb"], "breakdown": {
        "interpreter": max(0.0, (result["started_at"] - spawned) * 1e3),
        "imports": result["imports"], "model-load": result["model-load"],
        "first request": result["first-request"]}}


def probe(subject: Subject, module: str, memory_mb: int,
          extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    env = {**subject.environment(memory_mb), "AWS_LAMBDA_FUNCTION_NAME": servers.FUNCTION,
           "_X_AMZN_TRACE_ID": TRACE_ID, "ONNX_LAMBDA_LOG_LEVEL": "warning", **(extra_env or {})}
    result = _child(["-m", "onnx_lambda.bench.cold_process", module, str(subject.event_file)],
                    env)
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


class InvokeClient:
    """The Lambda Invoke API over one persistent HTTP connection (as boto3 would use it).
    ``throttled_ok``: a 429 (no free environment) answers ``None`` instead of raising."""

    def __init__(self, url: str, *, throttled_ok: bool = False) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                               timeout=120)
        self.throttled_ok = throttled_ok

    def invoke(self, payload: bytes) -> tuple[float, dict[str, float], bytes, str] | None:
        """(client-observed ms, REPORT fields, response payload, the REPORT's CPU limit)."""
        started = time.perf_counter()
        self.conn.request("POST", INVOKE_PATH, body=payload,
                          headers={"X-Amz-Log-Type": "Tail", "content-type": "application/json"})
        response = self.conn.getresponse()
        body = response.read()
        wall = (time.perf_counter() - started) * 1e3
        if response.status == 429 and self.throttled_ok:
            return None
        if response.status != 200 or response.getheader("X-Amz-Function-Error"):
            raise RuntimeError(f"invoke: HTTP {response.status}: {body[:500]!r}")
        tail = base64.b64decode(response.getheader("X-Amz-Log-Result") or "").decode(
            errors="replace")
        report = report_fields(tail)
        cpu = _CPU.search(tail[tail.rfind("REPORT"):])
        return wall, report, body, cpu.group(1).strip() if cpu else "unknown"

    def close(self) -> None:
        self.conn.close()


def emulated(subject: Subject, module: str, memory_mb: int, warm: int = 5,
             cpu_limit: str | None = None) -> dict[str, Any]:
    """A fresh emulator (so a fresh environment): one cold invocation, then ``warm`` more;
    ``server_timing``: the first response's ``Server-Timing`` stages (ours reports its init)."""
    compile_shipped()
    payload = subject.event_file.read_bytes()
    with servers.emulator(f"{module}.handler", subject.environment(memory_mb),
                          memory_mb=memory_mb, cpu_limit=cpu_limit) as server:
        client = InvokeClient(server.url)
        try:
            first = client.invoke(payload)
            assert first is not None  # (only a throttled_ok client answers None)
            wall, report, body, cpu = first
            answer = json.loads(body)
            status = answer.get("statusCode")
            if status != 200:
                raise RuntimeError(f"{module}: first response {status}: {body[:300]!r}")
            warm_runs = [run for _ in range(warm) if (run := client.invoke(payload))]
        finally:
            client.close()
    if "Init Duration" not in report:
        raise RuntimeError(f"{module}: the first invocation reported no Init Duration "
                           "(not a fresh environment?)")
    durations = [r[1]["Duration"] for r in warm_runs if "Duration" in r[1]]
    return {"wall": wall, "init_ms": report["Init Duration"],
            "first_duration_ms": report.get("Duration"), "warm_durations_ms": durations,
            "warm_client_ms": [r[0] for r in warm_runs], "cpu": cpu,
            "server_timing": parse_server_timing(
                (answer.get("headers") or {}).get("server-timing"))[0],
            "max_memory_mb": (warm_runs[-1][1] if warm_runs else report).get("Max Memory Used")}


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
