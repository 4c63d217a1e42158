"""Smoke runs of the observability commands: the tracing cold-start comparison completes on a
tiny model with finite numbers, and the dashboard picture is drawn from the template. No timing
is asserted."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks import dashboard_plot, tracing_cost
from tests.support import cfn, models


def test_tracing_cost_measures_both_sides_interleaved(tmp_path: Path) -> None:
    result = tracing_cost.measure(models.linear(tmp_path / "linear.onnx"), repeat=1)
    medians = result["medians_ms"]
    assert set(medians) == {"off", "on", "on - off"}
    for row in medians.values():
        assert set(row) == set(tracing_cost.VIEWS)
        assert all(math.isfinite(v) for v in row.values())
    assert medians["off"]["wall"] > 0 and medians["on"]["wall"] > 0


def test_dashboard_plot_draws_every_strategy(tmp_path: Path) -> None:
    out = tmp_path / "dashboard.png"
    assert dashboard_plot.main(["-o", str(out), "--template", str(cfn.TEMPLATE)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert dashboard_plot.strategies(cfn.TEMPLATE) == list(
        cfn.load()["Parameters"]["ColdStartStrategy"]["AllowedValues"])
