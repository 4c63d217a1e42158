"""SnapStart hook registration: only under SnapStart, through snapshot_restore_py."""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable

import numpy as np
import pytest

from handler import snapstart

SNAP_START = {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Callable[[], None]]]:
    """A stand-in for the runtime's snapshot_restore_py that records registrations."""
    registered: dict[str, list[Callable[[], None]]] = {"before": [], "after": []}
    module = types.ModuleType("snapshot_restore_py")
    module.register_before_snapshot = registered["before"].append  # type: ignore[attr-defined]
    module.register_after_restore = registered["after"].append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", module)
    return registered


@pytest.mark.parametrize("init_type", ["on-demand", "provisioned-concurrency", None])
def test_nothing_is_registered_outside_snapstart(
        hooks: dict[str, list[Callable[[], None]]], init_type: str | None) -> None:
    env = {} if init_type is None else {"AWS_LAMBDA_INITIALIZATION_TYPE": init_type}
    assert snapstart.register(pytest.fail, pytest.fail, env) is False
    assert hooks == {"before": [], "after": []}


def test_snapstart_registers_warm_up_before_and_refresh_after(
        hooks: dict[str, list[Callable[[], None]]]) -> None:
    calls: list[str] = []
    assert snapstart.register(lambda: calls.append("warm-up"),
                              lambda: calls.append("restore"), SNAP_START) is True
    (before,), (after,) = hooks["before"], hooks["after"]
    before()
    after()
    assert calls == ["warm-up", "restore"]


def test_restore_reseeds_the_random_generators(
        hooks: dict[str, list[Callable[[], None]]]) -> None:
    snapstart.register(lambda: None, lambda: None, SNAP_START)
    (after,) = hooks["after"]
    draws = []
    for _ in range(2):  # two environments restored from one snapshot: same state before
        random.seed(1234)
        np.random.seed(1234)
        after()
        draws.append((random.random(), np.random.random()))
    assert draws[0][0] != draws[1][0]
    assert draws[0][1] != draws[1][1]


def test_missing_runtime_module_is_a_warning_not_a_crash(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails
    assert snapstart.register(lambda: None, lambda: None, SNAP_START) is False
    assert "snapshot_restore_py is missing" in caplog.text
