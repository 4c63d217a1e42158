"""Tiny ONNX models generated with ``onnx.helper`` (no files checked in): what a benchmark runs
when no model is built, and the one place the tests save their generated models through."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
WEIGHTS = np.arange(8, dtype=np.float32).reshape(4, 2)  # linear(): y = x @ WEIGHTS


def save(graph: onnx.GraphProto, path: Path, *, opset: int = OPSET,
         domains: Mapping[str, int] | None = None, metadata: Mapping[str, str] | None = None,
         check: bool = True) -> Path:
    """``graph`` as a model file (IR 8, which every onnxruntime here reads); ``domains``: extra
    operator sets by version; ``check=False`` for a custom op the checker cannot know."""
    opsets = [helper.make_opsetid("", opset),
              *(helper.make_opsetid(domain, v) for domain, v in (domains or {}).items())]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=value)
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def linear(path: Path) -> Path:
    """x: float32[batch, 4] → y: float32[batch, 2] = x @ WEIGHTS."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])
    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 2], WEIGHTS.ravel().tolist())
    node = helper.make_node("MatMul", ["x", "W"], ["y"])
    return save(helper.make_graph([node], "linear", [x], [y], [w]), path)
