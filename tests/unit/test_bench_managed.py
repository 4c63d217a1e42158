"""Lambda Managed Instances priced beside on-demand and provisioned concurrency: hand-computed
cases against onnx_lambda.plan.managed and the dated prices.json."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from onnx_lambda.plan import managed
from onnx_lambda.plan.cost import PriceTable

PRICES = PriceTable.load()
HOURS = 30 * 24
MONTH_S = 30 * 24 * 3600
C7G = managed.instance(PRICES, "c7g.large")  # 2 vCPU, 4 GiB, $0.0725 an hour
C7I = managed.instance(PRICES, "c7i.large")  # 2 vCPU, 4 GiB, $0.08925 an hour, x86_64
STEADY = managed.Traffic(mean_rps=10, peak_rps=20, duration_ms=10)


def test_prices_are_dated_and_carry_the_fee_the_request_charge_and_three_instances() -> None:
    terms = PRICES.raw["managed_instances"]
    assert terms["retrieved"] and "lambda/pricing" in terms["source"]
    assert (terms["management_fee"], terms["request_per_million"], terms["min_instances"]) == (
        0.15, 0.20, 3)
    assert (C7G.vcpus, C7G.memory_gib, C7G.per_hour, C7G.arch) == (2, 4, 0.0725, "arm64")
    assert managed.instance(PRICES, "g6.xlarge").gpu_memory_gib == 24
    with pytest.raises(ValueError, match=r"known: c7g\.large"):
        managed.instance(PRICES, "t2.nano")


def test_light_traffic_pays_for_the_three_instance_minimum() -> None:
    option = managed.managed(STEADY, PRICES, C7G, rss_mb=100)
    ec2 = 3 * 0.0725 * HOURS  # 156.60
    requests = 10 * MONTH_S * 0.20 / 1e6  # 25.92 M requests: 5.184
    assert option.components == pytest.approx({"ec2": ec2, "management_fee": 0.15 * ec2,
                                               "requests": requests})
    assert option.monthly_usd == pytest.approx(185.274)
    assert option.sizing.startswith("3 x c7g.large")


def test_the_peak_sizes_the_fleet_at_the_target_utilization() -> None:
    # one process per vCPU, 10 ms each, 70 % busy: 2 x 0.7 x 100 = 140 rps an instance
    burst = managed.Traffic(mean_rps=100, peak_rps=1000, duration_ms=10)
    option = managed.managed(burst, PRICES, C7G, rss_mb=100)
    assert option.components["ec2"] == pytest.approx(math.ceil(1000 / 140) * 0.0725 * HOURS)


def test_memory_budget_is_per_process_rss_times_processes() -> None:
    # 16 processes per vCPU want 32 x 600 MB; 90 % of 4 GiB holds 6 of them
    assert managed.processes_that_fit(C7G, 600, 16) == 6
    assert managed.processes_that_fit(C7G, 60, 16) == 32  # the vCPUs x 16 cap
    assert managed.processes_that_fit(C7G, 600, 16, reserve=0.0) == 6
    assert managed.processes_that_fit(C7G, 400, 16, reserve=0.0) == 10
    with pytest.raises(ValueError, match="does not fit"):
        managed.managed(STEADY, PRICES, C7G, rss_mb=5000)
    option = managed.managed(STEADY, PRICES, C7G, rss_mb=600, processes_per_vcpu=16)
    assert "6 processes x 600 MB = 3.5 of 4 GiB" in option.sizing


def test_provisioned_concurrency_for_the_peak_and_on_demand_by_the_request() -> None:
    gb = 1769 / 1024
    requests = 10 * MONTH_S
    pc = managed.provisioned(STEADY, PRICES, memory_mb=1769)  # ceil(20 x 0.01 / 0.7) = 1
    assert pc.components == pytest.approx({
        "provisioned_idle": gb * MONTH_S * 0.0000041667,
        "provisioned_duration": requests * gb * 0.010 * 0.0000097222,
        "requests": requests * 0.20 / 1e6})
    assert pc.sizing == "1 x 1769 MB provisioned"

    od = managed.on_demand(STEADY, PRICES, memory_mb=1769, cold_fraction=0.01, init_ms=250)
    billed_s = 0.010 + 0.01 * 0.250
    assert od.components["on_demand_duration"] == pytest.approx(
        requests * gb * billed_s * 0.0000166667)


def test_comparison_is_cheapest_first_and_managed_instances_win_only_with_volume() -> None:
    quiet = managed.compare(STEADY, PRICES, C7I, rss_mb=100)
    assert [o.monthly_usd for o in quiet] == sorted(o.monthly_usd for o in quiet)
    assert quiet[-1].name == "managed-instances"  # 3 idle instances cost more than 26 M requests

    busy = managed.Traffic(mean_rps=2000, peak_rps=2400, duration_ms=10)
    assert managed.compare(busy, PRICES, C7I, rss_mb=100)[0].name == "managed-instances"
    # sized for the peak: a 3x burst over the mean makes the instances idle most of the time
    bursty = managed.Traffic(mean_rps=2000, peak_rps=6000, duration_ms=10)
    assert managed.compare(bursty, PRICES, C7I, rss_mb=100)[0].name == "on-demand"


def test_break_even_is_the_last_crossing_of_the_sawtooth() -> None:
    # c7i.large serves 2 x 0.7 x 100 = 140 rps at the peak (peak = 1.2 x mean): one instance per
    # 116.7 rps mean, each 0.08925 x 720 x 1.15 = $73.90; on demand pays $0.7463 per mean rps
    # (both pay the same request charge). Just after the fleet grows to n instances Managed
    # Instances are dearer by 87.07 - 13.17 n: true up to n = 6, which on-demand overtakes
    # at 6 x 73.90 / 0.7463 = 594 rps; from there on Managed Instances stay cheaper.
    traffic = managed.Traffic(mean_rps=100, peak_rps=120, duration_ms=10)
    per_instance = 0.08925 * HOURS * 1.15
    per_rps = MONTH_S * 1769 / 1024 * 0.010 * 0.0000166667
    rps = managed.break_even_rps(traffic, PRICES, C7I, "on-demand", rss_mb=100)
    assert rps == pytest.approx(6 * per_instance / per_rps, rel=1e-6)
    tiny = managed.Traffic(mean_rps=0.001, peak_rps=0.002, duration_ms=10)
    assert managed.break_even_rps(tiny, PRICES, C7I, "on-demand", rss_mb=100) is None


def test_bad_traffic_is_refused() -> None:
    with pytest.raises(ValueError):
        managed.Traffic(mean_rps=10, peak_rps=5, duration_ms=10)
    with pytest.raises(ValueError):
        managed.Traffic(mean_rps=1, peak_rps=1, duration_ms=0)


def test_price_command_prints_the_three_options_and_the_break_even(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    from onnx_lambda.cli import main

    out = tmp_path / "price.json"
    assert main(["price", "--mean-rps", "100", "--peak-rps", "120", "--duration-ms", "10",
                 "--rss-mb", "100", "--instance", "c7i.large", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rows = [line.split("|")[1].strip() for line in text.splitlines()
            if line.startswith("| ") and "option" not in line]
    assert rows == ["on-demand", "provisioned", "managed-instances"]
    assert "cost less than on-demand above 594 rps mean" in text
    # the echoed command names what shaped the result: no process count for a given RSS
    assert "--rss-mb 100.0" in text and "--measure-processes" not in text
    saved = json.loads(out.read_text())
    assert saved["break_even_rps"]["on-demand"] == pytest.approx(594, abs=1)
    with pytest.raises(SystemExit, match="does not fit"):
        main(["price", "--mean-rps", "1", "--duration-ms", "10", "--rss-mb", "9000"])


def test_simulated_managed_instances_never_start_cold_and_queue_beyond_their_vcpus() -> None:
    from onnx_lambda.plan import simulate

    assert simulate.Strategy.parse("managed:3") == simulate.Strategy(managed=3)
    assert simulate.Strategy(managed=3).label == "managed-instances 3"
    work = simulate.Workload(service_ms=[10.0], init_ms=[900.0], instance="c7i.large")
    # 3 x c7i.large = 6 processes; 8 requests at once: 6 served now, 2 wait one service time
    burst = [100.0] * 8 + [3600.0]
    result = simulate.run(burst, work, simulate.Strategy(managed=3), horizon_s=3600.0)
    assert result.cold_starts == 0
    assert sorted(result.latencies_ms) == pytest.approx([10.0] * 7 + [20.0, 20.0])
    assert result.peak_concurrency == 8
    month = 30 * 24
    assert result.bill.managed_instances == pytest.approx(3 * 0.08925 * month * 1.15)
    assert result.bill.requests == pytest.approx(9 * 24 * 30 * 0.20 / 1e6)
    assert result.bill.total == pytest.approx(result.bill.managed_instances
                                              + result.bill.requests)
    on_demand = simulate.run(burst, work, simulate.Strategy(), horizon_s=3600.0)
    assert on_demand.cold_starts == 9  # eight for the burst, one after an hour idle


def test_managed_candidates_give_each_concurrent_request_a_vcpu() -> None:
    from onnx_lambda.plan import simulate

    assert [s.managed for s in simulate.managed_candidates(5, vcpus=2, minimum=3)] == [3, 6]
    assert [s.managed for s in simulate.managed_candidates(13, vcpus=2, minimum=3)] == [7, 14]
