"""Lambda Managed Instances beside on-demand and provisioned concurrency, for one traffic profile.

Managed Instances bill the EC2 on-demand price of every running instance plus a 15 % management
fee, and $0.20 per million requests; no duration charge. A capacity provider keeps at least three
instances (one per Availability Zone) by default. Each execution environment runs one Python
process per concurrent request, each with its own init, so the memory budget is
per-process RSS × processes, and a CPU-bound model gains throughput from vCPUs, not processes.

Assumptions (the defaults; each one is an argument):
- instances are sized for the peak: Managed Instances scale on CPU use, asynchronously, over
  minutes (AWS: traffic that more than doubles within 5 minutes may be throttled meanwhile), so
  a burst must fit in what already runs;
- an instance is full at ``utilization`` (70 %) of its vCPUs busy, as a target-tracking policy
  would hold it; ``reserve`` (10 %) of its memory goes to the OS and Lambda's agent;
- provisioned concurrency is sized for the peak too (peak rps × duration / utilization), and
  on-demand pays ``cold_fraction`` of its requests an init of ``init_ms``;
- the same warm duration everywhere: compare at equal p99 by giving Lambda a memory size with a
  full vCPU (1,769 MB), as one process per vCPU has on an instance.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from onnx_lambda.plan.cost import SECONDS_PER_MONTH, PriceTable, billed_ms, gb_seconds

HOURS_PER_MONTH = SECONDS_PER_MONTH / 3600.0
MEMORY_RESERVE = 0.1  # of an instance's memory, for the OS and Lambda's agent


@dataclass(frozen=True)
class Instance:
    name: str
    vcpus: int
    memory_gib: float
    per_hour: float  # EC2 on-demand, USD
    arch: str
    gpu_memory_gib: float = 0.0
    gpu: str = ""  # the GPU model, e.g. "NVIDIA L4" (GPU types only)
    gpu_fp32_tflops: float = 0.0  # published peaks: only gpu_compare.estimate reads them
    gpu_memory_gbps: float = 0.0


@dataclass(frozen=True)
class Traffic:
    mean_rps: float
    peak_rps: float
    duration_ms: float  # warm duration of one request (one process busy)

    def __post_init__(self) -> None:
        if self.mean_rps < 0 or self.peak_rps < self.mean_rps or self.duration_ms <= 0:
            raise ValueError("need 0 <= mean_rps <= peak_rps and duration_ms > 0")

    @property
    def requests(self) -> float:
        """Requests in a month."""
        return self.mean_rps * SECONDS_PER_MONTH


@dataclass(frozen=True)
class Option:
    """One way to serve the traffic: its monthly bill and how it is sized."""

    name: str
    monthly_usd: float
    sizing: str
    components: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def managed_terms(prices: PriceTable) -> dict[str, Any]:
    return prices.raw["managed_instances"]


def min_instances(prices: PriceTable) -> int:
    """The fleet a capacity provider keeps running at least (one instance per Availability
    Zone, three by default; ``prices.json`` holds the figure)."""
    return int(managed_terms(prices)["min_instances"])


def fleet_bill(prices: PriceTable, inst: Instance, count: int,
               requests: float) -> dict[str, float]:
    """A month of ``count`` instances serving ``requests`` (USD): ``ec2``, ``management_fee``
    and ``requests``."""
    terms = managed_terms(prices)
    ec2 = count * inst.per_hour * HOURS_PER_MONTH
    return {"ec2": ec2, "management_fee": ec2 * float(terms["management_fee"]),
            "requests": requests * float(terms["request_per_million"]) / 1e6}


def instance(prices: PriceTable, name: str) -> Instance:
    table = managed_terms(prices)["instances"]
    if name not in table:
        raise ValueError(f"no price for instance type {name!r} (known: {', '.join(table)})")
    return Instance(name=name, **table[name])


def processes_that_fit(inst: Instance, rss_mb: float, processes_per_vcpu: int, *,
                       reserve: float = MEMORY_RESERVE) -> int:
    """Processes one instance can hold: vCPUs × processes per vCPU, capped by its memory."""
    if rss_mb <= 0 or processes_per_vcpu < 1:
        raise ValueError("need rss_mb > 0 and processes_per_vcpu >= 1")
    budget_mb = inst.memory_gib * 1024.0 * (1.0 - reserve)
    return min(inst.vcpus * processes_per_vcpu, int(budget_mb // rss_mb))


def managed(traffic: Traffic, prices: PriceTable, inst: Instance, *, rss_mb: float,
            processes_per_vcpu: int = 1, utilization: float = 0.7,
            reserve: float = MEMORY_RESERVE) -> Option:
    processes = processes_that_fit(inst, rss_mb, processes_per_vcpu, reserve=reserve)
    if processes < 1:
        raise ValueError(f"one {rss_mb:.0f} MB process does not fit in {inst.name}'s "
                         f"{inst.memory_gib:g} GiB")
    # CPU-bound: a process on a vCPU of its own serves 1000 / duration requests a second.
    per_instance_rps = min(processes, inst.vcpus) * utilization * 1000.0 / traffic.duration_ms
    count = max(min_instances(prices), math.ceil(traffic.peak_rps / per_instance_rps))
    bill = fleet_bill(prices, inst, count, traffic.requests)
    memory_note = (f", {processes} processes x {rss_mb:.0f} MB = "
                   f"{processes * rss_mb / 1024.0:.1f} of {inst.memory_gib:g} GiB")
    return Option("managed-instances", sum(bill.values()),
                  f"{count} x {inst.name} ({inst.vcpus} vCPU){memory_note}", bill)


def provisioned(traffic: Traffic, prices: PriceTable, *, memory_mb: int, arch: str = "x86_64",
                utilization: float = 0.7) -> Option:
    per_configured, per_duration = prices.provisioned(arch)
    concurrency = max(1, math.ceil(traffic.peak_rps * traffic.duration_ms / 1000.0
                                   / utilization))
    idle = gb_seconds(memory_mb, 1000.0) * SECONDS_PER_MONTH * concurrency * per_configured
    duration = (traffic.requests * gb_seconds(memory_mb, billed_ms(traffic.duration_ms))
                * per_duration)
    requests = traffic.requests * prices.per_request
    return Option("provisioned", idle + duration + requests,
                  f"{concurrency} x {memory_mb} MB provisioned",
                  {"provisioned_idle": idle, "provisioned_duration": duration,
                   "requests": requests})


def on_demand(traffic: Traffic, prices: PriceTable, *, memory_mb: int, arch: str = "x86_64",
              cold_fraction: float = 0.0, init_ms: float = 0.0) -> Option:
    per_request_ms = billed_ms(traffic.duration_ms) + cold_fraction * (
        billed_ms(init_ms) if init_ms else 0.0)
    duration = prices.duration_cost(traffic.requests * gb_seconds(memory_mb, per_request_ms),
                                    arch)
    requests = traffic.requests * prices.per_request
    return Option("on-demand", duration + requests,
                  f"{memory_mb} MB, {cold_fraction:.1%} cold starts",
                  {"on_demand_duration": duration, "requests": requests})


def compare(traffic: Traffic, prices: PriceTable, inst: Instance, *, rss_mb: float,
            memory_mb: int = 1769, processes_per_vcpu: int = 1, utilization: float = 0.7,
            cold_fraction: float = 0.0, init_ms: float = 0.0) -> list[Option]:
    """The three options, cheapest first."""
    options = [
        on_demand(traffic, prices, memory_mb=memory_mb, arch=inst.arch,
                  cold_fraction=cold_fraction, init_ms=init_ms),
        provisioned(traffic, prices, memory_mb=memory_mb, arch=inst.arch,
                    utilization=utilization),
        managed(traffic, prices, inst, rss_mb=rss_mb, processes_per_vcpu=processes_per_vcpu,
                utilization=utilization),
    ]
    return sorted(options, key=lambda o: o.monthly_usd)


def break_even_rps(traffic: Traffic, prices: PriceTable, inst: Instance, against: str,
                   **kwargs: Any) -> float | None:
    """The mean rps (peak scaled with it) above which Managed Instances always cost less than
    ``against`` (``on-demand`` or ``provisioned``), up to 100x the given traffic; None if they
    never do there. The fleet grows in whole instances, so the difference is a sawtooth that
    may cross zero several times: this is the last crossing."""
    if traffic.mean_rps <= 0:
        return None
    ratio = traffic.peak_rps / traffic.mean_rps

    def dearer(rps: float) -> bool:
        scaled = Traffic(rps, rps * ratio, traffic.duration_ms)
        costs = {o.name: o.monthly_usd for o in compare(scaled, prices, inst, **kwargs)}
        return costs["managed-instances"] > costs[against]

    steps = 4000
    grid = [traffic.mean_rps / 1000.0 * 1e5 ** (i / steps) for i in range(steps + 1)]
    if dearer(grid[-1]):
        return None
    last = max((i for i, rps in enumerate(grid) if dearer(rps)), default=None)
    if last is None:
        return grid[0]
    low, high = grid[last], grid[last + 1]
    for _ in range(50):
        mid = (low + high) / 2.0
        low, high = (mid, high) if dearer(mid) else (low, mid)
    return high
