"""``tune --managed-instances``'s arithmetic and choices, and the CPU vs GPU comparison, against
hand-computed cases and the dated prices.json (the measuring itself: tests/perf)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from onnx_lambda.plan import gpu_compare, tune_managed
from onnx_lambda.plan.cost import PriceTable
from onnx_lambda.plan.managed import instance
from onnx_lambda.plan.tune_managed import Setting

PRICES = PriceTable.load()
C7I = instance(PRICES, "c7i.large")  # 2 vCPU, 4 GiB, $0.08925 an hour
G6 = instance(PRICES, "g6.xlarge")  # 4 vCPU, one NVIDIA L4, $0.8048 an hour


def point(per_vcpu: int, p99: float, *, throttled: int = 0, fits: bool = True,
          failed: str | None = None) -> Setting:
    return Setting(per_vcpu, per_vcpu, 1, 2048, requests=100, throttled=throttled, p99_ms=p99,
                   fits=fits, cost_per_million=0.4, failed=failed)


def test_cost_per_million_is_the_environment_share_of_the_instance_at_the_sustained_rate(
        ) -> None:
    # two 1-vCPU environments per c7i.large; 100 rps at 70 % = 252,000 requests an hour
    per_env_hour = 0.08925 * 1.15 / 2
    expected = per_env_hour / 252_000 * 1e6 + 0.20
    assert tune_managed.cost_per_million(PRICES, C7I, 1, 100.0, 0.7) == pytest.approx(expected)
    assert expected == pytest.approx(0.403646, abs=1e-6)
    # a 2-vCPU environment takes the whole instance: twice the share, same rate
    assert tune_managed.cost_per_million(PRICES, C7I, 2, 100.0, 0.7) == pytest.approx(
        2 * per_env_hour / 252_000 * 1e6 + 0.20)
    assert math.isnan(tune_managed.cost_per_million(PRICES, C7I, 1, 0.0, 0.7))


def test_fits_takes_the_environment_memory_and_the_instance_share() -> None:
    # c7i.large: 4 GiB less 10 % = 3,686 MB for two environments: 1,843 MB each
    assert tune_managed.fits(C7I, 1, 1800.0, 2048)
    assert not tune_managed.fits(C7I, 1, 1900.0, 2048)  # within 2 GiB, not within its share
    assert not tune_managed.fits(C7I, 2, 2100.0, 2048)  # over the environment's own memory
    with pytest.raises(ValueError, match=r"does not fit c7i\.large"):
        tune_managed.check_instance(C7I, 4)


def test_the_recommendation_is_the_lowest_p99_with_ties_to_fewer_processes() -> None:
    settings = [point(1, 5.0, throttled=3), point(2, 9.5), point(4, 9.0), point(8, 8.9),
                point(16, 8.0, fits=False)]
    best = tune_managed.recommend(settings, tolerance=0.1)
    # 1 throttled and 16 does not fit; 2, 4 and 8 are within 10 % of 8.9: the fewest wins
    assert best is not None and best.processes_per_vcpu == 2
    assert tune_managed.recommend(settings, tolerance=0.0).processes_per_vcpu == 8  # type: ignore[union-attr]
    assert tune_managed.recommend([point(1, 5.0, throttled=1),
                                   point(2, 1.0, failed="init timeout")]) is None
    assert settings[0].throttle_fraction == pytest.approx(3 / 103)


def test_aggregating_a_setting_prices_it_and_keeps_the_first_failure() -> None:
    runs = [{"durations_ms": [1.0, 2.0, 3.0], "client_ms": [2.0, 3.0, 4.0], "throttled": 1,
             "wall_s": 0.03, "rss_mb": 120.0, "pss_mb": 70.0}]
    got = tune_managed.setting(2, runs, vcpus=1, gib_per_vcpu=2, inst=C7I, prices=PRICES,
                               utilization=0.7)
    assert (got.processes, got.requests, got.throttled, got.p50_ms) == (2, 3, 1, 2.0)
    assert got.sustained_rps == pytest.approx(100.0) and got.fits and not got.eligible
    assert got.cost_per_million == pytest.approx(0.403646, abs=1e-6)
    failed = tune_managed.setting(4, [*runs, {"error": "3 of 4 processes answered"}], vcpus=1,
                                  gib_per_vcpu=2, inst=C7I, prices=PRICES, utilization=0.7)
    assert failed.failed == "3 of 4 processes answered" and not failed.eligible


def table(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "gpu-table.json"
    path.write_text(json.dumps({"format": gpu_compare.FORMAT, **fields}))
    return path


def cuda_row(name: str = "minilm", *, ok: bool = True) -> dict[str, object]:
    return {"name": name, "parity": {"ok": ok, "max_abs_diff": 1e-6},
            "cuda": {"p50_ms": 1.0, "p99_ms": 2.0, "rps": 1000.0}}


def test_a_gpu_is_priced_only_on_an_instance_with_that_gpu() -> None:
    assert gpu_compare.gpu_instance(PRICES, "NVIDIA L4") == G6
    assert gpu_compare.gpu_instance(PRICES, "NVIDIA H200") is None


def test_the_table_side_says_why_nothing_is_compared(tmp_path: Path) -> None:
    def side(**fields: object) -> gpu_compare.GpuSide:
        loaded = gpu_compare.load_table(table(tmp_path, **fields))
        return gpu_compare.from_table(loaded, "minilm", PRICES, 0.7)

    none = side(measured=False, reason="no CUDA device")
    assert none.option is None and "not measured" in none.note and "no CUDA device" in none.note
    missing = side(measured=True, device={"name": "NVIDIA L4"}, models=[cuda_row("bert-base")])
    assert missing.option is None and "no 'minilm'" in missing.note
    differs = side(measured=True, device={"name": "NVIDIA L4"}, models=[cuda_row(ok=False)])
    assert differs.option is None and "differ" in differs.note
    h200 = side(measured=True, device={"name": "NVIDIA H200"}, models=[cuda_row()])
    assert h200.option is None and "no priced Managed Instances type" in h200.note
    l4 = side(measured=True, device={"name": "NVIDIA L4"}, models=[cuda_row()], date="d")
    assert l4.option is not None and l4.option.p99_ms == 2.0
    # the whole g6.xlarge per environment: 0.8048 x 1.15 / (1000 x 0.7 x 3600) x 1e6 + 0.20
    assert l4.option.cost == pytest.approx(0.8048 * 1.15 / 2_520_000 * 1e6 + 0.2)


def test_equal_p99_compares_the_cheapest_option_each_side_reaches() -> None:
    cpu = [gpu_compare.Option("c7i 1", 12.0, 0.40), gpu_compare.Option("c7i 4", 20.0, 0.30)]
    gpu = gpu_compare.Option("GPU g6", 15.0, 0.55)
    compared = gpu_compare.at_equal_p99(cpu, gpu)
    # target: the larger best p99 (15 ms); CPU reaches it with "c7i 1" only
    assert compared is not None and compared["p99_target_ms"] == 15.0
    assert compared["cpu"]["label"] == "c7i 1" and compared["cheaper"] == "CPU"
    text, doc = gpu_compare.summary(cpu, gpu_compare.GpuSide(gpu, "GPU measured on L4"))
    assert "CPU is cheaper" in text and doc["measured"]
    text, doc = gpu_compare.summary(cpu, gpu_compare.GpuSide(None, "GPU variant not measured"))
    assert text == "GPU variant not measured." and doc == {"measured": False,
                                                           "note": "GPU variant not measured"}


def test_a_file_that_is_not_a_gpu_table_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"points": []}')
    with pytest.raises(gpu_compare.GpuTableError, match="not a GPU table"):
        gpu_compare.load_table(bad)
    with pytest.raises(gpu_compare.GpuTableError, match="not a readable JSON"):
        gpu_compare.load_table(tmp_path / "absent.json")


def test_without_a_device_the_handler_choice_is_cpu_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.json").write_text(json.dumps({"gpu": {"suitable": False}}))
    provider, reason = gpu_compare.local_choice(folder, env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert provider == "cpu" and "no GPU device" in reason


@pytest.mark.parametrize(("flags", "message"), [
    (["--processes-per-vcpu", "0,1"], "at least 1 process per vCPU"),
    (["--vcpus", "999"], "this host can emulate"),
    (["--concurrency", "0"], "must be at least 1"),
    (["--utilization", "1.5"], "--utilization"),
    (["--instance", "t2.nano"], "no price for instance type"),
])
def test_bad_numbers_are_refused_before_anything_runs(flags: list[str], message: str) -> None:
    from onnx_lambda.cli import main

    with pytest.raises(SystemExit, match=message):
        main(["tune", "--managed-instances", "--model", "/nonexistent", *flags])


def test_a_missing_model_is_a_message_not_a_traceback() -> None:
    from onnx_lambda.cli import main

    with pytest.raises(SystemExit, match="onnx-lambda tune: model not found: /nonexistent"):
        main(["tune", "--managed-instances", "--model", "/nonexistent"])
