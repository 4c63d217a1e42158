"""What the local emulator adds on top of the handler, for a tiny generated model served by the
real handler (``handler.app.handler``):

    python -m benchmarks.emulator_overhead [--requests 2000] [--cold 3] [--json]

1. warm overhead: ``POST /predict`` through the emulator's HTTP front (HTTP API event ->
   Runtime API -> awslambdaric -> handler -> back), and the same event through the Invoke API,
   vs the handler called in process (``handler_overhead.warm``), and vs the same event posted to
   AWS's Runtime Interface Emulator (the Go implementation of the same hops, from the
   aws-sam-cli package) as a reference; one keep-alive connection per target
   (``http_load.measure``), targets alternated in 10 rounds; plus the CPU the emulator process
   itself spends per request (less load-dependent than latency);
2. throughput of the HTTP front at concurrency 1, 2, 4 (warm, provisioned environments, one
   keep-alive connection per client; requests a second = concurrency / mean latency, the
   closed loop's rate);
3. cold starts through the emulator (``onnx_lambda.plan.emulated``), broken down from the REPORT
   record and the handler's ``Server-Timing``: process start + runtime client, imports, model
   load, warm-up, first request.

The emulator runs in its own process (``onnx-lambda serve``), so the load generator never
shares a GIL with it; the CPU quota is off (``--cpu-limit off``) so the numbers show the
emulator's cost, not the quota's. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil

from benchmarks import http_load, servers
from benchmarks.handler_overhead import warm as in_process
from onnx_lambda.plan.emulated import INVOKE_PATH, emulated, emulator
from onnx_lambda.plan.subject import Subject, prepare
from onnx_lambda.stats import DEFINITION, median, summary
from onnx_lambda.tiny_models import linear

MODULE = "handler.app"
IN_PROCESS, RIE, INVOKE, HTTP = ("in-process handler", "RIE (reference), same event",
                                 "Invoke API, same event", "HTTP front")
CONCURRENCY = (1, 2, 4)
ROUNDS = 10


def warm_latency(subject: Subject, requests: int, memory_mb: int) -> dict[str, Any]:
    """Each target's latency summary (ms), the emulator's CPU per request and its throughput."""
    env = subject.environment(memory_mb)
    event = subject.event_file.read_bytes()
    results: dict[str, Any] = {}
    with ExitStack() as stack:
        server = stack.enter_context(emulator(
            f"{MODULE}.handler", env, memory_mb=memory_mb, concurrency=max(CONCURRENCY),
            provisioned=max(CONCURRENCY), cpu_limit="off"))
        urls = {HTTP: server.url + "/predict", INVOKE: f"{server.url}{INVOKE_PATH}"}
        bodies = {HTTP: subject.body, INVOKE: event}
        reference = servers.rie(f"{MODULE}.handler", env)
        if reference is not None:
            stack.enter_context(reference)
            urls[RIE] = reference.url + "/2015-03-31/functions/function/invocations"
            bodies[RIE] = event
        process = psutil.Process(server.process.pid)
        cpu_before = sum(process.cpu_times()[:2])
        warmup = max(1, requests // 10)
        samples = http_load.measure(urls, bodies, concurrency=1, requests=requests,
                                    rounds=ROUNDS, warmup=warmup)
        served = len(samples[HTTP]) + len(samples[INVOKE]) + 2 * (warmup + ROUNDS - 1)
        results["emulator CPU per request, ms"] = (
            sum(process.cpu_times()[:2]) - cpu_before) * 1000.0 / served
        results |= {name: summary(values) for name, values in samples.items()}
        results["throughput"] = []
        for level in CONCURRENCY:
            latency = summary(http_load.measure({HTTP: urls[HTTP]}, subject.body,
                                                concurrency=level, requests=requests,
                                                rounds=1)[HTTP])
            results["throughput"].append({"concurrency": float(level),
                                          "rps": level * 1000.0 / latency["mean"], **latency})
    return results


def cold_starts(subject: Subject, repeat: int, memory_mb: int) -> list[dict[str, float]]:
    """A fresh emulator (so a fresh environment) per sample, one request each."""
    rows = []
    for _ in range(repeat):
        run = emulated(subject, MODULE, memory_mb, warm=0, cpu_limit="off")
        timing = run["server_timing"]
        rows.append({
            "client total": run["wall"],
            "Init Duration (spawn -> first /next)": run["init_ms"],
            "process start + runtime client": run["init_ms"] - timing.get("init", 0.0),
            "imports": timing.get("imports", 0.0),
            "model load": timing.get("model-load", 0.0),
            "warm-up": timing.get("warmup", 0.0),
            "first request (Duration)": run["first_duration_ms"],
        })
    return rows


def measure(requests: int = 2000, cold_repeat: int = 3, memory_mb: int = 1769) -> dict[str, Any]:
    """Run every measurement; returns the numbers (also what :func:`main` prints)."""
    with tempfile.TemporaryDirectory(prefix="onnx-lambda-emu-bench-") as tmp:
        model = linear(Path(tmp) / "tiny.onnx")
        handler_us = in_process(model, requests)["handler"]
        results: dict[str, Any] = {IN_PROCESS: summary([us / 1e3 for us in handler_us])}
        with prepare(model, name="tiny") as subject:
            results |= warm_latency(subject, requests, memory_mb)
            results["cold start"] = cold_starts(subject, cold_repeat, memory_mb)
    return results


def report(results: dict[str, Any]) -> str:
    base = results[IN_PROCESS]
    lines = [f"({DEFINITION})",
             "warm latency, ms              p50      p99   (overhead vs in-process at p50)"]
    for name in (IN_PROCESS, RIE, INVOKE, HTTP):
        if name not in results:
            continue
        row = results[name]
        extra = "" if name == IN_PROCESS else f"   +{row['p50'] - base['p50']:.3f}"
        lines.append(f"  {name:28} {row['p50']:7.3f}  {row['p99']:7.3f}{extra}")
    lines.append(f"  emulator process CPU per request (both fronts): "
                 f"{results['emulator CPU per request, ms']:.3f} ms")
    lines.append("throughput (HTTP front, warm)   req/s     p50      p99")
    for row in results["throughput"]:
        lines.append(f"  concurrency {int(row['concurrency'])}            "
                     f"{row['rps']:8.0f}  {row['p50']:7.3f}  {row['p99']:7.3f}")
    runs = results["cold start"]
    lines.append(f"cold start through the emulator, ms (median of {len(runs)})")
    for key in runs[0]:
        lines.append(f"  {key:40} {median([sample[key] for sample in runs]):8.1f}")
    lines.append(f"(load average during the run: {os.getloadavg()[0]:.2f} on "
                 f"{os.cpu_count()} CPUs)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.emulator_overhead",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000,
                        help="timed requests per target and per throughput level")
    parser.add_argument("--cold", type=int, default=3, help="cold starts to sample")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = measure(args.requests, args.cold)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
