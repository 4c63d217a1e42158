"""``--quantize auto --objective latency|size``: try the menu's methods on this machine, gate and
tune each, and keep the best that passes for the objective.

Every try is listed (method, size, p50 and CPU time at batch 1, accuracy, outcome) for the
build's output and the manifest. Bounded: the first try always runs, a later one only while the
elapsed time is under ``budget_s`` (each try's own tuning is bounded as in ``quantize.tune``), and
the passing ones are then measured side by side for a few seconds each, so it always ends; tries
not started are listed as skipped. An example may bring its own, smaller candidate set (``
ModelSpec.auto_tries``: variants of the methods known to fit its architecture).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from handler.artifact import Artifact
from handler.model import Model
from onnx_lambda.build_model import measure, optimize, quant_methods, quantize
from onnx_lambda.build_model.errors import AccuracyGateError, BuildError, NothingToQuantizeError
from onnx_lambda.build_model.gate import Feeds, Thresholds

# CPU times this close are one figure on a shared VM (the same try measures a few per cent apart
# from build to build): among the tries within it of the fastest, the most accurate wins (min
# cosine, then mean), so a rebuild keeps the same pick and the wider gate margin.
LATENCY_TIE = 0.03


@dataclasses.dataclass
class Chosen:
    settings: quantize.QuantizeSettings
    result: quantize.QuantizeResult
    path: Path
    tries: list[dict[str, Any]]


def menu(base: quantize.QuantizeSettings, objective: str,
         pipeline: str | None = None) -> list[quantize.QuantizeSettings]:
    """The generic candidates: the records' tries for ``objective`` that may serve
    ``pipeline`` (``quant_methods.tries``), on ``base``'s settings."""
    return [base.switched(r.method, r.algo) for r in quant_methods.tries(objective, pipeline)]


def choose(source: Path, work: Path, candidates: Sequence[quantize.QuantizeSettings],
           evaluate: quantize.Evaluate, limits: Thresholds, calibration: Sequence[Feeds],
           feeds: Feeds, objective: str, budget_s: float, level: str,
           on_attempt: Callable[[str], None]) -> Chosen:
    """``candidates``: the settings to try, in order (``menu``, or an example's own set).
    ``level``: the offline optimization the artifact gets (each passing try is measured at it,
    one thread, batch 1, optimized offline as the artifact is: QDQ and MatMulNBits fusions
    happen there, ``optimize.UNFUSED`` does not), all of them interleaved
    once every try is done; latency compares their CPU time (``measure.interleaved``), a tie
    within ``LATENCY_TIE`` going to the more accurate try."""
    start = time.monotonic()
    tries: list[dict[str, Any]] = []
    passed: list[tuple[dict[str, Any], Chosen]] = []
    for index, settings in enumerate(candidates):
        row: dict[str, Any] = {"method": settings.name}
        tries.append(row)
        missing = quant_methods.missing_package(settings.method, settings.algo)
        if missing:
            row["outcome"] = f"skipped (needs {missing})"
            continue
        if index and time.monotonic() - start >= budget_s:
            row["outcome"] = f"skipped (time budget {budget_s:g} s spent)"
            continue
        target = work / f"auto-{index}.onnx"
        on_attempt(f"try {settings.name}")
        try:
            result = quantize.tune(source, target, settings, evaluate, limits,
                                   on_attempt=on_attempt, calibration=calibration)
        except BuildError as exc:  # the gate refused it, nothing to quantize, a broken result
            row["outcome"] = ("failed the gate" if isinstance(exc, AccuracyGateError)
                              else "nothing to quantize" if isinstance(exc, NothingToQuantizeError)
                              else "failed")
            row["reason"] = exc.message.splitlines()[0]
            continue
        row |= {"outcome": "passed" if result.quantized else "passed (nothing quantized)",
                "size_bytes": target.stat().st_size, "accuracy": result.accuracy.to_dict(),
                "quantized_nodes": result.quantized}
        on_attempt(f"{settings.name}: {row['size_bytes'] / 1024 / 1024:.2f} MiB, "
                   f"{result.accuracy.describe()}")
        if result.quantized:
            passed.append((row, Chosen(settings, result, target, tries)))
    if not passed and all(row["outcome"].startswith(("nothing", "skipped")) for row in tries):
        reason = tries[0].get("reason", "nothing to quantize")
        raise NothingToQuantizeError(f"--quantize auto: {reason}")
    if not passed:
        lines = "\n".join(f"  {row['method']}: {row['outcome']}" for row in tries)
        raise AccuracyGateError(f"--quantize auto: no method passed the accuracy gate "
                                f"({time.monotonic() - start:.0f} s).\nTries:\n{lines}\n"
                                "Loosen the gate, or build without --quantize.")
    models = []
    for _, chosen in passed:  # optimized offline as the artifact will be (optimize.UNFUSED)
        optimized = chosen.path.with_name(f"{chosen.path.stem}.opt.onnx")
        optimize.optimize_offline(chosen.path, optimized, level)
        models.append(Model(Artifact(optimized, None, True), threads=1,
                            graph_optimization="disable"))
    for (row, _), (wall, cpu) in zip(passed, measure.interleaved(models, feeds), strict=True):
        row |= {"p50_ms": round(wall, 4), "cpu_ms": round(cpu, 4)}
        on_attempt(f"{row['method']}: p50 {wall:.3f} ms (CPU {cpu:.3f} ms)")
    if objective == "latency":
        fastest = min(row["cpu_ms"] for row, _ in passed)
        tied = [item for item in passed if item[0]["cpu_ms"] <= fastest * (1 + LATENCY_TIE)]
        best_row, best = max(tied, key=lambda item: (item[1].result.accuracy.score(),
                                                      -item[0]["cpu_ms"]))
    else:
        best_row, best = min(passed, key=lambda item: (item[0]["size_bytes"], item[0]["cpu_ms"]))
    for row in tries:
        row["chosen"] = row is best_row
    return best
