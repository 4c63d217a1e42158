"""A user pipeline module for the tests: ``{"inputs": {"values": [4 numbers]}}`` → the linear
model's two scores under the names ``low``/``high``, plus the input echoed from the feeds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def preprocess(inputs: Any, parameters: Mapping[str, Any], model: Any) -> dict[str, np.ndarray]:
    return {model.inputs[0].name: np.asarray([inputs["values"]], dtype=np.float32)}


def postprocess(outputs: dict[str, Any], parameters: Mapping[str, Any], model: Any,
                feeds: Mapping[str, np.ndarray]) -> Any:
    low, high = outputs["y"][0].tolist()
    return {"low": low, "high": high, "echo": feeds["x"][0].tolist()}


def example(model: Any) -> Any:
    return {"values": [0, 0, 0, 0]}
