"""Smoke run of the handler benchmark: it completes and every figure is a finite number."""

from __future__ import annotations

import math
import re
from pathlib import Path

from onnx_lambda.bench.handler_overhead import main, report


def test_handler_benchmark_smoke(model_dir: Path) -> None:
    table = report(model_dir / "linear.onnx", repeat=1, iterations=200)
    for row in ("spawn → ready", "peak RSS", "handler overhead", "overhead without the log line",
                "| disable |",
                "spinning on", "aws_lambda_powertools.Metrics"):
        assert row in table, row
    numbers = [float(n) for n in re.findall(r"\|\s*(-?\d+\.\d+)", table)]
    assert len(numbers) > 20 and all(math.isfinite(n) for n in numbers)


def test_handler_benchmark_cli(model_dir: Path, capsys: object) -> None:
    assert main(["--model", str(model_dir / "multi_io.onnx"), "--repeat", "1",
                 "--iterations", "100"]) == 0


def test_warm_instructions_child_runs_both_targets(model_dir: Path) -> None:
    """What callgrind runs (valgrind itself is too slow for this tier): the warm-up and the
    counted calls of each target, on the handler's own session."""
    from onnx_lambda.bench.warm_instructions import TARGETS
    from onnx_lambda.bench.warm_instructions import main as instructions

    for target in TARGETS:
        assert instructions(["--child", target, "--model", str(model_dir / "linear.onnx"),
                             "--n2", "3"]) == 0
