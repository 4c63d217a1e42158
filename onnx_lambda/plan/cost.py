"""The Lambda price model: requests, billed duration (GB-seconds, 1 ms granularity, tiered),
provisioned concurrency. Prices come from ``prices.json`` (dated, with its source)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRICES = Path(__file__).with_name("prices.json")
SECONDS_PER_MONTH = 30 * 24 * 3600


@dataclass(frozen=True)
class PriceTable:
    raw: dict[str, Any]

    @classmethod
    def load(cls, path: Path | None = None) -> PriceTable:
        return cls(json.loads((path or PRICES).read_text(encoding="utf-8")))

    @property
    def per_request(self) -> float:
        return float(self.raw["request_per_million"]) / 1e6

    def _arch(self, arch: str) -> dict[str, Any]:
        try:
            return self.raw["architectures"][arch]
        except KeyError:
            known = ", ".join(self.raw["architectures"])
            raise ValueError(f"no prices for architecture {arch!r} (known: {known})") from None

    def duration_cost(self, gb_seconds: float, arch: str = "x86_64") -> float:
        """On-demand duration cost of ``gb_seconds`` in one month, walking the tiers."""
        cost, lower, left = 0.0, 0.0, gb_seconds
        for tier in self._arch(arch)["duration_tiers"]:
            upper = tier["up_to_gb_seconds"]
            span = left if upper is None else min(left, upper - lower)
            cost += span * tier["per_gb_second"]
            left -= span
            if upper is None or left <= 0:
                break
            lower = upper
        return cost

    def first_tier(self, arch: str = "x86_64") -> float:
        return float(self._arch(arch)["duration_tiers"][0]["per_gb_second"])

    def provisioned(self, arch: str = "x86_64") -> tuple[float, float]:
        """(per GB-second configured, per GB-second of duration on provisioned environments)."""
        prices = self._arch(arch)["provisioned"]
        return float(prices["per_gb_second"]), float(prices["duration_per_gb_second"])


def gb_seconds(memory_mb: int, billed_ms: float) -> float:
    return memory_mb / 1024.0 * billed_ms / 1000.0


def billed_ms(duration_ms: float) -> int:
    """Lambda bills each invocation rounded up to the next millisecond."""
    return max(1, math.ceil(duration_ms))


def mean_billed_ms(durations_ms: Iterable[float]) -> float:
    values = [billed_ms(d) for d in durations_ms]
    return sum(values) / len(values) if values else math.nan


def cost_per_million(prices: PriceTable, memory_mb: int, mean_billed: float, *,
                     arch: str = "x86_64", cold_fraction: float = 0.0,
                     init_ms: float = 0.0) -> float:
    """USD per million on-demand requests of mean billed duration ``mean_billed`` ms, of which
    ``cold_fraction`` also pay an init of ``init_ms`` (billed since 2025-08-01)."""
    per_request_ms = mean_billed + cold_fraction * billed_ms(init_ms) if init_ms else mean_billed
    compute = gb_seconds(memory_mb, per_request_ms) * prices.first_tier(arch)
    return 1e6 * (prices.per_request + compute)


@dataclass(frozen=True)
class Bill:
    """One month of a function's charges, by component (USD)."""

    requests: float = 0.0
    on_demand_duration: float = 0.0
    provisioned_idle: float = 0.0
    provisioned_duration: float = 0.0
    warmer: float = 0.0
    managed_instances: float = 0.0  # EC2 + management fee (managed.py)

    @property
    def total(self) -> float:
        return (self.requests + self.on_demand_duration + self.provisioned_idle
                + self.provisioned_duration + self.warmer + self.managed_instances)

    def as_dict(self) -> dict[str, float]:
        return {"requests": self.requests, "on_demand_duration": self.on_demand_duration,
                "provisioned_idle": self.provisioned_idle,
                "provisioned_duration": self.provisioned_duration, "warmer": self.warmer,
                "managed_instances": self.managed_instances, "total": self.total}
