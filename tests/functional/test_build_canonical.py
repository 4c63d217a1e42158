"""The graph rewrites made before the transformer fusions keep the model's outputs, and the
fusions left out stay out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from onnx_lambda.build_model import canonical, optimize
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


def residual_block(path: Path) -> Path:
    """x[1, s, 16] → MatMul + bias → + x → LayerNormalization: SkipLayerNormalization's pattern."""
    rng = np.random.default_rng(5)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "s", 16])
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("W", (16, 16)), ("b", (16,)), ("g", (16,)), ("beta", (16,)))]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"], name="dense"),
             helper.make_node("Add", ["m", "b"], ["mb"], name="bias"),
             helper.make_node("Add", ["mb", "x"], ["sum"], name="residual"),
             helper.make_node("LayerNormalization", ["sum", "g", "beta"], ["y"], name="norm",
                              axis=-1, epsilon=1e-12)]
    model = helper.make_model(helper.make_graph(nodes, "residual", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_skip_layer_normalization_is_left_unfused_by_the_fusions_and_offline(
        tmp_path: Path) -> None:
    """Slower on the CPU than the Add + LayerNormalization it replaces (optimize.UNFUSED)."""
    source = residual_block(tmp_path / "residual.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "online.onnx")
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    assert "SkipLayerNormalization" in ops(tmp_path / "online.onnx")  # what onnxruntime does
    optimize.fuse_transformer(source, tmp_path / "fused.onnx", 1, 16)
    optimize.optimize_offline(tmp_path / "fused.onnx", tmp_path / "offline.onnx", "extended")
    for name in ("fused.onnx", "offline.onnx"):
        assert "SkipLayerNormalization" not in ops(tmp_path / name)
        assert ops(tmp_path / name) >= {"LayerNormalization", "Add"}
    x = {"x": np.random.default_rng(1).standard_normal((1, 5, 16)).astype(np.float32)}
    np.testing.assert_allclose(run(onnx.load(str(tmp_path / "offline.onnx")), x),
                               run(onnx.load(str(source)), x), rtol=1e-4, atol=1e-5)


def ops(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def test_offline_model_keeps_its_large_initializers_mapped_beside_it(tmp_path: Path) -> None:
    """The optimized ``.onnx`` file holds the graph; its MiB-sized weights are in
    ``model.opt.onnx.data``, which the runtime's session (C API, from a path) maps into memory
    rather than reading (an embedding table: weights a kernel prepacks are copied anyway); the
    outputs are the source's. A model of small tensors gets no file."""
    from handler.ort.session import Session
    from handler.ort.tensor import from_values
    from tests.support import build_models

    source, table = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=256, rows=4096)
    target = tmp_path / "model.opt.onnx"
    optimize.optimize_offline(source, target, "extended")
    data = optimize.external_data(target)
    assert data.stat().st_size >= table.nbytes and target.stat().st_size < 65536
    session = Session(str(target), intra_op_threads=1, optimization="disable")
    with open("/proc/self/maps", encoding="ascii", errors="replace") as fh:
        assert str(data) in fh.read()
    ids = [[5, 4095, 0], [7, 7, 1]]
    feeds = {s.name: from_values("int64", (2, 3), [v for row in ids for v in row])
             for s in session.inputs}
    got = np.array(session.run(feeds)["last_hidden_state"].tolist(), dtype=np.float32)
    np.testing.assert_array_equal(got, table[np.array(ids)])
    session.close()
    small = build_models.mlp(tmp_path / "mlp.onnx")
    optimize.optimize_offline(small, tmp_path / "mlp.opt.onnx", "extended")
    assert not optimize.external_data(tmp_path / "mlp.opt.onnx").exists()
