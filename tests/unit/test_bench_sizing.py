"""Memory sizing: extrapolation, pricing, recommendation per strategy, samconfig writing."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from onnx_lambda.plan import sizing
from onnx_lambda.plan.cost import PriceTable


def point(mb: int, p50: float, p99: float, billed: float | None = None,
          cost: float = math.nan) -> sizing.SizePoint:
    return sizing.SizePoint(memory_mb=mb, cold_init_ms=1000.0, warm_p50_ms=p50,
                            warm_p99_ms=p99, mean_billed_ms=billed or math.ceil(p50),
                            cost_per_million=cost)


def test_measurable_follows_the_host_cores() -> None:
    assert sizing.measurable(3008, 2) and sizing.measurable(3538, 2)
    assert not sizing.measurable(3600, 2)
    assert not sizing.measurable(10240, 4)
    assert sizing.vcpus(10240) == pytest.approx(10240 / 1769)
    assert sizing.vcpus(20000) == 6


def test_extrapolated_points_copy_the_largest_measured_and_are_marked() -> None:
    measured = [point(512, 10, 40), point(1769, 5, 9)]
    extra = sizing.extrapolate(measured, [512, 1769, 10240])
    assert [p.memory_mb for p in extra] == [10240]
    assert extra[0].extrapolated_from == 1769 and not extra[0].measured
    assert extra[0].warm_p99_ms == 9
    assert extra[0].as_dict()["measured"] is False


def test_priced_cost_grows_with_memory_at_equal_duration() -> None:
    prices = PriceTable.load()
    small = sizing.priced(point(512, 5, 9), prices)
    big = sizing.priced(point(1024, 5, 9), prices)
    assert big.cost_per_million > small.cost_per_million > 0.2


POINTS = [point(128, 40, 300, cost=1.0), point(512, 12, 60, cost=1.2),
          point(1769, 5, 9, cost=2.0), point(3008, 4.9, 8.8, cost=3.3),
          sizing.SizePoint(10240, 1000, 1, 1, 1, cost_per_million=0.1,
                           extrapolated_from=3008)]


def test_cost_and_speed_ignore_extrapolated_points() -> None:
    assert sizing.recommend(POINTS, "cost").memory_mb == 128
    assert sizing.recommend(POINTS, "speed").memory_mb == 3008
    assert sizing.recommend(POINTS, "speed", metric="p50").memory_mb == 3008


def test_balanced_weight_moves_between_the_two() -> None:
    assert sizing.recommend(POINTS, "balanced", weight=1.0).memory_mb == 128
    assert sizing.recommend(POINTS, "balanced", weight=0.0).memory_mb == 3008
    # 0.5 * cost / 3.3 + 0.5 * p99 / 300: 512 MB scores 0.28, 1769 MB 0.32, 128 MB 0.65
    assert sizing.recommend(POINTS, "balanced", weight=0.5).memory_mb == 512


def test_ties_go_to_the_smaller_size() -> None:
    same = [point(1024, 5, 9, cost=1.0), point(512, 5, 9, cost=1.0)]
    for strategy in sizing.STRATEGIES:
        assert sizing.recommend(same, strategy).memory_mb == 512


def test_bad_inputs_are_explained() -> None:
    with pytest.raises(ValueError, match="no measured"):
        sizing.recommend(POINTS[-1:], "cost")
    with pytest.raises(ValueError, match="use one of"):
        sizing.recommend(POINTS, "cheap")
    with pytest.raises(ValueError, match="outside"):
        sizing.recommend(POINTS, "balanced", weight=2)


def test_write_samconfig_replaces_only_memory_size(tmp_path: Path) -> None:
    path = tmp_path / "samconfig.toml"
    path.write_text('version = 0.1\n\n[default.deploy.parameters]\ncapabilities = "X"\n'
                    'parameter_overrides = "ColdStartStrategy=\\"provisioned\\" '
                    'MemorySize=\\"1769\\" ProvisionedConcurrency=\\"1\\""\n\n'
                    '[default.local_invoke.parameters]\n'
                    'parameter_overrides = "ColdStartStrategy=\\"none\\""\n')
    assert sizing.write_samconfig(path, 1024)
    assert not sizing.write_samconfig(path, 1024)
    data = tomllib.loads(path.read_text())
    assert data["default"]["deploy"]["parameters"]["parameter_overrides"] == (
        'ColdStartStrategy="provisioned" MemorySize="1024" ProvisionedConcurrency="1"')
    assert data["default"]["local_invoke"]["parameters"]["parameter_overrides"] == (
        'ColdStartStrategy="none"')


def test_write_samconfig_adds_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "samconfig.toml"
    sizing.write_samconfig(path, 512)
    assert tomllib.loads(path.read_text())["default"]["deploy"]["parameters"][
        "parameter_overrides"] == 'MemorySize="512"'
    path.write_text('version = 0.1\n[default.deploy.parameters]\ncapabilities = "X"\n')
    sizing.write_samconfig(path, 256)
    params = tomllib.loads(path.read_text())["default"]["deploy"]["parameters"]
    assert params == {"capabilities": "X", "parameter_overrides": 'MemorySize="256"'}


def test_failed_sizes_are_reported_not_recommended_nor_extrapolated_from() -> None:
    failed = sizing.SizePoint.failure(3008, "init timeout")
    points = [point(512, 12, 60, cost=1.2), failed]
    assert not failed.usable and failed.measured
    assert sizing.recommend(points, "speed").memory_mb == 512
    assert sizing.extrapolate(points, [10240])[0].extrapolated_from == 512
