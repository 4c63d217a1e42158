"""Every variable the warmer function reads, declared once, parsed in one place.

The environment is passed in as a mapping (never read at import time), as in
``handler/settings.py``; docs/reference/configuration.md's warmer table is checked against
``VARIABLES`` by a test.
boto3's own ``AWS_ENDPOINT_URL_LAMBDA`` (e.g. the local emulator) is read by boto3, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

# The inference handler clamps a ping's hold to the same limit (handler/ping.py; a test checks
# they are equal): a longer hold would be cut short there.
MAX_HOLD_MS = 1000


def _target(value: str) -> str:
    if not value:
        raise ValueError("the warmer needs a target: set ONNX_LAMBDA_WARM_TARGET")
    return value


def _concurrency(value: str | int) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(f"expected an integer >= 1, got {value!r}")
    return number


def _hold_ms(value: str | int) -> int:
    number = int(value)
    if not 0 <= number <= MAX_HOLD_MS:
        raise ValueError(f"expected 0..{MAX_HOLD_MS} ms, got {value!r}")
    return number


class Variable(NamedTuple):
    env_name: str
    field: str
    parse: Callable[[Any], Any]  # from the environment's string or an explicit value
    default: Any
    doc: str


VARIABLES: tuple[Variable, ...] = (
    Variable("ONNX_LAMBDA_WARM_TARGET", "target", _target, "",
             "The inference function's name or ARN (required; the template sets it)."),
    Variable("ONNX_LAMBDA_WARM_QUALIFIER", "qualifier", str, "live",
             "Alias or version to warm; empty = unqualified."),
    Variable("ONNX_LAMBDA_WARM_CONCURRENCY", "concurrency", _concurrency, 1,
             "N: environments to keep warm, one parallel ping each."),
    Variable("ONNX_LAMBDA_WARM_HOLD_MS", "hold_ms", _hold_ms, 100,
             f"How long each ping holds its environment (at most {MAX_HOLD_MS}), so N "
             "concurrent pings land on N distinct environments."),
    Variable("ONNX_LAMBDA_METRICS_NAMESPACE", "namespace", str, "OnnxLambda",
             "CloudWatch namespace of the warmer's EMF metrics (the handler's variable)."),
)
_DEFAULTS = {var.field: var.default for var in VARIABLES}


@dataclass(frozen=True)
class WarmConfig:
    """What to warm (function + qualifier), how wide (N), how long each ping holds, how to
    retry. Built from the environment (``from_env``) or directly (``onnx-lambda warm``); both
    are checked by the variables' parsers."""

    target: str
    qualifier: str = _DEFAULTS["qualifier"]
    concurrency: int = _DEFAULTS["concurrency"]
    hold_ms: int = _DEFAULTS["hold_ms"]
    namespace: str = _DEFAULTS["namespace"]
    # Retries of throttled pings (not configurable by the environment).
    max_attempts: int = 5
    base_delay_s: float = 0.05
    max_delay_s: float = 1.0

    def __post_init__(self) -> None:
        for var in VARIABLES:
            try:
                var.parse(getattr(self, var.field))
            except ValueError as exc:
                raise ValueError(f"{var.field}: {exc}") from None
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WarmConfig:
        values: dict[str, Any] = {}
        for var in VARIABLES:
            try:
                values[var.field] = var.parse(env[var.env_name]) if var.env_name in env \
                    else var.default
            except ValueError as exc:
                raise ValueError(f"{var.env_name}: {exc}") from None
        return cls(**values)

    @property
    def function_name(self) -> str:
        """The bare function name (the EMF ``FunctionName`` dimension), also from an ARN."""
        parts = self.target.split(":")
        return parts[6] if self.target.startswith("arn:") and len(parts) > 6 else self.target

