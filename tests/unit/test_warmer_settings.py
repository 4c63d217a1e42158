"""The warmer's settings table (warmer/settings.py): every variable parsed, checked, documented
once, and its hold limit the handler's (template.yaml's side: tests/unit/test_template.py)."""

from __future__ import annotations

import dataclasses

import pytest

from handler import ping
from tests.support import cfn
from warmer.settings import MAX_HOLD_MS, VARIABLES, WarmConfig

TARGET = "onnx-lambda-InferenceFunction-abc"
VALUES = {"ONNX_LAMBDA_WARM_TARGET": (TARGET, TARGET),
          "ONNX_LAMBDA_WARM_QUALIFIER": ("blue", "blue"),
          "ONNX_LAMBDA_WARM_CONCURRENCY": ("7", 7),
          "ONNX_LAMBDA_WARM_HOLD_MS": ("250", 250),
          "ONNX_LAMBDA_METRICS_NAMESPACE": ("Digits", "Digits")}


def test_every_variable_is_parsed_from_the_environment() -> None:
    assert {var.env_name for var in VARIABLES} == set(VALUES)
    config = WarmConfig.from_env({name: raw for name, (raw, _) in VALUES.items()})
    for var in VARIABLES:
        assert getattr(config, var.field) == VALUES[var.env_name][1], var.env_name


def test_defaults_are_the_tables_and_only_the_target_is_required() -> None:
    config = WarmConfig.from_env({"ONNX_LAMBDA_WARM_TARGET": TARGET})
    defaults = {f.name: f.default for f in dataclasses.fields(WarmConfig)}
    for var in VARIABLES[1:]:
        assert getattr(config, var.field) == var.default == defaults[var.field], var.env_name
    assert (config.qualifier, config.concurrency, config.hold_ms) == ("live", 1, 100)
    with pytest.raises(ValueError, match="ONNX_LAMBDA_WARM_TARGET"):
        WarmConfig.from_env({})


@pytest.mark.parametrize(("name", "value"), [
    ("ONNX_LAMBDA_WARM_CONCURRENCY", "0"), ("ONNX_LAMBDA_WARM_CONCURRENCY", "many"),
    ("ONNX_LAMBDA_WARM_HOLD_MS", str(MAX_HOLD_MS + 1)), ("ONNX_LAMBDA_WARM_HOLD_MS", "-1"),
    ("ONNX_LAMBDA_WARM_TARGET", ""),
])
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        WarmConfig.from_env({"ONNX_LAMBDA_WARM_TARGET": TARGET, name: value})


@pytest.mark.parametrize("fields", [{"concurrency": 0}, {"hold_ms": MAX_HOLD_MS + 1},
                                    {"target": ""}, {"max_attempts": 0}])
def test_a_config_built_directly_is_checked_by_the_same_parsers(fields: dict) -> None:
    with pytest.raises(ValueError):
        WarmConfig(**{"target": TARGET, **fields})


def test_the_hold_limit_is_the_handlers() -> None:
    # a longer hold than the handler allows would be cut short there: N pings, fewer environments
    assert MAX_HOLD_MS == ping.MAX_HOLD_MS
    assert ping.hold_ms({"holdMs": MAX_HOLD_MS}) == MAX_HOLD_MS


def test_every_variable_is_documented_once_in_the_configuration_reference() -> None:
    table = (cfn.ROOT / "docs" / "reference" / "configuration.md").read_text()
    for var in VARIABLES:
        row = f"| `{var.env_name}` | `{var.default}` | {var.doc} |"
        assert table.count(f"\n{row}\n") == 1, row

