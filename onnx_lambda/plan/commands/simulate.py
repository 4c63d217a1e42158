"""``onnx-lambda simulate``: arguments, inputs (measured by ``onnx-lambda tune`` when its JSON
exists, else the given constants), the strategy sweep (``strategy_sweep``), the report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from onnx_lambda.plan import end_to_end
from onnx_lambda.plan.commands.options import command_line
from onnx_lambda.plan.strategy_sweep import Scenario

TUNE_JSON = Path("docs/benchmarks/tune.json")
DEFAULT = Scenario()


def _idle(text: str) -> tuple[float, float]:
    """``10`` or ``5-15`` minutes as (low, high) seconds."""
    low, _, high = text.partition("-")
    try:
        return float(low) * 60.0, float(high or low) * 60.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"minutes or a range like 5-15, got {text!r}") from None


def _idle_text(text: str) -> str:
    """Checked, but kept as typed: the printed command must say minutes, as the user did."""
    _idle(text)
    return text


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    simulate = subparsers.add_parser(
        "simulate", help="cold-start fraction, p99 and monthly cost per cold-start strategy",
        description="Replay a traffic pattern against a Lambda lifecycle model with each "
                    "strategy (none, warmer N, provisioned N, both) and recommend the "
                    "cheapest that keeps cold starts under the target (exit status 1 when "
                    "none does). Writes docs/benchmarks/simulate-PATTERN.md/.json/.png.")
    add_arguments(simulate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pattern", choices=("steady", "bursty", "diurnal", "csv"),
                        default=DEFAULT.pattern)
    parser.add_argument("--csv", type=Path, default=None,
                        help="timestamps (first column: epoch seconds or ISO 8601)")
    parser.add_argument("--hours", type=float, default=DEFAULT.hours, help="simulated time")
    parser.add_argument("--rate", type=float, default=DEFAULT.rate,
                        help="mean requests per second (background rate for bursty)")
    parser.add_argument("--burst-every-min", type=float,
                        default=DEFAULT.burst_every_min)
    parser.add_argument("--burst-size", type=int, default=DEFAULT.burst_size)
    parser.add_argument("--burst-spread-ms", type=float,
                        default=DEFAULT.burst_spread_ms)
    parser.add_argument("--peak-to-trough", type=float, default=DEFAULT.peak_to_trough,
                        help="diurnal")
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
    parser.add_argument("--idle-minutes", type=_idle_text,
                        default=f"{DEFAULT.idle_minutes[0] / 60:g}",
                        metavar="10|5-15",
                        help="idle time before an environment is reaped (a range draws per "
                             "environment)")
    parser.add_argument("--warmer-every-min", type=float,
                        default=DEFAULT.warmer_every_min)
    parser.add_argument("--hold-ms", type=float, default=DEFAULT.hold_ms, help="warmer ping hold")
    parser.add_argument("--target", type=float, default=DEFAULT.target,
                        help="cold-start fraction the recommendation must meet")
    end_to_end.add_arguments(parser)
    parser.add_argument("--seed", type=int, default=DEFAULT.seed)
    parser.add_argument("--out-dir", type=Path, default=Path("docs/benchmarks"))
    parser.set_defaults(func=run)


def workload(args: argparse.Namespace) -> tuple[Any, str]:
    """The workload and where its numbers come from."""
    from onnx_lambda.plan.simulate import Workload

    path = args.measured or (TUNE_JSON if TUNE_JSON.exists() else None)
    if path is not None:
        data = json.loads(path.read_text(encoding="utf-8"))
        sizes = sorted(int(m) for m in data["samples"])
        size = min(sizes, key=lambda m: abs(m - args.memory))
        samples = data["samples"][str(size)]
        return (Workload(service_ms=samples["warm_ms"], init_ms=samples["init_ms"],
                         memory_mb=args.memory, arch=args.arch,
                         instance=_instance(args)),
                f"measured by `onnx-lambda tune` at {size} MB ({path})")
    return (Workload(service_ms=[args.service_ms], init_ms=[args.init_ms],
                     memory_mb=args.memory, arch=args.arch,
                     instance=_instance(args)),
            f"assumed: init {args.init_ms} ms, warm {args.service_ms} ms (no tune JSON)")


def _instance(args: argparse.Namespace) -> str:
    return args.instance or ("c7g.large" if args.arch == "arm64" else "c7i.large")


def scenario(args: argparse.Namespace) -> Scenario:
    fields = {name: getattr(args, name) for name in Scenario._fields}
    return Scenario(**{**fields, "idle_minutes": _idle(args.idle_minutes),
                       "strategy": tuple(args.strategy) if args.strategy else None})


def managed_vs_provisioned(results: list[Any]) -> tuple[str, dict[str, Any] | None]:
    """Managed Instances against provisioned concurrency, each without a single cold start,
    at equal p99 (``equal_p99``), on the monthly bill."""
    from onnx_lambda.plan.equal_p99 import Option, cheapest

    def family(managed: bool) -> list[Option]:
        return [Option(r.strategy.label, r.as_dict()["p99_ms"], r.bill.total) for r in results
                if r.cold_starts == 0 and (bool(r.strategy.managed) if managed
                                           else r.strategy.provisioned > 0)]

    compared = cheapest(family(managed=False), family(managed=True))
    if compared is None:
        return ("Managed Instances vs provisioned concurrency: the sweep has no cold-start-free "
                "option of each to compare.", None)
    pc, mi = compared["first"], compared["second"]
    verdict = ("Managed Instances are cheaper" if compared["ratio"] < 1 else
               f"provisioned concurrency is cheaper (Managed Instances {compared['ratio']:.2f}x)")
    return (f"Managed Instances vs provisioned concurrency, neither with a cold start, at equal "
            f"p99 (≤ {compared['p99_target_ms']:.1f} ms): {mi['label']} {mi['cost']:,.2f} vs "
            f"{pc['label']} {pc['cost']:,.2f} USD/month: {verdict}.", compared)


def run(args: argparse.Namespace) -> int:
    from onnx_lambda.plan import plots
    from onnx_lambda.plan.strategy_sweep import sweep
    from onnx_lambda.plan.tables import fmt, table
    from onnx_lambda.stats import DEFINITION, percentile

    net = end_to_end.network(args.network_ms, "simulate")
    work, source = workload(args)
    try:
        results, best, requests, horizon = sweep(scenario(args), work)
    except ValueError as exc:  # a csv pattern without its file, or no requests at all
        raise SystemExit(f"onnx-lambda simulate: {exc}") from None
    rows = [[r.strategy.label, f"{100 * r.cold_fraction:.3f} %",
             fmt(r.as_dict()["p99_ms"], 1), str(r.environments),
             f"{r.bill.total:,.2f}", "**recommended**" if r is best else ""]
            for r in sorted(results, key=lambda r: r.bill.total)]
    versus, compared = managed_vs_provisioned(results)
    front = {"p99": percentile(best.latencies_ms, 99)}
    regions = end_to_end.rows(net or {}, front, args.latency_target_ms)
    what = (f"{best.strategy.label}'s p99 at the function's front: queue + cold start + "
            "inference")
    text = "\n".join([
        f"`{command_line(args)}`", "",
        f"{args.pattern} traffic: {requests} requests over {horizon / 3600:.1f} h; "
        f"{args.memory} MB {args.arch}; idle reap {args.idle_minutes} min; workload "
        f"{source}; {DEFINITION}.", "",
        *table(["strategy", "cold starts", "front p99 ms", "envs started", "USD / month", ""],
               rows),
        f"Recommended (cheapest with cold starts ≤ {100 * args.target:g} %): "
        f"{best.strategy.label} — {100 * best.cold_fraction:.3f} % cold, "
        f"p99 {best.as_dict()['p99_ms']:.1f} ms, {best.bill.total:,.2f} USD/month.", "",
        versus, "", *end_to_end.markdown(regions, front, args.latency_target_ms, what)])
    print(text)
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    name = f"simulate-{args.pattern}"
    dicts = [r.as_dict() for r in results]
    (out / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps({
        "pattern": args.pattern, "requests": requests, "horizon_s": horizon,
        "workload": source, "target": args.target, "recommended": best.strategy.label,
        "managed_vs_provisioned": compared, "results": dicts,
        "latency_target_ms": args.latency_target_ms, "end_to_end": regions or None},
        indent=2) + "\n",
        encoding="utf-8")
    plots.strategies(dicts, f"{args.pattern}: cold starts vs monthly cost", out / f"{name}.png",
                     recommended=best.strategy.label, target=args.target)
    print(f"wrote {out / name}.md/.json/.png")
    return 0 if best.cold_fraction <= args.target else 1
