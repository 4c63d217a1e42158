"""``onnx-lambda price``: one traffic profile's monthly bill on demand, with provisioned
concurrency and on Lambda Managed Instances, side by side, and where Managed Instances break
even. The per-process RSS (the Managed Instances memory budget) is measured from ``--model``
(a real handler process: import, model load, warm-up) or given with ``--rss-mb``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from onnx_lambda.bench import managed
from onnx_lambda.bench.cost import PriceTable
from onnx_lambda.bench.report import fmt, table

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import handler.app; from onnx_lambda.bench.rss import peak_rss_mb; "
         "print(peak_rss_mb())")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mean-rps", type=float, required=True, help="mean requests a second")
    parser.add_argument("--peak-rps", type=float, default=None,
                        help="peak requests a second (default: 2 x the mean)")
    parser.add_argument("--duration-ms", type=float, required=True,
                        help="warm duration of one request at one vCPU (p99 for a tail-safe "
                             "sizing, p50 for the bill)")
    memory = parser.add_mutually_exclusive_group(required=True)
    memory.add_argument("--rss-mb", type=float, help="peak RSS of one handler process (MB)")
    memory.add_argument("--model", type=Path,
                        help="measure the RSS: a handler process loads this model")
    parser.add_argument("--instance", default="c7i.large",
                        help="EC2 type of the capacity provider (prices.json lists them)")
    parser.add_argument("--processes-per-vcpu", type=int, default=1,
                        help="PerExecutionEnvironmentMaxConcurrency / vCPUs (Lambda's default "
                             "is 16; a CPU-bound model needs about 1)")
    parser.add_argument("--memory", type=int, default=1769,
                        help="MB of the on-demand / provisioned function (1769 = one vCPU, the "
                             "same CPU as a process per vCPU: equal p99)")
    parser.add_argument("--utilization", type=float, default=0.7,
                        help="busy share at which instances and provisioned concurrency are "
                             "full (the target-tracking value)")
    parser.add_argument("--cold-fraction", type=float, default=0.0,
                        help="share of on-demand requests that pay an init (`simulate` says)")
    parser.add_argument("--init-ms", type=float, default=0.0, help="billed init of a cold start")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")


def measure_rss_mb(model: Path) -> float:
    env = {**os.environ, "ONNX_LAMBDA_MODEL": str(model.resolve()), "ONNX_LAMBDA_METRICS": "0",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"measuring {model} failed: {tail[0]}")
    return float(done.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace, command: str) -> int:
    prices = PriceTable.load()
    try:
        inst = managed.instance(prices, args.instance)
        traffic = managed.Traffic(args.mean_rps, args.peak_rps or 2 * args.mean_rps,
                                  args.duration_ms)
    except ValueError as exc:
        raise SystemExit(f"onnx-lambda price: {exc}") from None
    rss = args.rss_mb if args.rss_mb is not None else measure_rss_mb(args.model)
    knobs = {"rss_mb": rss, "memory_mb": args.memory,
             "processes_per_vcpu": args.processes_per_vcpu, "utilization": args.utilization,
             "cold_fraction": args.cold_fraction, "init_ms": args.init_ms}
    try:
        options = managed.compare(traffic, prices, inst, **knobs)
    except ValueError as exc:
        raise SystemExit(f"onnx-lambda price: {exc}") from None
    even = {against: managed.break_even_rps(traffic, prices, inst, against, **knobs)
            for against in ("on-demand", "provisioned")}
    terms = managed.managed_terms(prices)
    rows = [[o.name, fmt(o.monthly_usd, 2), fmt(o.monthly_usd * 1e6 / traffic.requests, 3)
             if traffic.requests else "-", o.sizing] for o in options]
    lines = [f"Monthly cost (`{command}`): {traffic.mean_rps:g} rps mean, "
             f"{traffic.peak_rps:g} at peak, {traffic.duration_ms:g} ms a request, "
             f"{rss:.0f} MB a process; {inst.arch} prices of {prices.raw['region']} "
             f"(Lambda {prices.raw['retrieved']}, EC2 {terms['retrieved']}).", "",
             *table(["option", "USD / month", "USD / 1M requests", "sized as"], rows)]
    for against, rps in even.items():
        lines.append(f"Managed Instances cost less than {against} above {rps:,.0f} rps mean "
                     "(same peak/mean ratio)." if rps is not None else
                     f"Managed Instances cost more than {against} up to 100x this traffic.")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({
            "command": command, "traffic": vars(traffic), "instance": vars(inst),
            "rss_mb": rss, "options": [o.as_dict() for o in options], "break_even_rps": even,
        }, indent=2) + "\n", encoding="utf-8")
    return 0
