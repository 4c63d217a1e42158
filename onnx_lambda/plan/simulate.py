"""A Lambda lifecycle model for ``onnx-lambda simulate``: replay arrivals against execution
environments that start cold, serve one request at a time, are reused while warm and reaped
after an idle period, with a cold-start strategy (none, a warmer, provisioned concurrency, both,
or Lambda Managed Instances).

Pure Python and deterministic for a seed. Assumptions (all parameters):
- a request goes to an idle provisioned environment first, then to the most recently used idle
  on-demand one, else a new environment starts (init + request);
- on-demand environments are reaped after ``idle_s`` seconds without work (drawn per
  environment from a range when one is given: AWS does not publish the policy);
- the warmer fires every ``warmer_every_s`` seconds and sends N parallel pings that each hold an
  environment for ``hold_ms`` (so they spread over N environments); a ping that finds no idle
  environment starts one (and absorbs its cold start);
- provisioned environments exist from the start and are never reaped;
- latency at the function's front = queue-free service time (+ init when cold); the caller's
  network is added per region afterwards (``end_to_end``: a constant per request shifts every
  percentile by itself);
- Managed Instances: N instances of ``Workload.instance`` run from the start (initialised before
  traffic, so no cold start), one process per vCPU; a request waits for the first free
  process (its queueing counts in its latency). The fleet does not scale within the replay:
  AWS scales it asynchronously over minutes, so size N for the peak (``candidates`` does).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from onnx_lambda.plan.cost import SECONDS_PER_MONTH, Bill, PriceTable, billed_ms, gb_seconds
from onnx_lambda.stats import percentile

WARMER_MEMORY_MB = 256  # the warmer function's own size (template.yaml)
WARMER_OVERHEAD_MS = 50.0  # its own run beyond the longest ping (invoke round trips)


@dataclass(frozen=True)
class Strategy:
    provisioned: int = 0
    warmer: int = 0
    managed: int = 0  # Lambda Managed Instances: instances running

    @property
    def label(self) -> str:
        if self.managed:
            return f"managed-instances {self.managed}"
        parts = ([f"provisioned {self.provisioned}"] if self.provisioned else []) + \
                ([f"warmer {self.warmer}"] if self.warmer else [])
        return " + ".join(parts) or "none"

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """``none``, ``warmer:N``, ``provisioned:N``, ``both:P,W``, ``managed:N``."""
        kind, _, arg = text.partition(":")
        try:
            if kind == "none" and not arg:
                return cls()
            if kind == "warmer":
                return cls(warmer=int(arg))
            if kind == "provisioned":
                return cls(provisioned=int(arg))
            if kind == "managed":
                return cls(managed=int(arg))
            if kind == "both":
                p, w = arg.split(",")
                return cls(provisioned=int(p), warmer=int(w))
        except ValueError:
            pass
        raise ValueError(f"strategy {text!r}: use none, warmer:N, provisioned:N, both:P,W or "
                         "managed:N")


@dataclass(frozen=True)
class Workload:
    """What one environment costs in time, from measurements (milliseconds)."""

    service_ms: Sequence[float]  # warm durations, resampled
    init_ms: Sequence[float]  # cold init durations, resampled
    memory_mb: int = 1769
    arch: str = "x86_64"
    instance: str = "c7i.large"  # the Managed Instances type (prices.json)


@dataclass(frozen=True)
class Lifecycle:
    idle_s: tuple[float, float] = (600.0, 600.0)  # reaped after this long idle (range)
    warmer_every_s: float = 300.0
    hold_ms: float = 100.0


@dataclass
class _Env:
    provisioned: bool
    idle_limit_s: float
    busy_until: float = 0.0


@dataclass
class Result:
    strategy: Strategy
    requests: int
    cold_starts: int
    latencies_ms: list[float] = field(repr=False)
    environments: int
    peak_concurrency: int
    bill: Bill

    @property
    def cold_fraction(self) -> float:
        return self.cold_starts / self.requests if self.requests else 0.0

    def as_dict(self) -> dict[str, object]:
        return {"strategy": self.strategy.label, "provisioned": self.strategy.provisioned,
                "warmer": self.strategy.warmer, "managed": self.strategy.managed,
                "requests": self.requests,
                "cold_starts": self.cold_starts, "cold_fraction": self.cold_fraction,
                "p50_ms": percentile(self.latencies_ms, 50),
                "p99_ms": percentile(self.latencies_ms, 99),
                "p99.9_ms": percentile(self.latencies_ms, 99.9),
                "environments_started": self.environments,
                "peak_concurrency": self.peak_concurrency, "monthly_cost": self.bill.as_dict()}


class _Fleet:
    """The environments of one function."""

    def __init__(self, rng: random.Random, workload: Workload, lifecycle: Lifecycle,
                 provisioned: int) -> None:
        self.rng, self.workload, self.lifecycle = rng, workload, lifecycle
        self.envs = [_Env(True, float("inf")) for _ in range(provisioned)]
        self.started = 0
        self.peak = 0
        self._ends: list[float] = []  # busy-until of running invocations (concurrency)

    def reap(self, now: float) -> None:
        self.envs = [e for e in self.envs if e.provisioned or e.busy_until > now
                     or now - e.busy_until < e.idle_limit_s]

    def invoke(self, now: float, work_ms: float) -> tuple[float, bool, bool]:
        """Run ``work_ms`` on an idle environment or a new one: (duration ms, cold,
        provisioned)."""
        idle = [e for e in self.envs if e.busy_until <= now]
        env = max(idle, key=lambda e: (e.provisioned, e.busy_until), default=None)
        cold = env is None
        if env is None:
            low, high = self.lifecycle.idle_s
            env = _Env(False, self.rng.uniform(low, high))
            self.envs.append(env)
            self.started += 1
        duration = work_ms + (self.rng.choice(self.workload.init_ms) if cold else 0.0)
        env.busy_until = now + duration / 1000.0
        while self._ends and self._ends[0] <= now:
            heapq.heappop(self._ends)
        heapq.heappush(self._ends, env.busy_until)
        self.peak = max(self.peak, len(self._ends))
        return duration, cold, env.provisioned


@dataclass
class _Meter:
    """Billed milliseconds by kind of environment, and invocation count."""

    on_demand_ms: int = 0
    provisioned_ms: int = 0
    count: int = 0

    def add(self, duration_ms: float, provisioned: bool) -> None:
        self.count += 1
        if provisioned:
            self.provisioned_ms += billed_ms(duration_ms)
        else:
            self.on_demand_ms += billed_ms(duration_ms)

    def cost(self, prices: PriceTable, memory_mb: int, arch: str) -> float:
        return (self.count * prices.per_request
                + gb_seconds(memory_mb, self.on_demand_ms) * prices.first_tier(arch)
                + gb_seconds(memory_mb, self.provisioned_ms) * prices.provisioned(arch)[1])


def run(arrivals: Sequence[float], workload: Workload, strategy: Strategy, *,
        lifecycle: Lifecycle | None = None, prices: PriceTable | None = None,
        seed: int = 0, horizon_s: float | None = None) -> Result:
    """Replay ``arrivals`` (seconds, sorted) and bill the month the horizon extrapolates to."""
    lifecycle = lifecycle or Lifecycle()
    prices = prices or PriceTable.load()
    rng = random.Random(seed)
    horizon = horizon_s if horizon_s is not None else (arrivals[-1] if arrivals else 0.0)
    if strategy.managed:
        return _run_managed(arrivals, workload, strategy, prices, rng, horizon)
    fleet = _Fleet(rng, workload, lifecycle, strategy.provisioned)
    ticks = ([i * lifecycle.warmer_every_s
              for i in range(int(horizon // lifecycle.warmer_every_s) + 1)]
             if strategy.warmer else [])
    business, pings = _Meter(), _Meter()
    warmer_ms = 0  # the warmer function's own billed time
    latencies: list[float] = []
    cold_starts = 0

    def fire(tick: float) -> None:
        nonlocal warmer_ms
        fleet.reap(tick)
        longest = 0.0
        for _ in range(strategy.warmer):
            work = lifecycle.hold_ms + rng.choice(workload.service_ms)
            duration, _cold, provisioned = fleet.invoke(tick, work)
            pings.add(duration, provisioned)
            longest = max(longest, duration)
        warmer_ms += billed_ms(longest + WARMER_OVERHEAD_MS)

    pending = iter(ticks)
    tick = next(pending, None)
    for t in arrivals:
        while tick is not None and tick <= t:
            fire(tick)
            tick = next(pending, None)
        fleet.reap(t)
        duration, cold, provisioned = fleet.invoke(t, rng.choice(workload.service_ms))
        business.add(duration, provisioned)
        cold_starts += cold
        latencies.append(duration)
    while tick is not None:
        fire(tick)
        tick = next(pending, None)
    scale = SECONDS_PER_MONTH / horizon if horizon > 0 else 0.0
    mem, arch = workload.memory_mb, workload.arch
    warmer_runs = len(ticks)
    bill = Bill(
        requests=scale * business.count * prices.per_request,
        on_demand_duration=prices.duration_cost(
            scale * gb_seconds(mem, business.on_demand_ms), arch),
        provisioned_idle=(SECONDS_PER_MONTH * strategy.provisioned * mem / 1024.0
                          * prices.provisioned(arch)[0]),
        provisioned_duration=scale * gb_seconds(mem, business.provisioned_ms)
        * prices.provisioned(arch)[1],
        warmer=scale * (pings.cost(prices, mem, arch) + warmer_runs * prices.per_request
                        + gb_seconds(WARMER_MEMORY_MB, warmer_ms) * prices.first_tier(arch)),
    )
    return Result(strategy, len(arrivals), cold_starts, latencies, fleet.started, fleet.peak,
                  bill)


def _run_managed(arrivals: Sequence[float], workload: Workload, strategy: Strategy,
                 prices: PriceTable, rng: random.Random, horizon: float) -> Result:
    from onnx_lambda.plan.managed import fleet_bill, instance

    inst = instance(prices, workload.instance)
    free = [0.0] * (strategy.managed * inst.vcpus)  # when each process is next free
    latencies, peak, ends = [], 0, []
    for t in arrivals:
        start = max(t, heapq.heappop(free))
        service = rng.choice(workload.service_ms)
        heapq.heappush(free, start + service / 1000.0)
        latencies.append((start - t) * 1000.0 + service)
        while ends and ends[0] <= t:
            heapq.heappop(ends)
        heapq.heappush(ends, start + service / 1000.0)
        peak = max(peak, len(ends))
    scale = SECONDS_PER_MONTH / horizon if horizon > 0 else 0.0
    month = fleet_bill(prices, inst, strategy.managed, scale * len(arrivals))
    bill = Bill(requests=month["requests"],
                managed_instances=month["ec2"] + month["management_fee"])
    return Result(strategy, len(arrivals), 0, latencies, strategy.managed, peak, bill)


def managed_candidates(peak: int, vcpus: int, minimum: int) -> list[Strategy]:
    """Managed Instances fleets for a peak concurrency of ``peak``: the smallest that gives each
    concurrent request a vCPU (``minimum`` instances at least: ``managed.min_instances``), and
    one with twice the headroom."""
    fit = max(minimum, -(-peak // vcpus))
    return [Strategy(managed=fit), Strategy(managed=2 * fit)]


def candidates(peak: int) -> list[Strategy]:
    """Strategies worth comparing for a load whose unmanaged peak concurrency is ``peak``:
    none, and N in 1, 2, 4, … up to the peak for each of warmer, provisioned and both (a
    provisioned base P with a warmer reaching W > P environments)."""
    sizes = sorted({1 << i for i in range(max(peak, 1).bit_length()) if 1 << i <= peak}
                   | {max(peak, 1)})
    out = [Strategy()]
    out += [Strategy(warmer=n) for n in sizes]
    out += [Strategy(provisioned=n) for n in sizes]
    out += [Strategy(provisioned=p, warmer=w) for p in sizes for w in sizes if w > p]
    return out


def recommend(results: Sequence[Result], target: float = 0.01) -> Result:
    """The cheapest strategy whose cold-start fraction is at most ``target``; if none reaches
    it, the one with the fewest cold starts (then the cheapest)."""
    if not results:
        raise ValueError("no simulation results to choose from")
    meeting = [r for r in results if r.cold_fraction <= target]
    if meeting:
        return min(meeting, key=lambda r: (r.bill.total, r.cold_fraction))
    return min(results, key=lambda r: (r.cold_fraction, r.bill.total))
