"""``tune`` and ``simulate`` with ``--network-ms``: a figure or ``regions --json``'s file adds
each region's network to what the function's front sees, checked against the latency target."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from onnx_lambda.cli import main
from onnx_lambda.plan import end_to_end, sizing
from onnx_lambda.plan.commands.tune import end_to_end_section
from onnx_lambda.regions import report


def regions_json(path: Path, figures: dict[str, float | None]) -> Path:
    results = [{"region": r, "reachable": ms is not None, "network_ms": ms,
                "new_connection_ms": None, "errors": [] if ms else ["timed out"], "phases": {}}
               for r, ms in figures.items()]
    doc = report.document(results, mode="lambda-endpoint", budget_ms=100.0, samples=3)
    path.write_text(json.dumps(doc))
    return path


def test_rows_add_the_network_to_every_front_figure() -> None:
    rows = end_to_end.rows({"eu-west-1": 19.0, "ap-south-1": 140.0},
                           {"warm p99": 6.5, "cold start": 310.0}, 100.0)
    near, far = rows
    assert near["warm p99"] == {"front_ms": 6.5, "end_to_end_ms": 25.5, "left_ms": 74.5,
                                "meets": True}
    assert not near["cold start"]["meets"] and not far["warm p99"]["meets"]
    text = "\n".join(end_to_end.markdown(rows, {"warm p99": 6.5, "cold start": 310.0}, 100.0,
                                         "the front"))
    assert "eu-west-1: network 19 ms + warm p99 6.5 ms = 26 ms, leaves 74 ms of the 100 ms" \
           in text
    assert "| ap-south-1 | 140.0 | 146.5 (over) | 450.0 (over) | 100 ms |" in text


def test_tune_section_uses_the_recommended_size(tmp_path: Path) -> None:
    point = sizing.SizePoint(1769, cold_init_ms=250.0, warm_p50_ms=2.0, warm_p99_ms=4.0,
                             mean_billed_ms=3.0)
    args = argparse.Namespace(network_ms=str(regions_json(tmp_path / "r.json",
                                                          {"b": 30.0, "a": 10.0, "x": None})),
                              latency_target_ms=50.0, strategy="balanced")
    section = end_to_end_section(args, point)
    assert [r["region"] for r in section["rows"]] == ["a", "b"]  # ranked, unreachable left out
    assert section["rows"][1]["warm p99"]["end_to_end_ms"] == 34.0
    assert section["rows"][0]["cold start"] == {"front_ms": 250.0, "end_to_end_ms": 260.0,
                                                "left_ms": -210.0, "meets": False}
    assert "1769 MB" in section["text"][0]
    args.network_ms = None
    assert end_to_end_section(args, point) == {"text": [], "rows": None}


def test_simulate_reports_each_region_against_the_target(tmp_path: Path) -> None:
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps({"samples": {"1769": {"init_ms": [600.0, 700.0],
                                                     "warm_ms": [2.0, 3.0, 9.0]}}}))
    regions = regions_json(tmp_path / "regions.json", {"eu-west-1": 19.0, "us-east-1": 85.0})
    args = ["simulate", "--pattern", "steady", "--hours", "1", "--rate", "2", "--measured",
            str(tune), "--strategy", "provisioned:4", "--out-dir", str(tmp_path)]
    main([*args, "--network-ms", str(regions), "--latency-target-ms", "95"])
    data = json.loads((tmp_path / "simulate-steady.json").read_text())
    (result,) = data["results"]
    rows = {r["region"]: r for r in data["end_to_end"]}
    assert list(rows) == ["eu-west-1", "us-east-1"]
    for region, ms in (("eu-west-1", 19.0), ("us-east-1", 85.0)):
        cell = rows[region]["p99"]
        assert cell["front_ms"] == pytest.approx(result["p99_ms"])
        assert cell["end_to_end_ms"] == pytest.approx(result["p99_ms"] + ms)
        assert cell["meets"] == (result["p99_ms"] + ms <= 95)
    assert "End to end per region" in (tmp_path / "simulate-steady.md").read_text()

    main([*args, "--network-ms", "40"])  # one figure: one row
    data = json.loads((tmp_path / "simulate-steady.json").read_text())
    assert [r["region"] for r in data["end_to_end"]] == ["given"]
    with pytest.raises(SystemExit, match="not a readable JSON file"):
        main([*args, "--network-ms", str(tmp_path / "missing.json")])
