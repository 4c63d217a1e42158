"""``onnx-lambda price``: one traffic profile's monthly bill on demand, with provisioned
concurrency and on Lambda Managed Instances, side by side, and where Managed Instances break
even. The per-process memory (the Managed Instances budget) is given with ``--rss-mb`` or
measured from ``--model``: ``--measure-processes`` real handler processes initialised side by
side, their PSS split between them (``process_memory``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from onnx_lambda.plan.commands.options import command_line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    price = subparsers.add_parser(
        "price", help="monthly cost: on demand, provisioned concurrency, Managed Instances",
        description="Price one traffic profile on demand, with provisioned concurrency and on "
                    "Lambda Managed Instances (EC2 + 15 %%, three instances at least, "
                    "per-process RSS x processes as the memory budget), cheapest first, and "
                    "say where Managed Instances break even.")
    add_arguments(price)
    price.set_defaults(func=lambda args: run(args, command_line(_used(args))))


def _used(args: argparse.Namespace) -> argparse.Namespace:
    """The options that shaped the result: ``--measure-processes`` only goes with ``--model``."""
    return (argparse.Namespace(**{**vars(args), "measure_processes": None})
            if args.model is None else args)


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
                        help="measure it: handler processes load this model side by side")
    parser.add_argument("--measure-processes", type=int, default=4,
                        help="processes started side by side for --model (default: 4)")
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


def measured_mb(model: Path, processes: int) -> float:
    from onnx_lambda.plan import process_memory

    found = process_memory.measure(model, processes)
    print(f"{model}: {processes} handler processes side by side: RSS {found.rss_mb:.0f} MB, "
          f"PSS {found.pss_mb:.0f} MB ({found.per_process_mb:.1f} MB a process)")
    return found.per_process_mb


def run(args: argparse.Namespace, command: str) -> int:
    try:
        return _report(args, command)
    except (ValueError, RuntimeError, OSError) as exc:  # bad numbers, or a model that won't load
        raise SystemExit(f"onnx-lambda price: {exc}") from None


def _report(args: argparse.Namespace, command: str) -> int:
    from onnx_lambda.plan import managed
    from onnx_lambda.plan.cost import PriceTable
    from onnx_lambda.plan.tables import fmt, table

    prices = PriceTable.load()
    inst = managed.instance(prices, args.instance)
    traffic = managed.Traffic(args.mean_rps, args.peak_rps or 2 * args.mean_rps, args.duration_ms)
    rss = (args.rss_mb if args.rss_mb is not None
           else measured_mb(args.model, args.measure_processes))
    knobs = {"rss_mb": rss, "memory_mb": args.memory,
             "processes_per_vcpu": args.processes_per_vcpu, "utilization": args.utilization,
             "cold_fraction": args.cold_fraction, "init_ms": args.init_ms}
    options = managed.compare(traffic, prices, inst, **knobs)
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
