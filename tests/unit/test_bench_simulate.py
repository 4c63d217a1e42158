"""The traffic patterns and the lifecycle simulator (pure, deterministic for a seed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from onnx_lambda.plan import simulate, traffic
from onnx_lambda.plan.cost import SECONDS_PER_MONTH, PriceTable

WORK = simulate.Workload(service_ms=[2.0], init_ms=[300.0], memory_mb=1024)


def test_patterns_are_sorted_bounded_and_seeded() -> None:
    for make in (lambda r: traffic.steady(r, 2.0, 600),
                 lambda r: traffic.bursty(r, 0.1, 600, every_s=120, size=10, spread_s=0.5),
                 lambda r: traffic.diurnal(r, 1.0, 3600)):
        a, b = make(random.Random(3)), make(random.Random(3))
        assert a == b and a == sorted(a)
        assert all(0 <= t < 3600 for t in a)


def test_steady_rate_is_about_right() -> None:
    arrivals = traffic.steady(random.Random(0), 5.0, 1000)
    assert 4500 < len(arrivals) < 5500


def test_diurnal_peaks_in_the_afternoon() -> None:
    arrivals = traffic.diurnal(random.Random(0), 1.0, traffic.DAY_S, peak_to_trough=10)
    night = sum(1 for t in arrivals if 3 * 3600 <= t < 5 * 3600)
    afternoon = sum(1 for t in arrivals if 15 * 3600 <= t < 17 * 3600)
    assert afternoon > 5 * night


def test_csv_epoch_and_iso_with_header(tmp_path: Path) -> None:
    path = tmp_path / "ts.csv"
    path.write_text("timestamp\n2026-01-01T00:00:10Z\n2026-01-01T00:00:00Z\n")
    assert traffic.from_csv(path) == [0.0, 10.0]
    path.write_text("100.5,x\n100,y\n")
    assert traffic.from_csv(path) == [0.0, 0.5]
    path.write_text("1\nnot-a-time\n")
    with pytest.raises(ValueError, match="not a timestamp"):
        traffic.from_csv(path)


def test_strategy_parse_and_label() -> None:
    assert simulate.Strategy.parse("none").label == "none"
    assert simulate.Strategy.parse("both:2,4") == simulate.Strategy(provisioned=2, warmer=4)
    assert simulate.Strategy.parse("warmer:3").label == "warmer 3"
    with pytest.raises(ValueError, match="warmer:N"):
        simulate.Strategy.parse("warm")


def test_sequential_requests_reuse_one_environment() -> None:
    result = simulate.run([0.0, 1.0, 2.0, 3.0], WORK, simulate.Strategy())
    assert (result.cold_starts, result.environments) == (1, 1)
    assert result.latencies_ms == [302.0, 2.0, 2.0, 2.0]


def test_idle_environments_are_reaped() -> None:
    life = simulate.Lifecycle(idle_s=(60.0, 60.0))
    result = simulate.run([0.0, 30.0, 200.0], WORK, simulate.Strategy(), lifecycle=life)
    assert result.cold_starts == 2


def test_simultaneous_requests_each_start_an_environment() -> None:
    result = simulate.run([0.0] * 5, WORK, simulate.Strategy())
    assert result.cold_starts == 5 and result.peak_concurrency == 5


def test_provisioned_environments_absorb_up_to_their_count() -> None:
    result = simulate.run([1.0] * 5, WORK, simulate.Strategy(provisioned=3))
    assert result.cold_starts == 2


def test_warmer_keeps_environments_warm_across_idle_gaps() -> None:
    life = simulate.Lifecycle(idle_s=(400.0, 400.0), warmer_every_s=300.0)
    arrivals = [1000.0 * i + 1 for i in range(1, 6)] * 2
    arrivals.sort()
    none = simulate.run(arrivals, WORK, simulate.Strategy(), lifecycle=life)
    warm = simulate.run(arrivals, WORK, simulate.Strategy(warmer=2), lifecycle=life)
    assert none.cold_starts == len(arrivals)
    assert warm.cold_starts == 0


def test_results_are_deterministic_for_a_seed() -> None:
    arrivals = traffic.bursty(random.Random(1), 0.05, 3600, every_s=600, size=8, spread_s=0.1)
    work = simulate.Workload(service_ms=[1.0, 2.0, 9.0], init_ms=[200.0, 400.0])
    life = simulate.Lifecycle(idle_s=(300.0, 900.0))
    a = simulate.run(arrivals, work, simulate.Strategy(warmer=2), lifecycle=life, seed=7)
    b = simulate.run(arrivals, work, simulate.Strategy(warmer=2), lifecycle=life, seed=7)
    assert a.as_dict() == b.as_dict()


def test_provisioned_idle_cost_is_a_full_month() -> None:
    prices = PriceTable.load()
    result = simulate.run([1.0], WORK, simulate.Strategy(provisioned=2), horizon_s=3600)
    per_gb_s = prices.provisioned("x86_64")[0]
    assert result.bill.provisioned_idle == pytest.approx(2 * 1.0 * SECONDS_PER_MONTH * per_gb_s)
    assert result.bill.on_demand_duration == 0.0


def test_cost_scales_from_horizon_to_month() -> None:
    day = simulate.run([1.0] * 10, WORK, simulate.Strategy(), horizon_s=86400)
    hour = simulate.run([1.0] * 10, WORK, simulate.Strategy(), horizon_s=3600)
    assert hour.bill.requests == pytest.approx(24 * day.bill.requests)


def test_candidates_cover_each_strategy_up_to_the_peak() -> None:
    labels = [s.label for s in simulate.candidates(5)]
    assert labels[0] == "none"
    assert {"warmer 1", "warmer 4", "warmer 5", "provisioned 5",
            "provisioned 2 + warmer 5"} <= set(labels)
    assert "warmer 8" not in labels


def _result(cold: int, cost: float) -> simulate.Result:
    from onnx_lambda.plan.cost import Bill

    return simulate.Result(simulate.Strategy(warmer=cold + 1), 100, cold, [], 1, 1,
                           Bill(requests=cost))


def test_recommend_cheapest_meeting_target_else_fewest_cold() -> None:
    assert simulate.recommend([_result(5, 1.0), _result(1, 3.0), _result(0, 9.0)],
                              target=0.01).bill.total == 3.0
    assert simulate.recommend([_result(5, 1.0), _result(3, 7.0)], target=0.01).cold_starts == 3
