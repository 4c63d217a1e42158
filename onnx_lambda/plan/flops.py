"""A model's work per inference, counted from its graph at one input shape: floating-point
operations of the ops that dominate (MatMul, Gemm, Conv, ConvTranspose, their quantized and
fused forms: 2 per multiply-add), the weights' bytes, and the node count. ONNX shape inference
gives every intermediate shape; free dimensions are 1 unless given (``dims``).

What ``gpu_compare.estimate`` turns into a GPU latency when no GPU was measured: the count is
exact for the shapes used; the latency made from it is an estimate, and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

MATMULS = {"MatMul", "MatMulInteger", "QLinearMatMul", "MatMulNBits", "FusedMatMul"}
CONVS = {"Conv", "ConvInteger", "QLinearConv", "FusedConv", "ConvTranspose"}


class Work(NamedTuple):
    flops: int
    weight_bytes: int
    nodes: int
    io_bytes: int  # the inputs and outputs copied between host and device per inference


def count(model: Path, dims: Mapping[str, int] | None = None) -> Work:
    import onnx
    from onnx import numpy_helper, shape_inference

    proto = onnx.load(str(model))
    dims = dict(dims or {})
    for value in proto.graph.input:  # fix free dimensions so that every shape is known
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.dim_value = dims.get(dim.dim_param, 1)
    inferred = shape_inference.infer_shapes(proto, data_prop=True)
    shapes = {v.name: _shape(v) for v in (*inferred.graph.input, *inferred.graph.value_info,
                                          *inferred.graph.output)}
    weights = {t.name: list(t.dims) for t in proto.graph.initializer}
    shapes.update(weights)
    flops = sum(_node_flops(node, shapes) for node in inferred.graph.node)
    weight_bytes = sum(numpy_helper.to_array(t).nbytes for t in proto.graph.initializer)
    io = sum(math.prod(shapes.get(v.name) or [0]) * 4 for v in (*inferred.graph.input,
                                                                 *inferred.graph.output))
    return Work(int(flops), int(weight_bytes), len(inferred.graph.node), int(io))


def _shape(value: Any) -> list[int] | None:
    dims = value.type.tensor_type.shape.dim
    if not value.type.tensor_type.HasField("shape"):
        return None
    out = [d.dim_value if d.HasField("dim_value") else 0 for d in dims]
    return out if all(out) or not out else None


def _node_flops(node: Any, shapes: Mapping[str, list[int] | None]) -> float:
    if node.op_type in MATMULS or node.op_type == "Gemm":
        out = shapes.get(node.output[0])
        a = shapes.get(node.input[0])
        if not out or not a:
            return 0.0
        transposed = node.op_type == "Gemm" and any(
            att.name == "transA" and att.i for att in node.attribute)
        inner = a[-2] if transposed and len(a) >= 2 else a[-1]
        return 2.0 * math.prod(out) * inner
    if node.op_type in CONVS:
        out, w = shapes.get(node.output[0]), shapes.get(node.input[1] if node.op_type != (
            "QLinearConv") else node.input[3])
        if not out or not w:
            return 0.0
        group = next((att.i for att in node.attribute if att.name == "group"), 1) or 1
        per_output = math.prod(w[1:]) if node.op_type != "ConvTranspose" else (
            w[0] // group * math.prod(w[2:]))
        return 2.0 * math.prod(out) * per_output
    return 0.0
