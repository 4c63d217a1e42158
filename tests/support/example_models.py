"""Generated models whose inputs are constrained the way real third-party models are: a dim that
must be a multiple of 32, a minimum sample count, an enumerated scalar. onnxruntime itself fails
inside the graph on anything else, as it does on the real ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_lambda.tiny_models import save


def _save(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto], path: Path) -> Path:
    return save(helper.make_graph(nodes, path.stem, inputs, outputs, inits), path)


def _const(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def rows_of(path: Path, width: int = 32) -> Path:
    """x: float32[batch, n] → rows: float32[?, width], a Reshape to [-1, width]: n must be a
    multiple of ``width``."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])
    y = helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, width])
    node = helper.make_node("Reshape", ["x", "shape"], ["rows"], name="to_rows")
    return _save([node], [x], [y], [_const("shape", [-1, width])], path)


def long_conv(path: Path, kernel: int = 512) -> Path:
    """audio: float32[batch, 1, samples] → Conv with a ``kernel``-tap filter and no padding:
    fewer samples than taps fail."""
    x = helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 1, "samples"])
    y = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 1, None])
    taps = numpy_helper.from_array(np.full((1, 1, kernel), 1.0 / kernel, np.float32), "taps")
    node = helper.make_node("Conv", ["audio", "taps"], ["features"], name="filter")
    return _save([node], [x], [y], [taps], path)


def _rate_gate(rate: str, valid: tuple[int, ...], value: str,
               out: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes and initializers that reshape ``value`` to ``out`` = [-1, 1] when the int64 scalar
    ``rate`` is one of ``valid``, and to [-1, 0] (an error, with ``allowzero``) otherwise: the
    check lives in the graph, as a real model's does."""
    nodes = [helper.make_node("Equal", [rate, f"rate{i}"], [f"is{i}"]) for i in range(len(valid))]
    ok = "is0"
    for i in range(1, len(valid)):
        nodes.append(helper.make_node("Or", [ok, f"is{i}"], [f"any{i}"]))
        ok = f"any{i}"
    nodes += [helper.make_node("Cast", [ok], ["width0"], to=TensorProto.INT64),
              helper.make_node("Reshape", ["width0", "one"], ["width"]),
              helper.make_node("Concat", ["minus_one", "width"], ["target"], axis=0),
              helper.make_node("Reshape", [value, "target"], [out], name="by_rate", allowzero=1)]
    inits = [_const("one", [1]), _const("minus_one", [-1]),
             *(numpy_helper.from_array(np.array(v, np.int64), f"rate{i}")
               for i, v in enumerate(valid))]
    return nodes, inits


def rate_gated(path: Path, valid: tuple[int, ...] = (8000, 16000), name: str = "sr") -> Path:
    """x: float32[batch, n], ``name``: int64 scalar → y: float32[?, 1]. The scalar must be one of
    ``valid`` (``_rate_gate``)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])
    sr = helper.make_tensor_value_info(name, TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])
    nodes, inits = _rate_gate(name, valid, "x", "y")
    return _save(nodes, [x, sr], [y], inits, path)


def dims_zoo(path: Path) -> Path:
    """Named, anonymous and static dims over two inputs: a: float32[batch, seq, 8] and
    b: int64[batch, '?', 'unk__3', ''] (the empty name too); outputs tie nothing new."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", "seq", 8])
    b = helper.make_tensor_value_info("b", TensorProto.INT64, ["batch", "?", "unk__3", None])
    total = helper.make_tensor_value_info("total", TensorProto.FLOAT, ["batch", "seq", 4])
    count = helper.make_tensor_value_info("count", TensorProto.INT64, [])
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["a", "w"], ["total"], name="project"),
             helper.make_node("Size", ["b"], ["count"])]
    return _save(nodes, [a, b], [total, count], [w], path)


def empty_output(path: Path) -> Path:
    """x: float32[batch, 4] → nothing: float32[batch, 0] (x @ W sliced to no columns): an output
    the accuracy gate has nothing to compare in, beside a quantizable MatMul."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("nothing", TensorProto.FLOAT, ["batch", 0])
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["projected"], name="project"),
             helper.make_node("Slice", ["projected", "start", "stop", "axis"], ["nothing"])]
    inits = [w, _const("start", [0]), _const("stop", [0]), _const("axis", [1])]
    return _save(nodes, [x], [y], inits, path)


def vad_like(path: Path, kernel: int = 512) -> Path:
    """Like a voice-activity model: x: float32[?, ?] (batch, samples), state: float32[2, ?, 8]
    (its anonymous axis must equal x's batch), sr: int64 scalar that must be 16000 or 8000 →
    prob: float32[?, 1], next_state: float32[3, ?, 8]. Needs ≥ ``kernel`` samples (a Conv)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None])
    state = helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, 8])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    prob = helper.make_tensor_value_info("prob", TensorProto.FLOAT, [None, 1])
    next_state = helper.make_tensor_value_info("next_state", TensorProto.FLOAT, [3, None, 8])
    taps = numpy_helper.from_array(np.full((1, 1, kernel), 1.0 / kernel, np.float32), "taps")
    gate, gate_inits = _rate_gate("sr", (16000, 8000), "energy2", "prob")
    nodes = [helper.make_node("Unsqueeze", ["x", "axis1"], ["x3"]),
             helper.make_node("Conv", ["x3", "taps"], ["filtered"], name="filter"),
             helper.make_node("ReduceMean", ["filtered"], ["energy"], axes=[1, 2], keepdims=0),
             helper.make_node("Unsqueeze", ["energy", "axis1"], ["energy2"]),  # [b, 1]
             *gate,  # prob
             helper.make_node("Expand", ["energy2", "row8"], ["wide"]),  # [b, 8]
             helper.make_node("Unsqueeze", ["wide", "axis0"], ["wide3"]),  # [1, b, 8]
             helper.make_node("Concat", ["wide3", "state"], ["next_state"], axis=0,
                              name="stack_state")]
    inits = [taps, _const("axis0", [0]), _const("axis1", [1]), _const("row8", [1, 8]),
             *gate_inits]
    return _save(nodes, [x, state, sr], [prob, next_state], inits, path)
