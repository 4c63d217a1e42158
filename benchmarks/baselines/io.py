"""JSON ↔ numpy for the baselines (shared so that they differ only in what they measure)."""

from __future__ import annotations

from typing import Any

import numpy as np

_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64,
           "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def feeds(session: Any, inputs: Any) -> dict[str, np.ndarray]:
    """``{"name": nested list}`` (or one bare list for a single-input model) → feeds."""
    specs = session.get_inputs()
    if not isinstance(inputs, dict):
        inputs = {specs[0].name: inputs}
    return {s.name: np.asarray(inputs[s.name], dtype=_DTYPES.get(s.type, np.float32))
            for s in specs}


def outputs(session: Any, values: list[Any]) -> dict[str, Any]:
    return {o.name: v.tolist() if hasattr(v, "tolist") else v
            for o, v in zip(session.get_outputs(), values, strict=True)}
