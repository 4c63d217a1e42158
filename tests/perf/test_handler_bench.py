"""Smoke run of the handler benchmark: it completes and every figure is a finite number."""

from __future__ import annotations

import math
import re
from pathlib import Path

from benchmarks.handler_overhead import main, report


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
    from benchmarks.warm_instructions import TARGETS
    from benchmarks.warm_instructions import main as instructions

    for target in TARGETS:
        assert instructions(["--child", target, "--model", str(model_dir / "linear.onnx"),
                             "--n2", "3"]) == 0


def test_cold_instructions_programs_run_to_their_first_inference(digits_dir: Path) -> None:
    """What callgrind runs for each cold target (valgrind itself takes minutes: left out of
    this tier): every ``-c`` program starts as ``benchmarks.cold`` starts its children and
    reaches its first inference — each prints its own report line (the floors' marks, our init
    log)."""
    import json
    import os
    import subprocess

    from benchmarks import cold
    from benchmarks.cold_instructions import BARE, OURS_AS_BUILT, statements
    from benchmarks.targets import CAPI_FLOOR, FLOOR, OURS
    from onnx_lambda.plan.subject import prepare
    from onnx_lambda.source_tree import root

    with prepare(digits_dir) as subject:  # a classifier: also served as built
        programs = statements(subject, 1769)
        assert set(programs) == {BARE, FLOOR, CAPI_FLOOR, OURS, OURS_AS_BUILT}
        prefix, base = cold.interpreter()
        env = {**os.environ, **base, **subject.environment(1769), "ONNX_LAMBDA_LOG_LEVEL": "info"}
        for name in (FLOOR, CAPI_FLOOR, OURS, OURS_AS_BUILT):
            program, variables = programs[name]
            out = subprocess.run([*prefix, "-c", program], cwd=root(), env={**env, **variables},
                                 check=True, capture_output=True, text=True)
            line = json.loads((out.stdout or out.stderr).strip().splitlines()[-1])
            if name in (FLOOR, CAPI_FLOOR):
                assert "first-request" in line
            else:
                assert line["message"] == "initialized" and line["model"] == "digits"
        # as built: the artifact itself; else the relabelled copy the floors' request fits
        assert programs[OURS_AS_BUILT][1] == {"ONNX_LAMBDA_MODEL": str(digits_dir)}
        assert programs[OURS][1] == {} and subject.model != digits_dir
