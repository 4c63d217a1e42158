"""Memory sizing, in the spirit of AWS Lambda Power Tuning (strategies ``cost``, ``speed``,
``balanced`` with a weight), but on percentiles and with cold starts.

A size whose vCPU share needs more cores than this host has cannot be emulated: its point is
*extrapolated* from the largest measured size (same latencies, i.e. no further speed-up: the
conservative assumption for the cost) and is never recommended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from onnx_lambda.emulator.limits import vcpus_for as vcpus
from onnx_lambda.plan.cost import PriceTable, cost_per_million

STRATEGIES = ("cost", "speed", "balanced")


def measurable(memory_mb: int, host_cpus: int) -> bool:
    return vcpus(memory_mb) <= host_cpus + 1e-9


@dataclass(frozen=True)
class SizePoint:
    memory_mb: int
    cold_init_ms: float  # init + first request (median)
    warm_p50_ms: float
    warm_p99_ms: float
    mean_billed_ms: float  # warm invocations, each rounded up to 1 ms
    cost_per_million: float = math.nan
    extrapolated_from: int | None = None  # the measured size it was derived from
    failed: str | None = None  # why this size could not run (init timeout, out of memory)

    @property
    def measured(self) -> bool:
        return self.extrapolated_from is None

    @property
    def usable(self) -> bool:
        return self.measured and self.failed is None

    def latency(self, metric: str) -> float:
        return {"p50": self.warm_p50_ms, "p99": self.warm_p99_ms}[metric]

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "vcpus": vcpus(self.memory_mb), "measured": self.measured}

    @classmethod
    def failure(cls, memory_mb: int, reason: str) -> SizePoint:
        return cls(memory_mb, math.nan, math.nan, math.nan, math.nan, failed=reason)


def priced(point: SizePoint, prices: PriceTable, *, arch: str = "x86_64",
           cold_fraction: float = 0.0) -> SizePoint:
    return replace(point, cost_per_million=cost_per_million(
        prices, point.memory_mb, point.mean_billed_ms, arch=arch, cold_fraction=cold_fraction,
        init_ms=point.cold_init_ms))


def extrapolate(measured: Sequence[SizePoint], sizes: Sequence[int]) -> list[SizePoint]:
    """Points for ``sizes`` that were not measured, from the largest measured size."""
    ran = [p for p in measured if p.failed is None]
    if not ran:
        return []
    top = max(ran, key=lambda p: p.memory_mb)
    have = {p.memory_mb for p in measured}
    return [replace(top, memory_mb=m, extrapolated_from=top.memory_mb)
            for m in sizes if m not in have]


def recommend(points: Sequence[SizePoint], strategy: str, *, weight: float = 0.5,
              metric: str = "p99") -> SizePoint:
    """``cost``: the cheapest; ``speed``: the lowest ``metric`` latency; ``balanced``: the
    lowest ``weight * cost/max cost + (1 - weight) * latency/max latency`` (weight 1 = cost,
    0 = speed, as Power Tuning's balancedWeight). Ties go to the smaller size. Only measured
    points that ran are eligible."""
    eligible = [p for p in points if p.usable]
    if not eligible:
        raise ValueError("no measured memory size to recommend from")
    if strategy == "cost":
        return min(eligible, key=lambda p: (p.cost_per_million, p.memory_mb))
    if strategy == "speed":
        return min(eligible, key=lambda p: (p.latency(metric), p.memory_mb))
    if strategy != "balanced":
        raise ValueError(f"strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight {weight} outside [0, 1]")
    top_cost = max(p.cost_per_million for p in eligible) or 1.0
    top_latency = max(p.latency(metric) for p in eligible) or 1.0

    def score(p: SizePoint) -> tuple[float, int]:
        return (weight * p.cost_per_million / top_cost
                + (1.0 - weight) * p.latency(metric) / top_latency, p.memory_mb)

    return min(eligible, key=score)


def write_samconfig(path: str | Path, value: int | str, *, parameter: str = "MemorySize",
                    section: str = "default.deploy.parameters") -> bool:
    """Set ``parameter`` in ``parameter_overrides`` of ``[section]`` of a samconfig.toml,
    keeping every other line as it is. Returns whether the file changed."""
    file = Path(path)
    lines = file.read_text(encoding="utf-8").splitlines(keepends=True) if file.exists() else []
    header = f"[{section}]"
    entry = f'{parameter}=\\"{value}\\"'
    in_section = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("["):
            in_section = stripped == header
        elif in_section and stripped.startswith("parameter_overrides"):
            value = line.split("=", 1)[1].strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            pattern = re.compile(rf'{parameter}=\\"[^\\"]*\\"')
            value = pattern.sub(entry.replace("\\", "\\\\"), value) if pattern.search(value) \
                else f"{value} {entry}".strip()
            new = f'parameter_overrides = "{value}"\n'
            changed = new != line
            lines[i] = new
            file.write_text("".join(lines), encoding="utf-8")
            return changed
    for i, line in enumerate(lines):  # section present, no overrides yet
        if line.strip() == header:
            lines.insert(i + 1, f'parameter_overrides = "{entry}"\n')
            break
    else:
        lines += [f"\n{header}\n", f'parameter_overrides = "{entry}"\n']
    file.write_text("".join(lines), encoding="utf-8")
    return True
