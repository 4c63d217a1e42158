"""Handler cost against the floor, measured side by side in one run (issue: runtime handler).

    python -m onnx_lambda.bench.handler [--model models/digits] [--repeat 15]

- cold init: fresh interpreter → ready, interleaved (floor, C-API floor, ours, …). The floor is
  ``import numpy, onnxruntime; InferenceSession(portable model); run()``; the C-API floor is a
  bare interpreter with ``ctypes`` over libonnxruntime (``handler.ort``: load, session on the
  file and optimization level the handler uses, one run); ours is ``import handler.app``
  (settings, artifact, session, pipeline, warm-up inference).
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
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from onnx_lambda.bench.bytecode import compile_shipped
from onnx_lambda.bench.stats import interleave, percentile

ROOT = Path(__file__).resolve().parents[2]
_DTYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
           "tensor(double)": np.float64}

# Each child prints one JSON line: its own view of the init, and its peak RSS.
_FLOOR = """
import json, sys, time
from onnx_lambda.bench.rss import peak_rss_mb
t0 = time.perf_counter()
import numpy as np, onnxruntime as ort
t1 = time.perf_counter()
session = ort.InferenceSession(sys.argv[1])
t2 = time.perf_counter()
feeds = {i.name: np.asarray(v, dtype=np.float32 if 'float' in i.type else np.int64)
         for i, v in zip(session.get_inputs(), json.loads(sys.argv[2]))}
session.run(None, feeds)
t3 = time.perf_counter()
print(json.dumps({"imports": (t1 - t0) * 1e3, "load": (t2 - t1) * 1e3, "run": (t3 - t2) * 1e3,
                  "init": (t3 - t0) * 1e3, "rss_mb": peak_rss_mb()}))
"""
_CAPI_FLOOR = """
import json, os, sys, time
from onnx_lambda.bench.rss import peak_rss_mb
t0 = time.perf_counter()
from handler.ort.session import Session
from handler.ort.tensor import from_values
t1 = time.perf_counter()
session = Session(sys.argv[1], intra_op_threads=len(os.sched_getaffinity(0)),
                  optimization=sys.argv[2])
t2 = time.perf_counter()
session.run({name: from_values(dtype, tuple(shape), flat)
             for name, dtype, shape, flat in json.loads(sys.argv[3])})
t3 = time.perf_counter()
print(json.dumps({"imports": (t1 - t0) * 1e3, "load": (t2 - t1) * 1e3, "run": (t3 - t2) * 1e3,
                  "init": (t3 - t0) * 1e3, "rss_mb": peak_rss_mb()}))
"""
_OURS = """
import json, time
from onnx_lambda.bench.rss import peak_rss_mb
t0 = time.perf_counter()
import handler.app as app
d = app.SERVICE.init_durations
print(json.dumps({"imports": d["imports"], "load": d["model-load"], "run": d.get("warmup", 0.0),
                  "init": (time.perf_counter() - t0) * 1e3, "rss_mb": peak_rss_mb()}))
"""


def floor_inputs(model: Path) -> tuple[Path, list[Any]]:
    """The portable model file and one example input per model input (as nested lists)."""
    from handler.bootstrap import create
    from handler.settings import Settings

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}, warmup=False))
    manifest = service.model.artifact.manifest
    portable = service.model.artifact.path if manifest is None else model / manifest.portable
    feeds = service.pipeline.preprocess(service.example_inputs(), {})
    return portable, [feeds[spec.name].tolist() for spec in service.model.inputs]


def capi_floor_args(model: Path) -> list[str]:
    """The C-API floor's argv: the file and optimization level the handler loads, and the
    warm-up's feeds as (name, dtype, shape, flat values)."""
    from handler.bootstrap import create
    from handler.settings import Settings

    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(model)}, warmup=False))
    feeds = service.pipeline.preprocess(service.example_inputs(), {})
    return [str(service.model.artifact.path), service.model.graph_optimization,
            json.dumps([[name, t.dtype, list(t.shape), t.flat()] for name, t in feeds.items()])]


def _child(code: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    wall = (time.perf_counter() - started) * 1e3
    return {**json.loads(out.strip().splitlines()[-1]), "wall": wall}


def cold(model: Path, repeat: int) -> dict[str, list[dict[str, float]]]:
    compile_shipped()
    portable, inputs = floor_inputs(model)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ONNX_LAMBDA_MODEL": str(model),
           "ONNX_LAMBDA_LOG_LEVEL": "warning"}
    floor_args = [str(portable), json.dumps(inputs)]
    capi_args = capi_floor_args(model)
    return interleave({
        "floor": lambda: _child(_FLOOR, floor_args, env),
        "C-API floor": lambda: _child(_CAPI_FLOOR, capi_args, env),
        "onnx-lambda": lambda: _child(_OURS, [], env),
    }, repeat)


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
    event = {"version": "2.0", "rawPath": "/predict", "headers": {
        "content-type": "application/json"}, "requestContext": {
        "http": {"method": "POST", "path": "/predict"}, "stage": "$default"},
        "body": json.dumps({"inputs": example}), "isBase64Encoded": False}

    class Context:
        aws_request_id = "bench"

        @staticmethod
        def get_remaining_time_in_millis() -> int:
            return 60_000

    session = service.model.session  # the C-API session the handler runs
    ctx = Context()
    assert service(event, ctx)["statusCode"] == 200

    def timed(call: Any) -> list[float]:
        samples = []
        for _ in range(iterations // blocks):
            started = time.perf_counter_ns()
            call()
            samples.append((time.perf_counter_ns() - started) / 1e3)
        return samples

    results: dict[str, list[float]] = {"session.run": [], "handler": [], "no-telemetry": []}
    for _ in range(blocks):
        results["session.run"] += timed(lambda: session.run(feeds))
        results["handler"] += timed(lambda: service(event, ctx))
        results["no-telemetry"] += timed(lambda: quiet(event, ctx))
    return results


def session_options(model: Path, iterations: int, repeat: int = 5) -> str:
    """The measurement behind handler/model.py's choices: load time per graph-optimization
    level, and warm run time with thread-pool spinning and the CPU arena on/off."""
    import onnxruntime as ort

    portable, inputs = floor_inputs(model)
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
        return ort.InferenceSession(str(portable), options, providers=["CPUExecutionProvider"])

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
        feeds = {i.name: np.asarray(v, dtype=_DTYPES.get(i.type, np.float32))
                 for i, v in zip(session.get_inputs(), inputs, strict=True)}
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
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
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


def default_model() -> Path:
    digits = ROOT / "models" / "digits"
    if (digits / "model.json").exists():
        return digits
    from tests.support.models import linear

    return linear(Path(tempfile.mkdtemp()) / "linear.onnx")


def report(model: Path, repeat: int, iterations: int) -> str:
    cold_runs = cold(model, repeat)
    warm_runs = warm(model, iterations)
    lines = [f"model: {model}", "",
             "| cold init (fresh process) | floor | C-API floor | onnx-lambda | ratio to floor "
             "| ratio to C-API floor |", "|---|---|---|---|---|---|"]
    for key, label in (("wall", "spawn → ready, median ms"), ("init", "in-process init, ms"),
                       ("imports", "imports, ms"), ("load", "session load, ms"),
                       ("run", "first run / warm-up, ms"), ("rss_mb", "peak RSS, MB")):
        f, c, o = (percentile([r[key] for r in cold_runs[side]], 50)
                   for side in ("floor", "C-API floor", "onnx-lambda"))
        lines.append(f"| {label} | {f:.2f} | {c:.2f} | {o:.2f} | {o / f:.2f}× | {o / c:.2f}× |")
    run, full, quiet = (warm_runs[k] for k in ("session.run", "handler", "no-telemetry"))
    lines += ["", "| warm, µs per call | p50 | p99 |", "|---|---|---|"]
    for label, samples in (("bare session.run", run), ("handler(event, ctx)", full),
                           ("handler, metrics and request log off", quiet)):
        lines.append(f"| {label} | {percentile(samples, 50):.1f} | {percentile(samples, 99):.1f} |")
    for label, samples in (("handler overhead", full), ("overhead without the log line", quiet)):
        lines.append(f"| {label} | {percentile(samples, 50) - percentile(run, 50):.1f} | "
                     f"{percentile(samples, 99) - percentile(run, 99):.1f} |")
    return "\n".join([*lines, "", session_options(model, iterations), "",
                      powertools_import(repeat)])


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
