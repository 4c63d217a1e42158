"""Handler cost against the floor, measured side by side in one run (issue: runtime handler).

    python -m benchmarks.handler_overhead [--model models/digits] [--repeat 15]

- cold init: fresh interpreter → ready, interleaved (floor, C-API floor, ours, …), the same
  processes ``python -m benchmarks`` starts (``cold``). The floor is ``baselines.floor``
  (``import numpy, onnxruntime; InferenceSession(portable model); run()``), the C-API floor
  ``baselines.capi_floor`` (a bare interpreter with ``ctypes`` over libonnxruntime: load,
  session on the file ours loads with ours' session options, one run); ours is
  ``import handler.app`` (settings, artifact, session, pipeline, warm-up inference) and its
  first request. The ratios compare ``cold.cold_init`` (imports + session + first inference,
  the interpreter's start-up left out), the figure ``python -m benchmarks``'s targets compare.
- warm overhead: in one process, blocks of bare ``session.run`` and of ``handler(event, ctx)``
  with an API Gateway HTTP API event, alternating; overhead = handler − run at p50 and p99.
- peak RSS after init of each cold process (VmHWM: ru_maxrss would inherit the parent's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import cold as cold_start
from benchmarks.baselines import io
from benchmarks.targets import CAPI_FLOOR, FLOOR, OURS
from benchmarks.warm_instructions import http_api_event
from onnx_lambda.client.timing import parse_server_timing
from onnx_lambda.lambda_context import LambdaContext
from onnx_lambda.plan.subject import Subject, default_model, prepare
from onnx_lambda.source_tree import root
from onnx_lambda.stats import DEFINITION, interleave, paired_ratio, percentile


def cold(subject: Subject, repeat: int, memory_mb: int = 1769) -> dict[str, list[dict[str, Any]]]:
    """Fresh processes, interleaved: the two floors (``baselines.floor``, ``baselines.capi_floor``)
    and ours (``import handler.app``, then the first request), as ``python -m benchmarks`` runs
    them (``cold.floor``, ``cold.probe``)."""
    return interleave({
        FLOOR: lambda: _row(cold_start.floor(subject)),
        CAPI_FLOOR: lambda: _row(cold_start.floor(subject, "capi_floor", memory_mb)),
        OURS: lambda: _row(cold_start.probe(subject, "handler.app", memory_mb)),
    }, repeat)


def _row(result: dict[str, Any]) -> dict[str, float]:
    """One cold run's figures: spawn → ready (``wall``), the cold init (``cold.cold_init``, the
    figure ``python -m benchmarks`` compares too), imports, session load, first run (the floors'
    first request, our warm-up), peak RSS."""
    stages = result["breakdown"]
    run = stages.get("warm-up", stages["first request"])
    return {"wall": result["wall"], "init": cold_start.cold_init(stages),
            "imports": stages["imports"], "load": stages["model-load"], "run": run,
            "rss_mb": result["rss_mb"]}


def warm(model: Path, iterations: int, blocks: int = 10) -> dict[str, list[float]]:
    """Microseconds per call for bare ``session.run`` and for the full handler."""
    from handler.bootstrap import create
    from handler.settings import Settings

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}))
    service.telemetry.stream = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the run)
    # The same handler without the per-request log/EMF line: what that line costs.
    quiet = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model),
                                      "ONNX_LAMBDA_METRICS": "false",
                                      "ONNX_LAMBDA_LOG_LEVEL": "warning"}))
    example = service.example_inputs()
    feeds = service.pipeline.preprocess(example, {})
    event = http_api_event(example)

    session = service.model.session  # the C-API session the handler runs
    ctx = LambdaContext("bench", 60_000)
    assert service(event, ctx)["statusCode"] == 200

    def timed(call: Any, answers: list[Any] | None = None) -> list[float]:
        samples = []
        for _ in range(iterations // blocks):
            started = time.perf_counter_ns()
            answer = call()
            samples.append((time.perf_counter_ns() - started) / 1e3)
            if answers is not None:
                answers.append(answer)
        return samples

    results: dict[str, list[float]] = {"session.run": [], "handler": [], "no-telemetry": [],
                                       "run in handler": []}
    for _ in range(blocks):
        results["session.run"] += timed(lambda: session.run(feeds))
        answers: list[Any] = []
        results["handler"] += timed(lambda: service(event, ctx), answers)
        results["no-telemetry"] += timed(lambda: quiet(event, ctx))
        # the same session.run inside the handler (its Server-Timing "inference", read after the
        # timed calls): slower than in a tight loop of bare runs, by the code around it
        results["run in handler"] += [
            parse_server_timing(a["headers"]["server-timing"])[0]["inference"] * 1e3
            for a in answers]
    service.telemetry.stream.close()
    return results


def session_options(subject: Subject, iterations: int, repeat: int = 5) -> str:
    """The measurement behind handler/model.py's choices: load time per graph-optimization
    level, and warm run time with thread-pool spinning and the CPU arena on/off."""
    import onnxruntime as ort

    inputs = json.loads(subject.body)["inputs"]
    levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}

    def make(level: str = "basic", spinning: bool = False, arena: bool = True) -> Any:
        options = ort.SessionOptions()
        options.graph_optimization_level = levels[level]
        options.enable_cpu_mem_arena = arena
        options.add_session_config_entry("session.intra_op.allow_spinning",
                                         "1" if spinning else "0")
        return ort.InferenceSession(str(subject.portable), options,
                                    providers=["CPUExecutionProvider"])

    def load(level: str) -> float:
        started = time.perf_counter()
        make(level)
        return (time.perf_counter() - started) * 1e3

    loads = interleave({level: (lambda lv=level: load(lv)) for level in levels}, repeat)
    lines = ["| graph optimization at load | load ms (median) | warm run µs p50 |",
             "|---|---|---|"]
    variants = {f"level={lv}": {"level": lv} for lv in levels}
    variants |= {"spinning on": {"spinning": True}, "arena off": {"arena": False}}
    runs: dict[str, list[float]] = {}
    for name, kwargs in variants.items():
        session = make(**kwargs)
        feeds = io.feeds(session, inputs)
        runs[name] = []
        for _ in range(iterations // 10):
            started = time.perf_counter_ns()
            session.run(None, feeds)
            runs[name].append((time.perf_counter_ns() - started) / 1e3)
    for level in levels:
        lines.append(f"| {level} | {percentile(loads[level], 50):.2f} | "
                     f"{percentile(runs[f'level={level}'], 50):.1f} |")
    lines += ["", "| basic + … | warm run µs p50 | p99 |", "|---|---|---|"]
    for name in ("level=basic", "spinning on", "arena off"):
        lines.append(f"| {name} | {percentile(runs[name], 50):.1f} | "
                     f"{percentile(runs[name], 99):.1f} |")
    return "\n".join(lines)


def powertools_import(repeat: int) -> str:
    """Why telemetry.py writes EMF itself: what importing Powertools Metrics would add."""
    def child(code: str) -> float:
        out = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); "
                              f"{code}; print((time.perf_counter() - t) * 1e3)"],
                             check=True, capture_output=True, text=True, cwd=root()).stdout
        return float(out)

    runs = interleave({
        "json (our EMF writer's only dependency)": lambda: child("import json"),
        "aws_lambda_powertools.Metrics": lambda: child(
            "from aws_lambda_powertools import Metrics; Metrics(namespace='N')"),
        "aws_lambda_powertools Logger + Metrics": lambda: child(
            "from aws_lambda_powertools import Logger, Metrics; Logger(); "
            "Metrics(namespace='N')"),
    }, repeat)
    lines = ["| import on the cold path | ms (median) |", "|---|---|"]
    lines += [f"| {name} | {percentile(samples, 50):.1f} |" for name, samples in runs.items()]
    return "\n".join(lines)


def report(model: Path, repeat: int, iterations: int) -> str:
    with prepare(model) as subject:  # the model's example as feeds, for every measurement
        cold_runs = cold(subject, repeat)
        warm_runs = warm(model, iterations)
        options = session_options(subject, iterations)
    lines = [f"model: {model} ({DEFINITION})", "",
             "| cold init (fresh process) | floor | C-API floor | onnx-lambda | ratio to floor "
             "| ratio to C-API floor |", "|---|---|---|---|---|---|"]
    for key, label in (("wall", "spawn → ready, median ms"),
                       ("init", "cold init (imports + session + first inference), ms"),
                       ("imports", "imports, ms"), ("load", "session load, ms"),
                       ("run", "first run / warm-up, ms"), ("rss_mb", "peak RSS, MB")):
        f, c, o = (percentile([r[key] for r in cold_runs[side]], 50)
                   for side in (FLOOR, CAPI_FLOOR, OURS))
        lines.append(f"| {label} | {f:.2f} | {c:.2f} | {o:.2f} | {o / f:.2f}× | {o / c:.2f}× |")
    paired = [paired_ratio([r["init"] for r in cold_runs[OURS]],
                           [r["init"] for r in cold_runs[side]]) for side in (FLOOR, CAPI_FLOOR)]
    lines.append(f"| cold init, median of the {repeat} rounds' own ratios | | | | "
                 f"{paired[0]:.2f}× | {paired[1]:.2f}× |")
    run, full, quiet, inside = (warm_runs[k] for k in ("session.run", "handler", "no-telemetry",
                                                       "run in handler"))
    lines += ["", "| warm, µs per call | p50 | p99 |", "|---|---|---|"]
    for label, samples in (("bare session.run", run), ("handler(event, ctx)", full),
                           ("handler, metrics and request log off", quiet),
                           ("session.run inside the handler (its `inference` stage)", inside)):
        lines.append(f"| {label} | {percentile(samples, 50):.1f} | {percentile(samples, 99):.1f} |")
    for label, samples in (("handler overhead", full), ("overhead without the log line", quiet)):
        lines.append(f"| {label} | {percentile(samples, 50) - percentile(run, 50):.1f} | "
                     f"{percentile(samples, 99) - percentile(run, 99):.1f} |")
    return "\n".join([*lines, "", options, "", powertools_import(repeat)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=15, help="cold processes per side")
    parser.add_argument("--iterations", type=int, default=20_000, help="warm calls per side")
    args = parser.parse_args(argv)
    print(report(args.model or default_model(), args.repeat, args.iterations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
