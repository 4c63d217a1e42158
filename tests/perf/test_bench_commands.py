"""Smoke runs of the lab's report (``python -m benchmarks``, what ``onnx-lambda bench`` runs),
``tune`` (memory sizes, and Managed Instances with ``scripts/gpu-check``'s no-GPU table) and
``simulate`` on a tiny model: each one completes, writes its files, and its numbers are finite.
No timing is asserted."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onnx_lambda.cli import main
from onnx_lambda.source_tree import root
from tests.support import models


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.linear(tmp_path_factory.mktemp("bench") / "linear.onnx")


def numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return []


def test_bench_writes_report_json_and_plots(tiny: Path, tmp_path: Path) -> None:
    from benchmarks.__main__ import main as lab

    doc, img = tmp_path / "benchmarks.md", tmp_path / "img"
    assert lab(["--model", str(tiny), "--repeat", "1", "--requests", "8",
                 "--concurrency", "1", "--rounds", "1", "--iterations", "200",
                 "--out", str(doc), "--json", str(img / "results.json"),
                 "--img", str(img)]) == 0
    text = doc.read_text()
    for heading in ("### Cold start", "### Warm latency", "### Memory", "### Artifact",
                    "python -m benchmarks --model"):  # the exact command
        assert heading in text
    result = json.loads((img / "results.json").read_text())["results"][0]
    assert set(result["cold"]) == {"floor", "C-API floor", "onnx-lambda", "naive handler",
                                   "FastAPI + Mangum"}
    assert "emulated" in result["cold"]["onnx-lambda"]
    assert "emulated" in result["cold"]["floor"]  # the floor handler, through the emulator too
    assert "first response through the emulator ≤ 0.55× the floor's" in text
    # the three Lambda-style targets, the always-on server and its same-CPU-share twin (this
    # machine can always limit CPU: a cgroup quota as root, else core pinning)
    assert set(result["warm"]["1"]) == {"onnx-lambda", "naive handler", "FastAPI + Mangum",
                                        "FastAPI + uvicorn (always-on)",
                                        "FastAPI + uvicorn, same CPU share"}
    assert "emulator HTTP p50/p99 ≤ always-on, same CPU (c=1)" in text
    assert result["simulate"]["pattern"] == "bursty"
    assert "with the recommended strategy" in text
    values = [*numbers(result["cold"]), *numbers(result["warm"]), *numbers(result["overhead"]),
              *numbers(result["overhead_tiny"])]
    assert values and all(math.isfinite(v) for v in values)
    assert "handler overhead, tiny `linear` model" in text
    assert {p.name for p in img.glob("*.png")} == {"linear-cold.png", "linear-warm-c1.png"}


def test_tune_measures_extrapolates_and_writes_samconfig(tiny: Path, tmp_path: Path) -> None:
    samconfig = tmp_path / "samconfig.toml"
    assert main(["tune", "--model", str(tiny), "--sizes", "512,1769,10240", "--repeat", "1",
                 "--warm", "5", "--out-dir", str(tmp_path),
                 "--write-samconfig", str(samconfig)]) == 0
    data = json.loads((tmp_path / "tune.json").read_text())
    by_size = {p["memory_mb"]: p for p in data["points"]}
    assert by_size[512]["measured"] and by_size[1769]["measured"]
    assert not by_size[10240]["measured"] and by_size[10240]["extrapolated_from"] == 1769
    assert all(math.isfinite(v) for p in data["points"] for v in numbers(
        {k: p[k] for k in ("cold_init_ms", "warm_p50_ms", "warm_p99_ms", "cost_per_million")}))
    assert set(data["recommended"]) == {"cost", "speed", "balanced"}
    assert data["recommended"]["balanced"] in (512, 1769)
    assert f'MemorySize=\\"{data["recommended"]["balanced"]}\\"' in samconfig.read_text()
    assert (tmp_path / "tune.png").stat().st_size > 0


def test_simulate_uses_measured_numbers_and_recommends(tmp_path: Path) -> None:
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps({"samples": {"1769": {"init_ms": [600.0, 700.0],
                                                     "warm_ms": [2.0, 3.0, 9.0]}}}))
    code = main(["simulate", "--pattern", "bursty", "--hours", "3", "--measured", str(tune),
                 "--out-dir", str(tmp_path)])
    data = json.loads((tmp_path / "simulate-bursty.json").read_text())
    assert "measured" in data["workload"]
    best = next(r for r in data["results"] if r["strategy"] == data["recommended"])
    assert code == (0 if best["cold_fraction"] <= 0.01 else 1)
    assert all(math.isfinite(v) for v in numbers(data["results"]))
    assert (tmp_path / "simulate-bursty.png").stat().st_size > 0
    versus = data["managed_vs_provisioned"]  # both families free of cold starts, same p99
    by_label = {r["strategy"]: r for r in data["results"]}
    managed, provisioned = by_label[versus["second"]["label"]], by_label[versus["first"]["label"]]
    assert managed["managed"] and provisioned["provisioned"]
    assert managed["cold_starts"] == provisioned["cold_starts"] == 0
    assert max(managed["p99_ms"], provisioned["p99_ms"]) <= versus["p99_target_ms"]
    assert versus["ratio"] == pytest.approx(
        managed["monthly_cost"]["total"] / provisioned["monthly_cost"]["total"])
    assert "Managed Instances vs provisioned concurrency" in (
        tmp_path / "simulate-bursty.md").read_text()


def test_simulate_csv_with_given_strategies(tmp_path: Path) -> None:
    csv = tmp_path / "ts.csv"
    csv.write_text("timestamp\n" + "\n".join(str(1_700_000_000 + 7 * i) for i in range(200)))
    main(["simulate", "--pattern", "csv", "--csv", str(csv), "--strategy", "none",
          "--strategy", "provisioned:1", "--idle-minutes", "5-15", "--out-dir", str(tmp_path)])
    data = json.loads((tmp_path / "simulate-csv.json").read_text())
    assert [r["strategy"] for r in data["results"]] == ["none", "provisioned 1"]
    assert data["results"][1]["cold_starts"] == 0
    text = (tmp_path / "simulate-csv.md").read_text()  # the command as typed, in minutes
    assert "--idle-minutes 5-15 " in text and "idle reap 5-15 min" in text


def test_tune_managed_instances_sweeps_processes_and_claims_no_gpu(
        tiny: Path, tmp_path: Path) -> None:
    table = tmp_path / "gpu-table.json"
    gpu_check = subprocess.run([str(root() / "scripts" / "gpu-check"), str(table)],
                               capture_output=True, text=True, check=False,
                               env={**os.environ, "PYTHON": sys.executable})
    assert gpu_check.returncode == 3, gpu_check.stderr  # no CUDA device here
    assert "not measured" in gpu_check.stdout
    written = json.loads(table.read_text())
    assert written["format"] == "onnx-lambda-gpu-table/1" and written["measured"] is False
    assert written["device"] is None and written["models"] == [] and written["reason"]

    assert main(["tune", "--managed-instances", "--model", str(tiny), "--processes-per-vcpu",
                 "1,2", "--concurrency", "2", "--requests", "12", "--gpu-table", str(table),
                 "--out-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "tune-managed-linear.json").read_text())
    one, two = data["settings"]
    assert (one["processes"], two["processes"]) == (1, 2)
    # two clients on one process: some find it busy; two processes take both at once
    assert two["throttled"] == 0 and two["requests"] == 12
    assert two["pss_mb"] > 0 and two["rss_mb"] >= two["pss_mb"] and two["fits"]
    assert math.isfinite(two["cost_per_million"]) and two["cost_per_million"] > 0.2
    assert data["recommended"] == 2 or (one["throttled"] == 0 and data["recommended"] == 1)
    assert data["gpu"]["measured"] is False and "no CUDA device" in data["gpu"]["note"]
    text = (tmp_path / "tune-managed-linear.md").read_text()
    assert "--managed-instances" in text and "--sizes" not in text
    assert "GPU variant not measured" in text
