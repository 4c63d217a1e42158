"""The graph rewrites made before the transformer fusions keep the model's outputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from onnx_lambda.build_model import canonical
from tests.support.models import OPSET


def scores_model() -> onnx.ModelProto:
    """softmax(q @ k * 0.125 + (1 - unsqueeze(mask, [1, 2])) * -1e4): attention's score path."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, ["b", 1, "s", 4])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT, ["b", 1, 4, "s"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"])
    out = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["b", 1, "s", "s"])
    inits = [numpy_helper.from_array(np.array(0.125, dtype=np.float32), "scale"),
             numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "axes"),
             numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
             numpy_helper.from_array(np.array(-1e4, dtype=np.float32), "low")]
    nodes = [helper.make_node("MatMul", ["q", "k"], ["qk"]),
             helper.make_node("Mul", ["qk", "scale"], ["scaled"], name="scale_mul"),
             helper.make_node("Unsqueeze", ["attention_mask", "axes"], ["m4"], name="mask_unsq"),
             helper.make_node("Cast", ["m4"], ["m4f"], to=TensorProto.FLOAT),
             helper.make_node("Sub", ["one", "m4f"], ["inverted"]),
             helper.make_node("Mul", ["inverted", "low"], ["additive"]),
             helper.make_node("Add", ["scaled", "additive"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    model = helper.make_model(helper.make_graph(nodes, "scores", [q, k, mask], [out], inits),
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def test_rewrites_keep_the_outputs() -> None:
    rng = np.random.default_rng(0)
    feeds = {"q": rng.standard_normal((2, 1, 3, 4)).astype(np.float32),
             "k": rng.standard_normal((2, 1, 4, 3)).astype(np.float32),
             "attention_mask": np.array([[1, 1, 0], [1, 1, 1]], dtype=np.int64)}
    model = scores_model()
    before = run(model, feeds)
    assert canonical.for_attention_fusion(model) == 2
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Div") == 1 and ops.count("Unsqueeze") == 2
    assert ops.count("Mul") == 1  # only the mask's Mul is left: the fusion can find it
    np.testing.assert_allclose(run(model, feeds), before, rtol=1e-6, atol=1e-7)
    assert canonical.for_attention_fusion(model) == 0  # idempotent
