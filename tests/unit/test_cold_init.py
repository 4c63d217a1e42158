"""``benchmarks.cold.cold_init``: the one cold-init figure every benchmark compares."""

from __future__ import annotations

import pytest

from benchmarks.cold import cold_init


def test_a_floor_counts_its_one_run_and_not_the_interpreter() -> None:
    floor = {"interpreter": 40.0, "imports": 17.0, "model-load": 50.0, "first request": 1.0}
    assert cold_init(floor) == 68.0


def test_ours_counts_the_warm_up_and_not_the_first_request_after_the_init() -> None:
    ours = {"interpreter": 40.0, "imports": 20.0, "model-load": 45.0, "warm-up": 0.5,
            "other init": 1.0, "first request": 3.0}
    assert cold_init(ours) == 66.5


def test_a_lazy_target_counts_its_first_request() -> None:
    naive = {"interpreter": 50.0, "imports": 1200.0, "model-load": 6.0, "other init": 0.7,
             "first request": 2.4}
    assert cold_init(naive) == pytest.approx(1209.1)
