"""``--quantize int4 --algo awq``: activation-aware scales searched per input tensor, then
onnxruntime's round-to-nearest blocks. The search's block quantizer is onnxruntime's own, bit
for bit; on a model whose salient input channels meet small weights (as in trained
transformers) AWQ keeps what plain int4 RTN loses, on inputs it never calibrated on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from handler.manifest import Manifest
from onnx_lambda.build_model import awq, quant_writers
from onnx_lambda.cli import main
from tests.functional.test_build_smooth import WIDTH, outlier_block


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize(("depth", "block"), [(64, 32), (80, 32), (256, 128)])
def test_the_search_quantizes_as_onnxruntimes_rtn_blocks(tmp_path: Path, symmetric: bool,
                                                         depth: int, block: int) -> None:
    """``awq.quantize`` is what ``MatMulNBits`` stores (its weights read back with fp32
    compute), a depth that is not a whole number of blocks and all-positive, all-negative and
    zero-led columns included."""
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((depth, 24)).astype(np.float32)
    weights[:, 0], weights[:, 1] = np.abs(weights[:, 0]), -np.abs(weights[:, 1])
    weights[:5, 2] = 0.0
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="only")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 24])],
        [numpy_helper.from_array(weights, "w")])
    source, target = tmp_path / "one.onnx", tmp_path / "q.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=9), str(source))
    quant_writers.nbits(source, target, ("MatMul",), "rtn", block, symmetric, (), [])
    model = onnx.load(str(target))
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "accuracy_level":
            attribute.i = 0  # fp32 compute: the product with the identity is the weights
    stored = ort.InferenceSession(model.SerializeToString(), providers=[
        "CPUExecutionProvider"]).run(None, {"x": np.eye(depth, dtype=np.float32)})[0]
    np.testing.assert_allclose(awq.quantize(weights, block, symmetric), stored, rtol=0,
                               atol=1e-6)


@pytest.mark.parametrize("symmetric", [False, True])
def test_clipping_shrinks_a_range_an_outlier_weight_stretches(symmetric: bool) -> None:
    """A large weight whose input is nearly silent stretches its block's range for nothing:
    the clipping search shrinks that range (clipping only toward zero), and the block's other
    weights round finer, lowering the output error on the activation rows."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((64, 8))
    weight[5] = 12.0
    x = rng.standard_normal((256, 64))
    x[:, 5] *= 0.01

    def error(w: np.ndarray) -> float:
        return float(np.square(x @ (awq.quantize(w, 32, symmetric) - weight)).sum())

    clipped, share = awq.clip_ranges(weight, x, 32, symmetric)
    assert np.all(np.abs(clipped) <= np.abs(weight) + 1e-12)
    assert np.all(np.sign(clipped) * np.sign(weight) >= 0)
    assert 0 < share <= 1 and error(clipped) < 0.8 * error(weight)
    same, none = awq.clip_ranges(weight, np.zeros_like(x), 32, symmetric)
    assert none == 0 and np.array_equal(same, weight)  # nothing to gain: nothing clipped


def _cosines(path: Path, reference: Path, x: np.ndarray) -> np.ndarray:
    def run(model: Path) -> np.ndarray:
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        return session.run(None, {"x": x})[0]

    got, want = run(path), run(reference)
    return (got * want).sum(axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)


def test_awq_keeps_the_salient_channels_that_plain_int4_loses(tmp_path: Path) -> None:
    """Three outlier channels with their weight rows /40: RTN's blocks round those rows away;
    AWQ's search scales them up (X / s folded into the layer norm that feeds only "head", a Mul
    before "up" and "down"), and holds on held-out inputs."""
    source = outlier_block(tmp_path / "outliers.onnx")
    loose = ("--min-cosine", "-1", "--min-cosine-floor", "-1", "--max-fp32-nodes", "0")
    for algo in ("rtn", "awq"):
        assert main(["build-model", str(source), "-o", str(tmp_path / algo), "--quantize",
                     "int4", "--algo", algo, *loose]) == 0
    held_out = np.random.default_rng(123).standard_normal((64, WIDTH)).astype(np.float32)
    rtn, scaled = (_cosines(tmp_path / a / "model.onnx", source, held_out) for a in ("rtn",
                                                                                     "awq"))
    assert rtn.mean() < 0.5  # plain int4 loses the salient channels' contribution
    assert scaled.mean() > 0.99 and scaled.min() > 0.98
    quantization = Manifest.load(tmp_path / "awq").metadata["quantization"]
    assert quantization["method"] == "int4 awq" and quantization["algo"] == "awq"
    report = quantization["awq"]
    assert report["nodes"] == 3 and report["mul_nodes"] == 2
    assert report["folded"] == {"LayerNormalization": 1}
    assert len(report["alphas"]) == 3 and all(a in awq.GRID for a in report["alphas"])
    assert 0 < report["error_ratio"] < 0.5  # far below RTN's error on the calibration rows
    assert 0 <= report["clipped"] <= 1
    assert report["calibration_samples"] == quantization["calibration_samples"] > 0
    ops = Counter(n.op_type for n in onnx.load(str(tmp_path / "awq" / "model.onnx")).graph.node)
    assert ops["MatMulNBits"] == 3 and ops["MatMul"] == 0 and ops["Mul"] == 2
    assert "awq" not in Manifest.load(tmp_path / "rtn").metadata["quantization"]


def test_awq_searches_its_own_scales_instead_of_smooth(tmp_path: Path) -> None:
    """``--smooth`` with ``--algo awq``: AWQ's searched scales replace SmoothQuant's fixed
    alpha (no smoothing report, the plain label); ``--calibration`` is taken."""
    source = outlier_block(tmp_path / "outliers.onnx")
    extra = tmp_path / "more.npz"
    np.savez(extra, x=np.random.default_rng(5).standard_normal((4, WIDTH)).astype(np.float32))
    assert main(["build-model", str(source), "-o", str(tmp_path / "q"), "--quantize", "int4",
                 "--algo", "awq", "--smooth", "0.5", "--calibration", str(extra)]) == 0
    quantization = Manifest.load(tmp_path / "q").metadata["quantization"]
    assert "smoothing" not in quantization and quantization["method"] == "int4 awq"
    assert quantization["awq"]["calibration_samples"] == quantization["calibration_samples"]


def test_awq_quantizes_embedding_tables_as_rtn_does(tmp_path: Path) -> None:
    """Only the MatMuls are rescaled; the RTN pass after it takes ``Gather`` tables too, so an
    awq artifact is as small as an rtn one."""
    from tests.support import build_models

    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=64)
    assert main(["build-model", str(source), "-o", str(tmp_path / "q"), "--quantize", "int4",
                 "--algo", "awq", "--quantize-ops", "MatMul,Gather", "--min-cosine", "0.9",
                 "--min-cosine-floor", "0.8"]) == 0
    quantization = Manifest.load(tmp_path / "q").metadata["quantization"]
    assert quantization["nodes"]["quantized"] == {"Gather": 1}
    assert quantization["awq"]["nodes"] == 0  # nothing to rescale: no MatMul
    ops = Counter(n.op_type for n in onnx.load(str(tmp_path / "q" / "model.onnx")).graph.node)
    assert ops["GatherBlockQuantized"] == 1 and ops["Gather"] == 0
