"""``onnx-lambda simulate``: arguments, inputs (measured by ``onnx-lambda tune`` when its JSON
exists, else the given constants), the strategy sweep, the report."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

TUNE_JSON = Path("docs/benchmarks/tune.json")


def _idle(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    try:
        return float(low) * 60.0, float(high or low) * 60.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"minutes or a range like 5-15, got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pattern", choices=("steady", "bursty", "diurnal", "csv"),
                        default="bursty")
    parser.add_argument("--csv", type=Path, default=None,
                        help="timestamps (first column: epoch seconds or ISO 8601)")
    parser.add_argument("--hours", type=float, default=24.0, help="simulated time")
    parser.add_argument("--rate", type=float, default=0.2,
                        help="mean requests per second (background rate for bursty)")
    parser.add_argument("--burst-every-min", type=float, default=20.0)
    parser.add_argument("--burst-size", type=int, default=20)
    parser.add_argument("--burst-spread-ms", type=float, default=200.0)
    parser.add_argument("--peak-to-trough", type=float, default=10.0, help="diurnal")
    parser.add_argument("--strategy", action="append", default=None,
                        help="none, warmer:N, provisioned:N, both:P,W, managed:N (repeatable; "
                             "default: a sweep sized from the unmanaged peak concurrency)")
    parser.add_argument("--memory", type=int, default=1769, metavar="MB")
    parser.add_argument("--arch", choices=("x86_64", "arm64"), default="x86_64")
    parser.add_argument("--instance", default=None,
                        help="EC2 type of strategy managed:N (default: c7i.large, or c7g.large "
                             "for arm64)")
    parser.add_argument("--measured", type=Path, default=None,
                        help=f"tune JSON with init and warm samples (default: {TUNE_JSON} "
                             "when present)")
    parser.add_argument("--init-ms", type=float, default=800.0,
                        help="cold init when nothing is measured")
    parser.add_argument("--service-ms", type=float, default=5.0,
                        help="warm duration when nothing is measured")
    parser.add_argument("--network-ms", type=float, default=0.0,
                        help="added to every end-to-end latency (API Gateway, internet)")
    parser.add_argument("--idle-minutes", type=_idle, default=_idle("10"), metavar="10|5-15",
                        help="idle time before an environment is reaped (a range draws per "
                             "environment)")
    parser.add_argument("--warmer-every-min", type=float, default=5.0)
    parser.add_argument("--hold-ms", type=float, default=100.0, help="warmer ping hold")
    parser.add_argument("--target", type=float, default=0.01,
                        help="cold-start fraction the recommendation must meet")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-dir", type=Path, default=Path("docs/benchmarks"))
    parser.set_defaults(func=run)


def arrivals(args: argparse.Namespace, rng: random.Random) -> tuple[list[float], float]:
    from onnx_lambda.bench import traffic

    horizon = args.hours * 3600.0
    if args.pattern == "csv":
        if args.csv is None:
            raise SystemExit("--pattern csv needs --csv FILE")
        times = traffic.from_csv(args.csv)
        return times, max(times[-1], 1.0)
    if args.pattern == "steady":
        return traffic.steady(rng, args.rate, horizon), horizon
    if args.pattern == "diurnal":
        return traffic.diurnal(rng, args.rate, horizon,
                               peak_to_trough=args.peak_to_trough), horizon
    return traffic.bursty(rng, args.rate, horizon, every_s=args.burst_every_min * 60.0,
                          size=args.burst_size, spread_s=args.burst_spread_ms / 1000.0), horizon


def workload(args: argparse.Namespace) -> tuple[Any, str]:
    """The workload and where its numbers come from."""
    from onnx_lambda.bench.simulate import Workload

    path = args.measured or (TUNE_JSON if TUNE_JSON.exists() else None)
    if path is not None:
        data = json.loads(path.read_text(encoding="utf-8"))
        sizes = sorted(int(m) for m in data["samples"])
        size = min(sizes, key=lambda m: abs(m - args.memory))
        samples = data["samples"][str(size)]
        return (Workload(service_ms=samples["warm_ms"], init_ms=samples["init_ms"],
                         memory_mb=args.memory, arch=args.arch, network_ms=args.network_ms,
                         instance=_instance(args)),
                f"measured by `onnx-lambda tune` at {size} MB ({path})")
    return (Workload(service_ms=[args.service_ms], init_ms=[args.init_ms],
                     memory_mb=args.memory, arch=args.arch, network_ms=args.network_ms,
                     instance=_instance(args)),
            f"assumed: init {args.init_ms} ms, warm {args.service_ms} ms (no tune JSON)")


def _instance(args: argparse.Namespace) -> str:
    return args.instance or ("c7g.large" if args.arch == "arm64" else "c7i.large")


def defaults() -> argparse.Namespace:
    """The command's defaults (what ``onnx-lambda bench`` simulates)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([])


def sweep(args: argparse.Namespace, work: Any) -> tuple[list[Any], Any, int, float]:
    """(results per strategy, the recommended one, requests, horizon in seconds)."""
    from onnx_lambda.bench import simulate

    times, horizon = arrivals(args, random.Random(args.seed))
    if not times:
        raise SystemExit("the traffic pattern produced no requests")
    life = simulate.Lifecycle(idle_s=args.idle_minutes,
                              warmer_every_s=args.warmer_every_min * 60.0, hold_ms=args.hold_ms)

    def one(strategy: simulate.Strategy) -> simulate.Result:
        return simulate.run(times, work, strategy, lifecycle=life, seed=args.seed,
                            horizon_s=horizon)

    if args.strategy:
        strategies = [simulate.Strategy.parse(s) for s in args.strategy]
    else:
        from onnx_lambda.bench.cost import PriceTable
        from onnx_lambda.bench.managed import instance, min_instances

        peak = one(simulate.Strategy()).peak_concurrency
        prices = PriceTable.load()
        strategies = (simulate.candidates(peak) + simulate.managed_candidates(
            peak, instance(prices, work.instance).vcpus, min_instances(prices)))
    results = [one(s) for s in strategies]
    return results, simulate.recommend(results, args.target), len(times), horizon


def run(args: argparse.Namespace) -> int:
    from onnx_lambda.bench import plots
    from onnx_lambda.bench.commands import command_line
    from onnx_lambda.bench.report import fmt, table
    from onnx_lambda.bench.stats import DEFINITION

    work, source = workload(args)
    results, best, requests, horizon = sweep(args, work)
    rows = [[r.strategy.label, f"{100 * r.cold_fraction:.3f} %",
             fmt(r.as_dict()["p99_ms"], 1), str(r.environments),
             f"{r.bill.total:,.2f}", "**recommended**" if r is best else ""]
            for r in sorted(results, key=lambda r: r.bill.total)]
    text = "\n".join([
        f"`{command_line(args)}`", "",
        f"{args.pattern} traffic: {requests} requests over {horizon / 3600:.1f} h; "
        f"{args.memory} MB {args.arch}; idle reap {args.idle_minutes[0] / 60:g}-"
        f"{args.idle_minutes[1] / 60:g} min; workload {source}; {DEFINITION}.", "",
        *table(["strategy", "cold starts", "p99 ms", "envs started", "USD / month", ""], rows),
        f"Recommended (cheapest with cold starts ≤ {100 * args.target:g} %): "
        f"{best.strategy.label} — {100 * best.cold_fraction:.3f} % cold, "
        f"p99 {best.as_dict()['p99_ms']:.1f} ms, {best.bill.total:,.2f} USD/month."])
    print(text)
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    name = f"simulate-{args.pattern}"
    dicts = [r.as_dict() for r in results]
    (out / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps({
        "pattern": args.pattern, "requests": requests, "horizon_s": horizon,
        "workload": source, "target": args.target, "recommended": best.strategy.label,
        "results": dicts}, indent=2) + "\n", encoding="utf-8")
    plots.strategies(dicts, f"{args.pattern}: cold starts vs monthly cost", out / f"{name}.png",
                     recommended=best.strategy.label, target=args.target)
    print(f"wrote {out / name}.md/.json/.png")
    return 0 if best.cold_fraction <= args.target else 1
