"""A traffic scenario replayed against every cold-start strategy worth comparing: what
``onnx-lambda simulate`` prints, and what the lab's report (``python -m benchmarks``) runs with
its measured numbers. ``Scenario``'s defaults are the command's defaults."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from onnx_lambda.plan import simulate


class Scenario(NamedTuple):
    pattern: str = "bursty"  # steady | bursty | diurnal | csv
    csv: Path | None = None  # timestamps, for the csv pattern
    hours: float = 24.0
    rate: float = 0.2  # mean requests a second (the background rate for bursty)
    burst_every_min: float = 20.0
    burst_size: int = 20
    burst_spread_ms: float = 200.0
    peak_to_trough: float = 10.0  # diurnal
    idle_minutes: tuple[float, float] = (600.0, 600.0)  # reap after (seconds, a range)
    warmer_every_min: float = 5.0
    hold_ms: float = 100.0  # warmer ping hold
    target: float = 0.01  # cold-start fraction the recommendation must meet
    seed: int = 1
    strategy: tuple[str, ...] | None = None  # None: a sweep sized from the peak concurrency


class Sweep(NamedTuple):
    results: list[simulate.Result]
    recommended: simulate.Result
    requests: int
    horizon_s: float


def arrivals(scenario: Scenario, rng: random.Random) -> tuple[list[float], float]:
    """Request times (seconds, sorted) and the horizon they cover."""
    from onnx_lambda.plan import traffic  # the model is loaded on use: `--help` reads Scenario

    horizon = scenario.hours * 3600.0
    if scenario.pattern == "csv":
        if scenario.csv is None:
            raise ValueError("--pattern csv needs --csv FILE")
        times = traffic.from_csv(scenario.csv)
        return times, max(times[-1], 1.0)
    if scenario.pattern == "steady":
        return traffic.steady(rng, scenario.rate, horizon), horizon
    if scenario.pattern == "diurnal":
        return traffic.diurnal(rng, scenario.rate, horizon,
                               peak_to_trough=scenario.peak_to_trough), horizon
    return traffic.bursty(rng, scenario.rate, horizon, every_s=scenario.burst_every_min * 60.0,
                          size=scenario.burst_size,
                          spread_s=scenario.burst_spread_ms / 1000.0), horizon


def sweep(scenario: Scenario, work: simulate.Workload) -> Sweep:
    """Every strategy's result, the recommended one, the request count and the horizon."""
    from onnx_lambda.plan import simulate
    from onnx_lambda.plan.cost import PriceTable
    from onnx_lambda.plan.managed import instance, min_instances

    times, horizon = arrivals(scenario, random.Random(scenario.seed))
    if not times:
        raise ValueError("the traffic pattern produced no requests")
    life = simulate.Lifecycle(idle_s=scenario.idle_minutes,
                              warmer_every_s=scenario.warmer_every_min * 60.0,
                              hold_ms=scenario.hold_ms)

    def one(strategy: simulate.Strategy) -> simulate.Result:
        return simulate.run(times, work, strategy, lifecycle=life, seed=scenario.seed,
                            horizon_s=horizon)

    if scenario.strategy:
        strategies = [simulate.Strategy.parse(s) for s in scenario.strategy]
    else:
        peak = one(simulate.Strategy()).peak_concurrency
        prices = PriceTable.load()
        strategies = (simulate.candidates(peak) + simulate.managed_candidates(
            peak, instance(prices, work.instance).vcpus, min_instances(prices)))
    results = [one(s) for s in strategies]
    return Sweep(results, simulate.recommend(results, scenario.target), len(times), horizon)
