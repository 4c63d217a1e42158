"""Traffic patterns for ``onnx-lambda simulate``: arrival times in seconds from 0, sorted,
deterministic for a given ``random.Random``."""

from __future__ import annotations

import csv
import math
import random
from datetime import datetime
from pathlib import Path

DAY_S = 24 * 3600.0


def steady(rng: random.Random, rate: float, duration_s: float) -> list[float]:
    """Poisson arrivals at ``rate`` requests per second."""
    out: list[float] = []
    t = rng.expovariate(rate) if rate > 0 else duration_s
    while t < duration_s:
        out.append(t)
        t += rng.expovariate(rate)
    return out


def bursty(rng: random.Random, rate: float, duration_s: float, *, every_s: float,
           size: int, spread_s: float) -> list[float]:
    """Background Poisson traffic at ``rate`` plus, about every ``every_s`` seconds (±25 %), a
    burst of ``size`` requests spread uniformly over ``spread_s`` (a client fan-out, a batch job
    starting): the pattern that makes many environments start at once."""
    out = steady(rng, rate, duration_s)
    t = rng.uniform(0.0, every_s)
    while t < duration_s:
        out.extend(t + rng.uniform(0.0, spread_s) for _ in range(size))
        t += every_s * rng.uniform(0.75, 1.25)
    return sorted(x for x in out if x < duration_s)


def diurnal(rng: random.Random, rate: float, duration_s: float, *,
            peak_to_trough: float = 10.0) -> list[float]:
    """Poisson arrivals whose rate follows a day: mean ``rate``, trough at 04:00, peak at
    16:00, peak/trough = ``peak_to_trough`` (thinning of a process at the peak rate)."""
    amplitude = (peak_to_trough - 1.0) / (peak_to_trough + 1.0)
    peak = rate * (1.0 + amplitude)

    def rate_at(t: float) -> float:
        return rate * (1.0 - amplitude * math.cos(2.0 * math.pi * (t - 4 * 3600.0) / DAY_S))

    return [t for t in steady(rng, peak, duration_s) if rng.random() * peak < rate_at(t)]


def from_csv(path: Path) -> list[float]:
    """Timestamps from the first column of a CSV (header optional): epoch seconds or ISO 8601.
    Shifted so that the first request is at 0."""
    stamps: list[float] = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            if not row or not row[0].strip():
                continue
            cell = row[0].strip()
            try:
                stamps.append(float(cell))
            except ValueError:
                try:
                    stamps.append(datetime.fromisoformat(cell.replace("Z", "+00:00")).timestamp())
                except ValueError:
                    if stamps:  # only a first-row header may be non-numeric
                        raise ValueError(f"{path}: not a timestamp: {cell!r}") from None
    if not stamps:
        raise ValueError(f"{path}: no timestamps")
    stamps.sort()
    return [s - stamps[0] for s in stamps]
