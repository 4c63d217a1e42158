"""``onnx-lambda tune``: cold init and warm latency per memory size through the emulator (its
CPU quota gives each size Lambda's vCPU share; the handler sizes its threads from the memory),
priced per million requests, with a recommendation per strategy.

Sizes are measured interleaved (128, 256, …, 128, 256, …), each repetition in a fresh
environment: one cold invocation, then ``warm`` sequential invocations whose REPORT durations
give p50/p99 and the billed duration.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from onnx_lambda.plan import sizing
from onnx_lambda.plan.cost import PriceTable, mean_billed_ms
from onnx_lambda.plan.emulated import emulated
from onnx_lambda.plan.subject import Subject
from onnx_lambda.stats import interleave, median, percentile

OURS = "handler.app"


def host_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def point(memory_mb: int, runs: Sequence[dict[str, Any]]) -> sizing.SizePoint:
    """Aggregate the repetitions of one size (a size fails when any repetition failed)."""
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return sizing.SizePoint.failure(memory_mb, errors[0])
    warm = [d for r in runs for d in r["warm_durations_ms"]]
    return sizing.SizePoint(
        memory_mb=memory_mb,
        cold_init_ms=median([r["init_ms"] + (r["first_duration_ms"] or 0.0) for r in runs]),
        warm_p50_ms=percentile(warm, 50), warm_p99_ms=percentile(warm, 99),
        mean_billed_ms=mean_billed_ms(warm) if warm else math.nan)


def run(subject: Subject, sizes: Sequence[int], *, repeat: int, warm: int,
        prices: PriceTable, arch: str = "x86_64", cold_fraction: float = 0.0,
        on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    cpus = host_cpus()
    measured_sizes = [m for m in sizes if sizing.measurable(m, cpus)]

    def step(m: int) -> Callable[[], dict[str, Any]]:
        def go() -> dict[str, Any]:
            try:
                result = emulated(subject, OURS, m, warm=warm)
            except RuntimeError as exc:  # init timeout, over the memory size, ...
                result = {"error": str(exc).splitlines()[0][:300], "cpu": "unknown"}
            if on_step:
                on_step(f"{m} MB")
            return result
        return go

    raw = interleave({str(m): step(m) for m in measured_sizes}, repeat)
    points = [point(m, raw[str(m)]) for m in measured_sizes]
    points += sizing.extrapolate(points, [m for m in sizes if m not in measured_sizes])
    points = sorted((p if p.failed else sizing.priced(p, prices, arch=arch,
                                                      cold_fraction=cold_fraction)
                     for p in points), key=lambda p: p.memory_mb)
    return {"host_cpus": cpus, "points": points,
            "cpu_limits": {m: raw[str(m)][0]["cpu"] for m in measured_sizes},
            "raw": {m: raw[str(m)] for m in measured_sizes
                    if not any("error" in r for r in raw[str(m)])}}
