"""The report's ratios and target checks, the exact-command rendering, artifact closure."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from benchmarks import image_size, report
from onnx_lambda.plan.commands.options import command_line, fill


def summary(p50: float, p99: float) -> dict[str, float]:
    return {"n": 10, "p50": p50, "p95": p99, "p99": p99, "p99.9": p99}


def emulated(first: float) -> dict[str, object]:
    return {"first_response_ms": first, "init_ms": first - 10, "first_duration_ms": 5.0,
            "cpu": "cfs-quota 1.00 vCPU"}


RESULT = {
    "model": "m", "path": "/m",
    "cold": {
        # total (spawn → first response) and the cold init differ on purpose: the ratios and
        # targets compare the cold init only
        "floor": {"total_ms": 400.0, "init_ms": 300.0, "breakdown": {"imports": 300.0},
                  "memory": {"peak_rss_mb": 70.0}, "emulated": emulated(500.0)},
        "C-API floor": {"total_ms": 250.0, "init_ms": 200.0, "breakdown": {"imports": 20.0},
                        "memory": {"peak_rss_mb": 40.0}},
        "onnx-lambda": {"total_ms": 380.0, "init_ms": 210.0, "breakdown": {"imports": 280.0},
                        "memory": {"peak_rss_mb": 60.0},
                        "emulated": emulated(300.0)},
        "naive handler": {"total_ms": 1600.0, "init_ms": 1500.0,
                          "breakdown": {"imports": 1500.0}, "memory": {"peak_rss_mb": 120.0}},
        "FastAPI + Mangum": {"total_ms": 800.0, "init_ms": 700.0,
                             "breakdown": {"imports": 700.0}, "memory": {"peak_rss_mb": 90.0}},
    },
    "warm": {"1": {"onnx-lambda": {"summary": summary(2.0, 4.0)},
                   "FastAPI + uvicorn (always-on)": {"summary": summary(3.0, 3.5)}}},
    "overhead": {"session.run_us": summary(10, 20), "handler_us": summary(40, 80),
                 "no_telemetry_us": summary(30, 70), "run_in_handler_us": summary(17, 33),
                 "overhead_p50_us": 30.0,
                 "overhead_p99_us": 60.0, "no_telemetry_overhead_p50_us": 20.0},
    "overhead_tiny": {"session.run_us": summary(8, 12), "handler_us": summary(60, 90),
                      "no_telemetry_us": summary(40, 70), "overhead_p50_us": 52.0,
                      "overhead_p99_us": 78.0, "no_telemetry_overhead_p50_us": 32.0},
    "artifact": {"onnx-lambda": {"dependencies": 150, "packages": 2, "code": 0.1,
                                 "model": 1, "total": 151.1}},
}


def test_targets_compare_ours_with_each_baseline() -> None:
    checks = {what: (measured, met) for what, measured, met in report.targets(RESULT)}
    assert checks["cold init ≤ 0.45× floor"] == ("0.70×", False)  # a 1 MB model: small
    assert checks["cold init ≤ 1.15× C-API floor"] == ("1.05×", True)
    assert checks["cold init ≤ 0.5× naive handler"] == ("0.14×", True)
    assert checks["cold init ≤ 0.7× FastAPI + Mangum"] == ("0.30×", True)
    # the tiny model's figure (52 µs), not the model's own (30 µs)
    assert checks["warm in-process overhead ≤ 50 µs p50, tiny model"] == ("52.0 µs", False)
    assert checks["emulator HTTP p50/p99 ≤ always-on (c=1)"][1] is False  # p99 4.0 > 3.5
    assert checks["peak RSS ≤ 0.7× naive"] == ("0.50×", True)
    assert checks["peak RSS ≤ 0.8× floor"] == ("0.86×", False)
    assert checks["first response through the emulator ≤ 0.55× the floor's"] == ("0.60×", False)


def test_targets_without_the_emulator_leave_its_verdict_open() -> None:
    cold = {t: {k: v for k, v in c.items() if k != "emulated"} for t, c in RESULT["cold"].items()}
    checks = {what: (measured, met) for what, measured, met in
              report.targets({**RESULT, "cold": cold})}
    assert checks["first response through the emulator ≤ 0.55× the floor's"][1] is None


def test_the_floor_budget_is_design_md_s_by_model_size() -> None:
    large = {**RESULT, "artifact": {"onnx-lambda": {**RESULT["artifact"]["onnx-lambda"],
                                                    "model": 22.0}}}
    checks = {what: (measured, met) for what, measured, met in report.targets(large)}
    assert checks["cold init ≤ 0.6× floor"] == ("0.70×", False)
    unknown = {k: v for k, v in RESULT.items() if k != "artifact"}  # an older result file
    assert any(w == "cold init ≤ 0.45× floor" for w, _, _ in report.targets(unknown))


def test_markdown_has_every_section_and_the_command(tmp_path: Path) -> None:
    text = report.markdown([RESULT], command="onnx-lambda bench --quick",
                           facts={"cores": 2, "load_average": (5.0, 1, 1)}, images={},
                           doc=tmp_path / "b.md")
    assert "onnx-lambda bench --quick" in text
    assert "machine was busy" in text
    for part in ("### Cold start", "### Warm latency", "### Memory", "### Artifact",
                 "| onnx-lambda | 380.0 | 210.0 |",
                 "| onnx-lambda | 300.0 | 290.0 | 5.0 | 0.60× |",  # × the floor handler's
                 "inference` stage: the code around it slows it) | 17.0 | 33.0 |"):
        assert part in text


def test_command_line_spells_out_every_option() -> None:
    args = argparse.Namespace(command="bench", func=print, model=[Path("a"), Path("b c")],
                              concurrency=[1, 2], quick=False, no_emulator=True, repeat=3,
                              json=None)
    assert command_line(args) == ("onnx-lambda bench --model a --model 'b c' "
                                  "--concurrency 1,2 --no-emulator --repeat 3")
    # a command of its own (the lab's): its program, no subcommand
    assert command_line(argparse.Namespace(quick=True), "python -m benchmarks") == (
        "python -m benchmarks --quick")


def test_fill_keeps_explicit_values() -> None:
    args = argparse.Namespace(quick=True, repeat=7, warm=None)
    fill(args, {"repeat": 3, "warm": 100}, {"repeat": 1, "warm": 20})
    assert (args.repeat, args.warm) == (7, 20)


def test_artifact_closure_follows_requirements_and_extras() -> None:
    with_deps = image_size.closure(["onnxruntime"])
    assert "onnxruntime" in with_deps and len(with_deps) > 1
    assert set(image_size.closure(["onnxruntime"], deps=False)) == {"onnxruntime"}
    assert "aws-xray-sdk" in image_size.closure(["aws-lambda-powertools[tracer]"])


def test_cold_targets_show_the_paired_rounds_beside_the_medians_verdict() -> None:
    """The verdict is the medians' ratio (1.20×, not met); the median of the round-by-round
    ratios (1.05×) is shown beside it, never instead of it."""
    runs = {"C-API floor": [100.0, 200.0, 100.0, 200.0, 100.0],
            "onnx-lambda": [105.0, 210.0, 240.0, 105.0, 120.0]}
    cold = {t: {**RESULT["cold"][t], "init_samples_ms": v, "init_ms": sorted(v)[2]}
            for t, v in runs.items()}
    result = {**RESULT, "cold": {**RESULT["cold"], **cold}}
    checks = {what: (measured, met) for what, measured, met in report.targets(result)}
    assert checks["cold init ≤ 1.15× C-API floor"] == (
        "1.20× (paired rounds: median 1.05× over 5)", False)
    # a baseline without runs (an older result): the medians' ratio alone
    assert checks["cold init ≤ 0.5× naive handler"] == ("0.08×", True)


def test_paired_ratio_needs_equal_non_empty_runs() -> None:
    from onnx_lambda.stats import paired_ratio

    assert paired_ratio([2.0, 3.0, 8.0], [1.0, 2.0, 2.0]) == 2.0
    assert math.isnan(paired_ratio([1.0], [1.0, 2.0])) and math.isnan(paired_ratio([], []))
