"""``--quantize auto --objective latency|size``: try the menu's methods on this machine, gate and
tune each, and keep the best that passes for the objective.

Every try is listed (method, size, p50 at batch 1, accuracy, outcome) for the build's output
and the manifest. Bounded: the first try always runs, a later one only while the elapsed time
is under ``budget_s`` (each try's own tuning is bounded as in ``quantize.tune``), so it always
ends; tries not started are listed as skipped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from handler.artifact import Artifact
from handler.model import Model
from onnx_lambda.build_model import measure, quant_methods, quantize
from onnx_lambda.build_model.errors import AccuracyGateError, BuildError, NothingToQuantizeError
from onnx_lambda.build_model.gate import Feeds, Thresholds

# (method, int4 algo) in the order tried: cheap and usually best first, so a short budget still
# gets the likely winner.
TRIES = {
    "latency": (("int8-mixed", None), ("int8-dynamic", None), ("int4", "rtn"),
                ("int8-static", None), ("fp16", None), ("int4", "hqq")),
    "size": (("int4", "rtn"), ("int8-mixed", None), ("int4", "hqq"), ("int8-dynamic", None),
             ("int8-static", None), ("fp16", None)),
}


@dataclasses.dataclass
class Chosen:
    settings: quantize.QuantizeSettings
    result: quantize.QuantizeResult
    path: Path
    tries: list[dict[str, Any]]


def choose(source: Path, work: Path, base: quantize.QuantizeSettings,
           evaluate: quantize.Evaluate, limits: Thresholds, calibration: Sequence[Feeds],
           feeds: Feeds, objective: str, budget_s: float, level: str,
           on_attempt: Callable[[str], None]) -> Chosen:
    """``level``: the offline optimization the artifact gets (each try is measured at it, one
    thread, batch 1: QDQ and MatMulNBits fusions happen there)."""
    start = time.monotonic()
    tries: list[dict[str, Any]] = []
    passed: list[tuple[tuple[float, float], Chosen]] = []
    for index, (method, algo) in enumerate(TRIES[objective]):
        settings = base.switched(method, algo)
        row: dict[str, Any] = {"method": settings.label}
        tries.append(row)
        missing = quant_methods.missing_package(method, algo)
        if missing:
            row["outcome"] = f"skipped (needs {missing})"
            continue
        if index and time.monotonic() - start >= budget_s:
            row["outcome"] = f"skipped (time budget {budget_s:g} s spent)"
            continue
        target = work / f"auto-{index}.onnx"
        on_attempt(f"try {settings.label}")
        try:
            result = quantize.tune(source, target, settings, evaluate, limits,
                                   on_attempt=on_attempt, calibration=calibration)
        except BuildError as exc:  # the gate refused it, nothing to quantize, a broken result
            row["outcome"] = ("failed the gate" if isinstance(exc, AccuracyGateError)
                              else "nothing to quantize" if isinstance(exc, NothingToQuantizeError)
                              else "failed")
            row["reason"] = exc.message.splitlines()[0]
            continue
        size = target.stat().st_size
        p50 = measure.p50(Model(Artifact(target, None, False), threads=1,
                                graph_optimization=level), feeds)
        row |= {"outcome": "passed" if result.quantized else "passed (nothing quantized)",
                "size_bytes": size, "p50_ms": round(p50, 4), "accuracy": result.accuracy.to_dict(),
                "quantized_nodes": result.quantized}
        on_attempt(f"{settings.label}: {size / 1024 / 1024:.2f} MiB, p50 {p50:.3f} ms, "
                   f"{result.accuracy.describe()}")
        if result.quantized:
            key = (p50, size) if objective == "latency" else (size, p50)
            passed.append((key, Chosen(settings, result, target, tries)))
    elapsed = time.monotonic() - start
    if not passed and all(row["outcome"].startswith(("nothing", "skipped")) for row in tries):
        reason = tries[0].get("reason", "nothing to quantize")
        raise NothingToQuantizeError(f"--quantize auto: {reason}")
    if not passed:
        lines = "\n".join(f"  {row['method']}: {row['outcome']}" for row in tries)
        raise AccuracyGateError(f"--quantize auto: no method passed the accuracy gate "
                                f"({elapsed:.0f} s).\nTries:\n{lines}\nLoosen the gate, or "
                                "build without --quantize.")
    best = min(passed, key=lambda item: item[0])[1]
    for row in tries:
        row["chosen"] = row["method"] == best.settings.label
    return best

