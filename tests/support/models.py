"""Tiny ONNX models generated with ``onnx.helper`` for the tests (no files checked in); the
saver and ``linear`` are the tooling's (``onnx_lambda.tiny_models``)."""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper

# OPSET, WEIGHTS and linear are re-exported: tests import every model from here
from onnx_lambda.tiny_models import OPSET, WEIGHTS, linear, save  # noqa: F401


def multi_io(path: Path) -> Path:
    """a: float32[batch, 3], ids: int64[batch, 2] → total: float32[batch, 1] (row sum of a),
    doubled: int64[batch, 2] (ids * 2)."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 3])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 2])
    total = helper.make_tensor_value_info("total", TensorProto.FLOAT, ["batch", 1])
    doubled = helper.make_tensor_value_info("doubled", TensorProto.INT64, ["batch", 2])
    nodes = [
        helper.make_node("ReduceSum", ["a", "axes"], ["total"], keepdims=1),
        helper.make_node("Mul", ["ids", "two"], ["doubled"]),
    ]
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
             helper.make_tensor("two", TensorProto.INT64, [], [2])]
    return save(helper.make_graph(nodes, "multi_io", [a, ids], [total, doubled], inits), path)


def gather(path: Path) -> Path:
    """index: int64[1] → value: float32[1], a Gather from a 3-element table: an index out of
    range fails inside session.run (the runtime-failure model; zeros, the warm-up, succeed)."""
    index = helper.make_tensor_value_info("index", TensorProto.INT64, [1])
    value = helper.make_tensor_value_info("value", TensorProto.FLOAT, [1])
    table = helper.make_tensor("table", TensorProto.FLOAT, [3], [10.0, 20.0, 30.0])
    node = helper.make_node("Gather", ["table", "index"], ["value"])
    return save(helper.make_graph([node], "gather", [index], [value], [table]), path)


ONNX_TYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "int8": TensorProto.INT8, "int16": TensorProto.INT16, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "bool": TensorProto.BOOL,
}


def identity(path: Path, dtype: str, rank: int) -> Path:
    """x: dtype[d0, …] (all dims dynamic) → y: the same tensor."""
    dims = [f"d{i}" for i in range(rank)]
    x = helper.make_tensor_value_info("x", ONNX_TYPES[dtype], dims)
    y = helper.make_tensor_value_info("y", ONNX_TYPES[dtype], dims)
    node = helper.make_node("Identity", ["x"], ["y"])
    return save(helper.make_graph([node], f"identity_{dtype}", [x], [y]), path)


def scalar_io(path: Path) -> Path:
    """x: float32[?], sr: int64[] (a scalar, like an audio model's sample rate) →
    y: float32[unk__5] = x * sr, sr_out: int64[] = sr, copy: float32[floor(n/32)] = x:
    rank-0 tensors both ways, and output dims as exporters write them (expressions, generated
    names) that nothing may validate (``copy`` really has x's length)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?"])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["unk__5"])
    sr_out = helper.make_tensor_value_info("sr_out", TensorProto.INT64, [])
    copy = helper.make_tensor_value_info("copy", TensorProto.FLOAT, ["floor(n/32)"])
    nodes = [
        helper.make_node("Cast", ["sr"], ["sr_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "sr_float"], ["y"]),
        helper.make_node("Identity", ["sr"], ["sr_out"]),
        helper.make_node("Identity", ["x"], ["copy"]),
    ]
    graph = helper.make_graph(nodes, "scalar_io", [x, sr], [y, sr_out, copy])
    return save(graph, path)


def strings(path: Path) -> Path:
    """text: string[n] → same: string[n] (Identity): string tensors both ways."""
    x = helper.make_tensor_value_info("text", TensorProto.STRING, ["n"])
    y = helper.make_tensor_value_info("same", TensorProto.STRING, ["n"])
    graph = helper.make_graph([helper.make_node("Identity", ["text"], ["same"])], "strings",
                              [x], [y])
    return save(graph, path)


def zipmap(path: Path, labels: list[int] | list[str] | None = None) -> Path:
    """probs: float32[n, 3] → zipped: seq(map(int64|string, float)) (ai.onnx.ml ZipMap, as
    skl2onnx ends a classifier), plus probs_out: the same probabilities as a tensor."""
    labels = labels or [0, 1, 2]
    strings_ = isinstance(labels[0], str)
    key = TensorProto.STRING if strings_ else TensorProto.INT64
    x = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", 3])
    zipped = helper.make_value_info("zipped", helper.make_sequence_type_proto(
        helper.make_map_type_proto(key, helper.make_tensor_type_proto(TensorProto.FLOAT, []))))
    out = helper.make_tensor_value_info("probs_out", TensorProto.FLOAT, ["n", 3])
    attribute = {"classlabels_strings" if strings_ else "classlabels_int64s": labels}
    nodes = [helper.make_node("ZipMap", ["probs"], ["zipped"], domain="ai.onnx.ml", **attribute),
             helper.make_node("Identity", ["probs"], ["probs_out"])]
    return save(helper.make_graph(nodes, "zipmap", [x], [zipped, out]), path,
                domains={"ai.onnx.ml": 3})
