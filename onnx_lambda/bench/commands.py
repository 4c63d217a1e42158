"""``onnx-lambda bench``, ``tune``, ``simulate`` and ``price``. Heavy imports stay inside the
commands so ``onnx-lambda --help`` is instant."""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = Path("docs")
IMG = DOCS / "benchmarks"
DEFAULT_SIZES = "128,256,512,1024,1769,3008,10240"


def default_models() -> list[Path]:
    """models/digits and models/minilm when built, else a tiny generated model (relative to
    the repository when run from it, so reports show the command as a user types it)."""
    base = Path("models") if Path.cwd().resolve() == ROOT else ROOT / "models"
    built = [base / n for n in ("digits", "minilm") if (base / n / "model.json").exists()]
    if built:
        return built
    from onnx_lambda.bench.handler import default_model

    return [default_model()]


BENCH_FULL = {"repeat": 5, "requests": 1000, "concurrency": [1, 2, 4], "rounds": 4,
              "iterations": 20_000}
BENCH_QUICK = {"repeat": 2, "requests": 100, "concurrency": [1, 2], "rounds": 2,
               "iterations": 2000}


def fill(args: argparse.Namespace, full: dict[str, object], quick: dict[str, object]) -> None:
    """Options not given take their ``--quick`` or full value (explicit flags always win)."""
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = subparsers.add_parser(
        "bench", help="cold start, warm latency, memory and artifact size vs the baselines",
        description="Measure onnx-lambda against the floor (bare onnxruntime), a naive "
                    "handler, FastAPI + Mangum and an always-on FastAPI + uvicorn server, side "
                    "by side and interleaved; writes docs/benchmarks.md, a JSON file and PNGs.")
    bench.add_argument("--model", type=Path, action="append", default=None,
                       help="model folder or .onnx (repeatable; default: models/digits and "
                            "models/minilm when built, else a tiny generated model)")
    bench.add_argument("--repeat", type=int, default=None,
                       help="cold environments per target (5; quick: 2)")
    bench.add_argument("--requests", type=int, default=None,
                       help="warm requests per target and concurrency level (1000; quick: 100)")
    bench.add_argument("--concurrency", type=_ints, default=None,
                       metavar="1,2,4", help="warm concurrency levels (1,2,4; quick: 1,2)")
    bench.add_argument("--rounds", type=int, default=None,
                       help="interleaved warm batches (4; quick: 2)")
    bench.add_argument("--iterations", type=int, default=None,
                       help="in-process calls per side for the handler overhead (20000; "
                            "quick: 2000)")
    bench.add_argument("--memory", type=int, default=1769, metavar="MB",
                       help="memory size of every Lambda-style target (CPU share)")
    bench.add_argument("--quick", action="store_true",
                       help="a short run: the quick value of every option not given")
    bench.add_argument("--no-emulator", action="store_true",
                       help="skip the emulator views (probe + always-on only)")
    bench.add_argument("--out", type=Path, default=DOCS / "benchmarks.md")
    bench.add_argument("--json", type=Path, default=IMG / "results.json")
    bench.add_argument("--img", type=Path, default=IMG, help="folder for the PNG plots")
    bench.set_defaults(func=_bench)

    tune = subparsers.add_parser(
        "tune", help="memory sizing: latency, cold init and cost per memory size",
        description="Run the handler in the emulator at each memory size (its CPU share as a "
                    "CFS quota, threads from memory), measure cold init and warm p50/p99, "
                    "price per million requests and recommend a size per strategy.")
    tune.add_argument("--model", type=Path, default=None,
                      help="model folder or .onnx (default: models/digits)")
    tune.add_argument("--sizes", type=_ints, default=_ints(DEFAULT_SIZES),
                      metavar=DEFAULT_SIZES)
    tune.add_argument("--repeat", type=int, default=None,
                      help="fresh environments per size (3; quick: 1)")
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
    tune.set_defaults(func=_tune)

    from onnx_lambda.bench.simulate_cli import add_arguments

    simulate = subparsers.add_parser(
        "simulate", help="cold-start fraction, p99 and monthly cost per cold-start strategy",
        description="Replay a traffic pattern against a Lambda lifecycle model with each "
                    "strategy (none, warmer N, provisioned N, both) and recommend the "
                    "cheapest that keeps cold starts under the target (exit status 1 when "
                    "none does). Writes docs/benchmarks/simulate-PATTERN.md/.json/.png.")
    add_arguments(simulate)

    from onnx_lambda.bench import price_cli

    price = subparsers.add_parser(
        "price", help="monthly cost: on demand, provisioned concurrency, Managed Instances",
        description="Price one traffic profile on demand, with provisioned concurrency and on "
                    "Lambda Managed Instances (EC2 + 15 %%, three instances at least, "
                    "per-process RSS x processes as the memory budget), cheapest first, and "
                    "say where Managed Instances break even.")
    price_cli.add_arguments(price)
    price.set_defaults(func=lambda args: price_cli.run(args, command_line(args)))


def command_line(args: argparse.Namespace) -> str:
    """The exact command, every option spelled out (so a report says how to reproduce it)."""
    words = ["onnx-lambda", args.command]
    for key, value in vars(args).items():
        if key in ("command", "func") or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
            words += [flag, ",".join(str(v) for v in value)]
        elif isinstance(value, list | tuple):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return " ".join(shlex.quote(w) for w in words)


def _bench(args: argparse.Namespace) -> int:
    from onnx_lambda.bench import bench, report
    from onnx_lambda.bench.bytecode import compile_shipped
    from onnx_lambda.bench.progress import progress_bar
    from onnx_lambda.bench.subject import prepare

    fill(args, BENCH_FULL, BENCH_QUICK)
    compile_shipped()
    opts = bench.Options(repeat=args.repeat, requests=args.requests,
                         concurrency=tuple(args.concurrency), rounds=args.rounds,
                         iterations=args.iterations, memory_mb=args.memory,
                         emulator=not args.no_emulator)
    models = args.model or default_models()
    facts = report.machine()
    started = time.monotonic()
    results = []
    for model in models:
        subject = prepare(model, name=model.name if model.is_dir() else model.stem)
        steps = bench.steps(opts)
        with progress_bar(f"bench {subject.name}", steps) as advance:
            results.append(bench.run(subject, opts, advance))
    facts["load_average_end"] = report.load_average()
    facts["run_minutes"] = round((time.monotonic() - started) / 60.0, 1)
    report.write(results, command=command_line(args), doc=args.out, json_path=args.json,
                 img=args.img, facts=facts)
    for result in results:
        for what, measured, met in report.targets(result):
            print(f"{result['model']}: {what}: {measured} "
                  f"({ {True: 'met', False: 'NOT met', None: 'n/a'}[met] })")
    print(f"wrote {args.out}, {args.json} and plots under {args.img}")
    return 0


def _tune(args: argparse.Namespace) -> int:
    from onnx_lambda.bench.tune_cli import run

    if args.model is None:
        args.model = default_models()[0]
    fill(args, {"repeat": 3, "warm": 100}, {"repeat": 1, "warm": 20})
    return run(args, command_line(args))
