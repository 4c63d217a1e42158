"""``onnx-lambda tune``: run the sizing, print and write it (JSON, Markdown, PNG), and
optionally put the recommendation into samconfig.toml."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnx_lambda.plan import end_to_end
from onnx_lambda.plan.commands import tune_managed
from onnx_lambda.plan.commands.options import IMG, command_line, default_models, fill, ints

if TYPE_CHECKING:
    from onnx_lambda.plan import sizing
    from onnx_lambda.plan.cost import PriceTable


def markdown(result: dict[str, Any], recs: dict[str, sizing.SizePoint], *, command: str,
             prices: PriceTable, arch: str, metric: str) -> str:
    from onnx_lambda.plan import sizing
    from onnx_lambda.plan.tables import fmt, table
    from onnx_lambda.stats import DEFINITION

    rows = []
    for p in result["points"]:
        chosen = ", ".join(s for s, r in recs.items() if r.memory_mb == p.memory_mb)
        status = (f"**failed**: {p.failed}" if p.failed else "measured" if p.measured
                  else f"extrapolated from {p.extrapolated_from}")
        rows.append([str(p.memory_mb), f"{sizing.vcpus(p.memory_mb):.2f}", status,
                     fmt(p.cold_init_ms), fmt(p.warm_p50_ms, 2), fmt(p.warm_p99_ms, 2),
                     fmt(p.mean_billed_ms, 2), fmt(p.cost_per_million, 3), chosen or ""])
    lines = [f"Memory sizing (`{command}`), host with {result['host_cpus']} CPUs; prices "
             f"{arch}, {prices.raw['region']}, retrieved {prices.raw['retrieved']}; latency "
             f"metric {metric}; {DEFINITION}.", "",
             *table(["MB", "vCPU", "", "cold init + 1st (ms)", "warm p50", "warm p99",
                      "billed ms", "USD / 1M", "recommended for"], rows),
             "Sizes above the host's cores cannot be emulated: they repeat the largest "
             "measured size's latencies (no further speed-up assumed) and are never "
             "recommended. The emulator applies the CPU quota to init as well; AWS has been "
             "seen to give small functions more CPU during init, so cold init at small sizes "
             "is an upper bound. Cost per million requests: warm billed duration (1 ms "
             "rounding) plus `--cold-fraction` × billed init, and the request charge."]
    return "\n".join(lines) + "\n"


def measure(args: argparse.Namespace, command: str) -> int:
    from onnx_lambda.plan import plots, sizing, tune
    from onnx_lambda.plan.cost import PriceTable
    from onnx_lambda.plan.progress import progress_bar
    from onnx_lambda.plan.subject import prepare
    from onnx_lambda.plan.tables import machine

    prices = PriceTable.load()
    repeat, warm = args.repeat, args.warm
    cpus = tune.host_cpus()
    steps = repeat * sum(1 for m in args.sizes if sizing.measurable(m, cpus))
    with prepare(args.model, name=args.model.name if args.model.is_dir() else None) as subject, \
            progress_bar(f"tune {subject.name}", steps) as advance:
        result = tune.run(subject, args.sizes, repeat=repeat, warm=warm, prices=prices,
                          arch=args.arch, cold_fraction=args.cold_fraction, on_step=advance)
    points = result["points"]
    recs = {s: sizing.recommend(points, s, weight=args.weight, metric=args.metric)
            for s in sizing.STRATEGIES}
    text = markdown(result, recs, command=command, prices=prices, arch=args.arch,
                    metric=args.metric)
    regions = end_to_end_section(args, recs[args.strategy])
    text += "\n".join(regions["text"])
    print(text)
    for strategy, rec in recs.items():
        print(f"recommended for {strategy}: {rec.memory_mb} MB")
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "tune.md").write_text(text, encoding="utf-8")
    plots.tune(points, f"{subject.name}: latency and cost vs memory", out / "tune.png")
    (out / "tune.json").write_text(json.dumps({
        "command": command, "machine": machine(), "model": str(subject.source),
        "arch": args.arch, "metric": args.metric, "host_cpus": result["host_cpus"],
        "cpu_limits": result["cpu_limits"], "points": [p.as_dict() for p in points],
        "recommended": {s: r.memory_mb for s, r in recs.items()},
        "end_to_end": regions["rows"], "latency_target_ms": args.latency_target_ms,
        "samples": {str(m): {"init_ms": [r["init_ms"] + (r["first_duration_ms"] or 0.0)
                                         for r in runs],
                             "warm_ms": [d for r in runs for d in r["warm_durations_ms"]]}
                    for m, runs in result["raw"].items()},
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out / 'tune.md'}, {out / 'tune.json'}, {out / 'tune.png'}")
    if args.write_samconfig:
        size = recs[args.strategy].memory_mb
        changed = sizing.write_samconfig(args.write_samconfig, size)
        print(f"{args.write_samconfig}: MemorySize={size} ({args.strategy})"
              + ("" if changed else ", unchanged"))
    return 0


def end_to_end_section(args: argparse.Namespace, rec: sizing.SizePoint) -> dict[str, Any]:
    """``--network-ms``: the recommended size's warm p99 and cold start, plus each region's
    network, against ``--latency-target-ms`` (no queue: tune's invocations are sequential)."""
    from onnx_lambda.plan import end_to_end

    net = end_to_end.network(args.network_ms, "tune")
    if net is None:
        return {"text": [], "rows": None}
    front = {"warm p99": rec.warm_p99_ms, "cold start": rec.cold_init_ms}
    rows = end_to_end.rows(net, front, args.latency_target_ms)
    what = (f"the {args.strategy} size, {rec.memory_mb} MB: warm p99 (inference; no queue, "
            "tune's calls are sequential) or a cold start (init + first request)")
    return {"text": end_to_end.markdown(rows, front, args.latency_target_ms, what),
            "rows": rows}


DEFAULT_SIZES = "128,256,512,1024,1769,3008,10240"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tune = subparsers.add_parser(
        "tune", help="memory sizing: latency, cold init and cost per memory size",
        description="Run the handler in the emulator at each memory size (its CPU share as a "
                    "CFS quota, threads from memory), measure cold init and warm p50/p99, "
                    "price per million requests and recommend a size per strategy.")
    tune.add_argument("--model", type=Path, default=None,
                      help="model folder or .onnx (default: models/digits)")
    tune.add_argument("--sizes", type=ints, default=ints(DEFAULT_SIZES),
                      metavar=DEFAULT_SIZES)
    tune.add_argument("--repeat", type=int, default=None,
                      help="fresh environments per size (3; quick: 1) or per "
                           "--managed-instances setting (1)")
    tune.add_argument("--warm", type=int, default=None,
                      help="warm invocations per environment (100; quick: 20)")
    tune.add_argument("--arch", choices=("x86_64", "arm64"), default="x86_64")
    tune.add_argument("--cold-fraction", type=float, default=0.0,
                      help="share of requests that pay a cold init, for the cost")
    tune.add_argument("--strategy", choices=("cost", "speed", "balanced"), default="balanced",
                      help="which recommendation --write-samconfig uses")
    tune.add_argument("--weight", type=float, default=0.5,
                      help="balanced: 1 = all cost, 0 = all speed (Power Tuning's "
                           "balancedWeight)")
    tune.add_argument("--metric", choices=("p50", "p99"), default="p99",
                      help="latency the speed and balanced strategies minimise")
    tune.add_argument("--quick", action="store_true",
                      help="a short run: the quick value of every option not given")
    tune.add_argument("--out-dir", type=Path, default=IMG)
    tune.add_argument("--write-samconfig", type=Path, nargs="?", const=Path("samconfig.toml"),
                      default=None, metavar="samconfig.toml",
                      help="set MemorySize in [default.deploy.parameters] parameter_overrides")
    end_to_end.add_arguments(tune)
    tune_managed.add_arguments(tune)
    tune.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from handler.errors import ModelLoadError

    try:
        return _run(args)
    except ModelLoadError as exc:  # a missing or broken model: say so, no traceback
        raise SystemExit(f"onnx-lambda tune: {exc}") from None


def _run(args: argparse.Namespace) -> int:
    if args.model is None:
        args.model = default_models()[0]
    if args.managed_instances:
        fill(args, tune_managed.DEFAULTS, tune_managed.QUICK)
        for unused in tune_managed.MEMORY_ONLY:  # so the printed command lists only its own
            setattr(args, unused, None)
        return tune_managed.measure(args, command_line(args))
    fill(args, {"repeat": 3, "warm": 100}, {"repeat": 1, "warm": 20})
    return measure(args, command_line(args))
