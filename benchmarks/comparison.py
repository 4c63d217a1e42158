"""``python -m benchmarks``: one model's cold starts, warm latency, memory and artifact size for
onnx-lambda and each baseline, measured side by side in one run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import cold, http_load, image_size, memory, servers
from benchmarks.targets import ALWAYS_ON, ALWAYS_ON_SHARE, LAMBDA_TARGETS, OURS
from onnx_lambda.emulator.limits import CpuLimiter
from onnx_lambda.plan.emulated import emulator
from onnx_lambda.plan.subject import Subject, prepare
from onnx_lambda.source_tree import root
from onnx_lambda.stats import interleave, median, summary

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    repeat: int  # cold environments per target
    requests: int  # warm requests per target and concurrency level
    concurrency: Sequence[int]
    rounds: int  # interleaved warm batches
    iterations: int  # in-process overhead calls per side
    memory_mb: int = 1769
    emulator: bool = True


def cold_starts(subject: Subject, opts: Options, progress: Progress) -> dict[str, Any]:
    def tick(run: Callable[[], Any], label: str) -> Callable[[], Any]:
        def go() -> Any:
            result = run()
            progress(f"cold {label}")
            return result
        return go

    runs = interleave({k: tick(v, k) for k, v in cold.scenarios(
        subject, opts.memory_mb, emulator=opts.emulator).items()}, opts.repeat)
    out: dict[str, Any] = {}
    for key, results in runs.items():
        target, view = key.split("|")
        entry = out.setdefault(target, {"runs": len(results)})
        if view == "probe":
            stages = list(results[0]["breakdown"])
            entry["breakdown"] = {s: median([r["breakdown"][s] for r in results])
                                  for s in stages}
            entry["total_ms"] = median([sum(r["breakdown"].values()) for r in results])
            # in round order: the targets compare round by round (stats.paired_ratio)
            entry["init_samples_ms"] = [cold.cold_init(r["breakdown"]) for r in results]
            entry["init_ms"] = median(entry["init_samples_ms"])
            if results[0].get("warm_ms") is not None:
                entry["warm_ms"] = median([r["warm_ms"] for r in results])
        else:
            entry["emulated"] = {
                "first_response_ms": median([r["wall"] for r in results]),
                "first_response_samples": [r["wall"] for r in results],
                "init_ms": median([r["init_ms"] for r in results]),
                "first_duration_ms": median([r["first_duration_ms"] for r in results]),
                "cpu": results[0]["cpu"],
                "init_samples": [r["init_ms"] + r["first_duration_ms"] for r in results],
                "warm_samples": [d for r in results for d in r["warm_durations_ms"]]}
    for target, mem in memory.summarize(runs).items():
        out[target]["memory"] = mem
    return out


def warm_latency(subject: Subject, opts: Options, progress: Progress) -> dict[str, Any]:
    """Client-observed latency through the emulator's HTTP front (each Lambda-style target)
    and the always-on server, per concurrency level."""
    out: dict[str, Any] = {}
    top = max(opts.concurrency)
    with ExitStack() as stack:
        urls = {}
        if opts.emulator:
            for name, module in LAMBDA_TARGETS.items():
                server = stack.enter_context(emulator(
                    f"{module}.handler", subject.environment(opts.memory_mb),
                    memory_mb=opts.memory_mb, concurrency=top))
                urls[name] = server.url + "/predict"
        urls[ALWAYS_ON] = stack.enter_context(servers.always_on(subject.portable)).url + \
            "/predict"
        # The Lambda targets run on the CPU share their memory size buys; the plain always-on
        # server has the whole machine. This one gets the same share: the like-for-like row.
        limiter = CpuLimiter()
        stack.callback(limiter.close)
        if limiter.mode != "off":
            share = limiter.prepare("always-on", opts.memory_mb)
            urls[ALWAYS_ON_SHARE] = stack.enter_context(
                servers.always_on(subject.portable, share)).url + "/predict"
        for level in opts.concurrency:
            samples = http_load.measure(urls, subject.body, concurrency=level,
                                   requests=opts.requests, rounds=opts.rounds,
                                   on_round=lambda lv=level: progress(f"warm c={lv}"))
            out[str(level)] = {name: {"summary": summary(v), "samples": v}
                               for name, v in samples.items()}
    return out


OVERHEAD_BUDGET_MS = 20_000.0  # per side: a compute-heavy model gets fewer iterations


def iterations(opts: Options, warm_ms: float | None) -> int:
    """``opts.iterations``, fewer when one call (the cold probe's warm median) is slow."""
    if not warm_ms or warm_ms <= 0:
        return opts.iterations
    return max(min(200, opts.iterations), min(opts.iterations, int(OVERHEAD_BUDGET_MS / warm_ms)))


def overhead(subject: Subject, opts: Options, warm_ms: float | None = None) -> dict[str, Any]:
    """In-process: the full handler vs a bare ``session.run`` (``handler_overhead.warm``, in a
    fresh interpreter so that ``handler.app`` loads this model)."""
    count = iterations(opts, warm_ms)
    code = ("import json, sys; from pathlib import Path; "
            "from benchmarks.handler_overhead import warm; "
            "print(json.dumps(warm(Path(sys.argv[1]), int(sys.argv[2]))))")
    out = subprocess.run([sys.executable, "-c", code, str(subject.model), str(count)],
                         cwd=root(), capture_output=True, text=True, check=True,
                         env={**os.environ, **subject.environment(opts.memory_mb),
                              "PYTHONPATH": str(root()),
                              "ONNX_LAMBDA_LOG_LEVEL": "warning"}).stdout
    runs = json.loads(out.strip().splitlines()[-1])
    run_us, handler_us = summary(runs["session.run"]), summary(runs["handler"])
    quiet_us = summary(runs["no-telemetry"])
    return {"iterations": count, "session.run_us": run_us, "handler_us": handler_us,
            "no_telemetry_us": quiet_us, "run_in_handler_us": summary(runs["run in handler"]),
            "overhead_p50_us": handler_us["p50"] - run_us["p50"],
            "overhead_p99_us": handler_us["p99"] - run_us["p99"],
            "no_telemetry_overhead_p50_us": quiet_us["p50"] - run_us["p50"]}


def tiny_overhead(opts: Options) -> dict[str, Any]:
    """``overhead`` on the tiny generated model (``tiny_models.linear``), where issue 10 states
    the warm budget (≤ 50 µs p50): the bench's own models add their pipelines' work."""
    from onnx_lambda.tiny_models import linear

    with tempfile.TemporaryDirectory(prefix="onnx-lambda-bench-tiny-") as folder, \
            prepare(linear(Path(folder) / "linear.onnx")) as subject:
        return overhead(subject, opts)


def strategies(emulated: dict[str, Any], memory_mb: int) -> dict[str, Any]:
    """``onnx-lambda simulate``'s default bursty day with this run's measured cold init and
    warm durations (ours, through the emulator)."""
    from onnx_lambda.plan.simulate import Workload
    from onnx_lambda.plan.strategy_sweep import Scenario, sweep

    scenario = Scenario()
    work = Workload(service_ms=emulated["warm_samples"], init_ms=emulated["init_samples"],
                    memory_mb=memory_mb)
    results, best, requests, _horizon = sweep(scenario, work)
    return {"pattern": scenario.pattern, "requests": requests, "target": scenario.target,
            "recommended": best.as_dict(), "none": results[0].as_dict()}


def run(subject: Subject, opts: Options, progress: Progress) -> dict[str, Any]:
    result: dict[str, Any] = {"model": subject.name, "path": str(subject.source)}
    result["cold"] = cold_starts(subject, opts, progress)
    result["warm"] = warm_latency(subject, opts, progress)
    result["overhead"] = overhead(subject, opts, result["cold"].get(OURS, {}).get("warm_ms"))
    result["overhead_tiny"] = tiny_overhead(opts)
    progress("overhead")
    result["artifact"] = image_size.measure(subject.model, subject.portable)
    ours = result["cold"].get(OURS, {}).get("emulated")
    if ours:
        result["simulate"] = strategies(ours, opts.memory_mb)
    return result


def steps(opts: Options) -> int:
    """Progress steps of ``run``: cold runs, warm rounds, the overhead measurement."""
    # the two floors' probes, the floor handler through the emulator, each target's views
    views = 2 + (1 + len(LAMBDA_TARGETS) * 2 if opts.emulator else len(LAMBDA_TARGETS))
    return opts.repeat * views + opts.rounds * len(opts.concurrency) + 1
