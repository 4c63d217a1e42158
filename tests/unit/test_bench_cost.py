"""The price table and the cost model."""

from __future__ import annotations

import pytest

from onnx_lambda.plan import cost


@pytest.fixture(scope="module")
def prices() -> cost.PriceTable:
    return cost.PriceTable.load()


def test_price_table_is_dated_and_sourced(prices: cost.PriceTable) -> None:
    assert prices.raw["retrieved"] and "aws.amazon.com/lambda/pricing" in prices.raw["source"]
    assert set(prices.raw["architectures"]) == {"x86_64", "arm64"}
    assert prices.first_tier("arm64") < prices.first_tier("x86_64")


def test_billing_rounds_up_to_the_millisecond() -> None:
    assert cost.billed_ms(0.2) == 1
    assert cost.billed_ms(1.0) == 1
    assert cost.billed_ms(1.0001) == 2
    assert cost.mean_billed_ms([0.5, 1.5]) == 1.5


def test_cost_per_million_one_gb_one_second(prices: cost.PriceTable) -> None:
    # 1 GB for 1 s = 1 GB-s per request: 1e6 GB-s + 1e6 requests
    expected = 1e6 * 0.0000166667 + 0.20
    assert cost.cost_per_million(prices, 1024, 1000.0) == pytest.approx(expected)


def test_cold_starts_add_billed_init(prices: cost.PriceTable) -> None:
    warm = cost.cost_per_million(prices, 1024, 10.0)
    cold = cost.cost_per_million(prices, 1024, 10.0, cold_fraction=0.5, init_ms=20.0)
    assert cold == pytest.approx(cost.cost_per_million(prices, 1024, 20.0))
    assert cold > warm


def test_duration_tiers_are_walked(prices: cost.PriceTable) -> None:
    first = 6e9 * 0.0000166667
    assert prices.duration_cost(6e9) == pytest.approx(first)
    assert prices.duration_cost(7e9) == pytest.approx(first + 1e9 * 0.000015)
    assert prices.duration_cost(20e9) == pytest.approx(first + 9e9 * 0.000015
                                                       + 5e9 * 0.0000133334)


def test_unknown_architecture_is_explained(prices: cost.PriceTable) -> None:
    with pytest.raises(ValueError, match="known: x86_64, arm64"):
        prices.first_tier("sparc")


def test_bill_total_sums_components() -> None:
    bill = cost.Bill(requests=1, on_demand_duration=2, provisioned_idle=3,
                     provisioned_duration=4, warmer=5)
    assert bill.total == 15 and bill.as_dict()["total"] == 15
