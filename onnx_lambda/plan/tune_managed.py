"""``onnx-lambda tune --managed-instances``: processes per vCPU for a Lambda Managed Instances
environment, measured in the emulator.

Per setting (processes per vCPU P), one fresh LMI environment of ``vcpus`` vCPUs (the CFS quota
all its processes share) runs ``P x vcpus`` real awslambdaric workers, each with its own init.
Once every worker answers (``vcpus x P`` held warm-up pings at once, each on its own process),
``concurrency`` closed-loop clients send ``requests`` invocations. Per setting: p50/p99 of the
REPORT durations, the client-observed p99, the share throttled (Lambda Managed Instances reject
what finds every process busy; behind API Gateway that is a 500), the environment's memory as
PSS summed over its processes (RSS counts the shared library pages once per process), whether
it fits, and the cost per million requests at the rate the setting sustained.

Cost: instances run at ``utilization`` of what they can do (the target-tracking value
``onnx-lambda price`` uses); an instance of V' vCPUs holds V' / ``vcpus`` environments; USD per
million = (EC2 per hour x 1.15) / environments per instance / (sustained rps x utilization x
3600) x 1e6, plus $0.20. The three-instance minimum is a floor on the fleet, not on the price
per request at load: ``onnx-lambda price`` accounts for it.

The recommendation: among the settings that fit and never throttled, the lowest p99; settings
within ``tolerance`` of it tie (timings here swing), and a tie goes to fewer processes.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from onnx_lambda.plan.cost import PriceTable
from onnx_lambda.plan.emulated import InvokeClient, emulator
from onnx_lambda.plan.managed import MEMORY_RESERVE, Instance, managed_terms
from onnx_lambda.plan.process_memory import rollup
from onnx_lambda.plan.subject import Subject
from onnx_lambda.stats import percentile

RETRY_PAUSE_S = 0.005  # a throttled client waits this long before its next request
READY_HOLD_MS = 300  # warm-up pings hold their process this long, so they spread over all


@dataclass(frozen=True)
class Setting:
    """One measured processes-per-vCPU setting."""

    processes_per_vcpu: int
    processes: int
    vcpus: int
    environment_memory_mb: int  # what the environment is configured with (vCPUs x GiB/vCPU)
    requests: int = 0
    throttled: int = 0
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    client_p99_ms: float = math.nan
    sustained_rps: float = math.nan
    rss_mb: float = math.nan  # summed over the environment's processes
    pss_mb: float = math.nan  # the same, shared pages split: what the environment holds
    fits: bool = False
    cost_per_million: float = math.nan
    failed: str | None = None

    @property
    def throttle_fraction(self) -> float:
        total = self.requests + self.throttled
        return self.throttled / total if total else 0.0

    @property
    def eligible(self) -> bool:
        return self.failed is None and self.fits and self.throttled == 0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "throttle_fraction": self.throttle_fraction,
                "eligible": self.eligible}


def environments_per_instance(inst: Instance, vcpus: int) -> int:
    return inst.vcpus // vcpus


def fits(inst: Instance, vcpus: int, pss_mb: float, memory_mb: int) -> bool:
    """Within the environment's own memory, and the instance holds its environments."""
    usable = inst.memory_gib * 1024.0 * (1.0 - MEMORY_RESERVE)
    budget = usable / environments_per_instance(inst, vcpus)
    return pss_mb <= min(memory_mb, budget)


def cost_per_million(prices: PriceTable, inst: Instance, vcpus: int, rps: float,
                     utilization: float) -> float:
    """USD per million requests for one environment sustaining ``rps`` at full load."""
    if not rps > 0:
        return math.nan
    terms = managed_terms(prices)
    per_hour = inst.per_hour * (1.0 + float(terms["management_fee"]))
    per_env_hour = per_hour / environments_per_instance(inst, vcpus)
    requests_per_hour = rps * utilization * 3600.0
    return per_env_hour / requests_per_hour * 1e6 + float(terms["request_per_million"])


def _parallel(count: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except Exception as exc:  # reported by the caller, with the others
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def wait_for_workers(url: str, processes: int, timeout_s: float) -> None:
    """Until ``processes`` held pings at once are all served, each by another process."""
    ping = json.dumps({"warmer": True, "holdMs": READY_HOLD_MS}).encode()
    deadline = time.monotonic() + timeout_s
    answers: list[str | None] = [None] * processes

    def one(i: int) -> None:
        client = InvokeClient(url, throttled_ok=True)
        try:
            got = client.invoke(ping)
            answers[i] = None if got is None else json.loads(got[2])["environmentId"]
        finally:
            client.close()

    while True:
        answers[:] = [None] * processes
        errors = _parallel(processes, one)
        if errors:
            raise RuntimeError(f"warm-up ping failed: {errors[0]}")
        if None not in answers and len(set(answers)) == processes:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{sum(a is not None for a in answers)} of {processes} "
                               f"processes answered within {timeout_s:g} s")
        time.sleep(0.2)


def drive(url: str, payload: bytes, *, concurrency: int, requests: int,
          timeout_s: float) -> dict[str, Any]:
    """``concurrency`` closed-loop clients until ``requests`` are served (or ``timeout_s``)."""
    durations: list[float] = []
    client_ms: list[float] = []
    throttled = [0]
    lock = threading.Lock()
    left = [requests]
    deadline = time.monotonic() + timeout_s

    def client(_: int) -> None:
        invoker = InvokeClient(url, throttled_ok=True)
        try:
            while time.monotonic() < deadline:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                got = invoker.invoke(payload)
                with lock:
                    if got is None:
                        throttled[0] += 1
                        left[0] += 1  # not served: still owed
                    else:
                        client_ms.append(got[0])
                        durations.append(got[1].get("Duration", math.nan))
                if got is None:
                    time.sleep(RETRY_PAUSE_S)
        finally:
            invoker.close()

    started = time.perf_counter()
    errors = _parallel(concurrency, client)
    wall_s = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"invocation failed: {errors[0]}")
    return {"durations_ms": durations, "client_ms": client_ms, "throttled": throttled[0],
            "wall_s": wall_s}


def environment_memory(serve_pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MB summed over the environment's processes: the runtime ``serve`` started
    and its forked workers."""
    import psutil

    tree = psutil.Process(serve_pid).children(recursive=True)
    rollups = [rollup(p.pid) for p in tree]
    return sum(r["Rss"] for r in rollups), sum(r["Pss"] for r in rollups)


def measure(subject: Subject, per_vcpu: int, *, vcpus: int, gib_per_vcpu: int,
            concurrency: int, requests: int, timeout_s: float,
            extra_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One setting in a fresh emulator: its samples, memory and the CPU limit it ran under."""
    processes = per_vcpu * vcpus
    memory_mb = vcpus * gib_per_vcpu * 1024
    env = {**subject.environment(memory_mb), **(extra_env or {})}
    payload = subject.event_file.read_bytes()
    # one environment; memory is judged from PSS below, not from the emulator's RSS sum
    with emulator("handler.app.handler", env, memory_mb=memory_mb, concurrency=1,
                          managed=(processes, gib_per_vcpu),
                          extra_args=["--no-memory-limit", "--init-timeout",
                                      str(int(timeout_s))]) as server:
        wait_for_workers(server.url, processes, timeout_s)
        run = drive(server.url, payload, concurrency=concurrency, requests=requests,
                    timeout_s=timeout_s)
        run["rss_mb"], run["pss_mb"] = environment_memory(server.process.pid)
    return run


def setting(per_vcpu: int, runs: Sequence[dict[str, Any]], *, vcpus: int, gib_per_vcpu: int,
            inst: Instance, prices: PriceTable, utilization: float) -> Setting:
    """Aggregate the repetitions of one setting and price it."""
    memory_mb = vcpus * gib_per_vcpu * 1024
    base = Setting(per_vcpu, per_vcpu * vcpus, vcpus, memory_mb)
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return replace(base, failed=errors[0])
    durations = [d for r in runs for d in r["durations_ms"]]
    client = [d for r in runs for d in r["client_ms"]]
    rps = len(durations) / sum(r["wall_s"] for r in runs)
    pss = max(r["pss_mb"] for r in runs)
    return replace(
        base, requests=len(durations), throttled=sum(r["throttled"] for r in runs),
        p50_ms=percentile(durations, 50), p99_ms=percentile(durations, 99),
        client_p99_ms=percentile(client, 99), sustained_rps=rps,
        rss_mb=max(r["rss_mb"] for r in runs), pss_mb=pss,
        fits=fits(inst, vcpus, pss, memory_mb),
        cost_per_million=cost_per_million(prices, inst, vcpus, rps, utilization))


def recommend(settings: Sequence[Setting], tolerance: float = 0.1) -> Setting | None:
    """The fewest processes whose p99 is within ``tolerance`` of the lowest, among the
    settings that fit and never throttled; None when no setting qualifies."""
    eligible = [s for s in settings if s.eligible]
    if not eligible:
        return None
    best = min(s.p99_ms for s in eligible)
    return min((s for s in eligible if s.p99_ms <= best * (1.0 + tolerance)),
               key=lambda s: s.processes_per_vcpu)


def check_instance(inst: Instance, vcpus: int) -> None:
    if vcpus < 1 or environments_per_instance(inst, vcpus) < 1:
        raise ValueError(f"an environment of {vcpus} vCPU does not fit {inst.name} "
                         f"({inst.vcpus} vCPU)")


def run(subject: Subject, per_vcpu: Sequence[int], *, vcpus: int, gib_per_vcpu: int,
        concurrency: int, requests: int, repeat: int, inst: Instance, prices: PriceTable,
        utilization: float, timeout_s: float = 300.0,
        on_step: Callable[[str], None] | None = None) -> list[Setting]:
    """Every setting, interleaved over ``repeat`` fresh environments each."""
    from onnx_lambda.stats import interleave

    check_instance(inst, vcpus)

    def step(p: int) -> Callable[[], dict[str, Any]]:
        def go() -> dict[str, Any]:
            try:
                result = measure(subject, p, vcpus=vcpus, gib_per_vcpu=gib_per_vcpu,
                                 concurrency=concurrency, requests=requests,
                                 timeout_s=timeout_s)
            except RuntimeError as exc:  # a worker that never came up, a failed invocation
                result = {"error": str(exc).splitlines()[0][:300]}
            if on_step:
                on_step(f"{p} per vCPU")
            return result
        return go

    raw = interleave({str(p): step(p) for p in per_vcpu}, repeat)
    return [setting(p, raw[str(p)], vcpus=vcpus, gib_per_vcpu=gib_per_vcpu, inst=inst,
                    prices=prices, utilization=utilization) for p in per_vcpu]
