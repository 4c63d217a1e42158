"""``python -m benchmarks`` (what ``onnx-lambda bench`` runs from a checkout): every model
against the baselines (``comparison``), written to ``docs/explanation/benchmarks.md``, a JSON
file and PNGs
(``report``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from onnx_lambda.plan.commands.options import DOCS, IMG, command_line, default_models, fill, ints

BENCH_FULL = {"repeat": 9, "requests": 1000, "concurrency": [1, 2, 4], "rounds": 4,
              "iterations": 20_000}
BENCH_QUICK = {"repeat": 2, "requests": 100, "concurrency": [1, 2], "rounds": 2,
               "iterations": 2000}
PROGRAM = "python -m benchmarks"


def parser() -> argparse.ArgumentParser:
    bench = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Measure onnx-lambda against the floor (bare onnxruntime), a naive handler, "
                    "FastAPI + Mangum and an always-on FastAPI + uvicorn server, side by side "
                    "and interleaved; writes docs/explanation/benchmarks.md, a JSON file and PNGs.")
    bench.add_argument("--model", type=Path, action="append", default=None,
                       help="model folder or .onnx (repeatable; default: models/digits and "
                            "models/minilm when built, else a tiny generated model)")
    bench.add_argument("--repeat", type=int, default=None,
                       help="cold environments per target (9; quick: 2)")
    bench.add_argument("--requests", type=int, default=None,
                       help="warm requests per target and concurrency level (1000; quick: 100)")
    bench.add_argument("--concurrency", type=ints, default=None,
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
    bench.add_argument("--out", type=Path, default=DOCS / "explanation" / "benchmarks.md")
    bench.add_argument("--json", type=Path, default=IMG / "results.json")
    bench.add_argument("--img", type=Path, default=IMG, help="folder for the PNG plots")
    return bench


def main(argv: list[str] | None = None) -> int:
    from benchmarks import comparison, report
    from onnx_lambda.plan.progress import progress_bar
    from onnx_lambda.plan.subject import prepare
    from onnx_lambda.plan.tables import load_average, machine

    args = parser().parse_args(argv)
    fill(args, BENCH_FULL, BENCH_QUICK)
    opts = comparison.Options(repeat=args.repeat, requests=args.requests,
                              concurrency=tuple(args.concurrency), rounds=args.rounds,
                              iterations=args.iterations, memory_mb=args.memory,
                              emulator=not args.no_emulator)
    models = args.model or default_models()
    facts = machine()
    started = time.monotonic()
    results = []
    for model in models:
        with prepare(model, name=model.name if model.is_dir() else model.stem) as subject, \
                progress_bar(f"bench {subject.name}", comparison.steps(opts)) as advance:
            results.append(comparison.run(subject, opts, advance))
    facts["load_average_end"] = load_average()
    facts["run_minutes"] = round((time.monotonic() - started) / 60.0, 1)
    report.write(results, command=command_line(args, PROGRAM), doc=args.out, json_path=args.json,
                 img=args.img, facts=facts)
    for result in results:
        for what, measured, met in report.targets(result):
            print(f"{result['model']}: {what}: {measured} "
                  f"({ {True: 'met', False: 'NOT met', None: 'n/a'}[met] })")
    print(f"wrote {args.out}, {args.json} and plots under {args.img}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
