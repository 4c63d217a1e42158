"""``--smooth ALPHA`` (SmoothQuant before quantizing): exact in fp32, 1/s folded where it is free
(a layer norm's gamma and beta, an Attention's V projection) and a counted ``Mul`` elsewhere,
the manifest's report and node counts what the file holds, and a model whose outlier channels
fail plain dynamic INT8 passes the gate smoothed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from handler.manifest import Manifest
from onnx_lambda.build_model import quantize, smooth
from onnx_lambda.build_model.errors import QuantizeError
from onnx_lambda.build_model.gate import Accuracy, Thresholds
from onnx_lambda.cli import main
from onnx_lambda.tiny_models import save

WIDTH, OUTLIERS = 64, (3, 17, 40)


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(array.astype(np.float32), name)


def outlier_block(path: Path) -> Path:
    """x[batch, 64] → LayerNorm (3 outlier channels, gamma ×40, their weight rows /40, as in
    trained transformers) → "up" → Relu → "down" → + residual → LayerNorm → "head" → y[batch, 16].
    The first norm's output also feeds the residual (its 1/s needs a Mul), the second's feeds
    "head" only (folded into its gamma and beta), Relu's output "down" only (a Mul)."""
    rng = np.random.default_rng(7)
    gamma = np.ones(WIDTH)
    gamma[list(OUTLIERS)] = 40.0
    up = rng.standard_normal((WIDTH, 128)) / np.sqrt(WIDTH)
    up[list(OUTLIERS)] /= 40.0
    head = rng.standard_normal((WIDTH, 16)) / np.sqrt(WIDTH)
    head[list(OUTLIERS)] /= 40.0
    inits = [_init("g1", gamma), _init("b1", rng.standard_normal(WIDTH) * 0.1), _init("Wup", up),
             _init("Wdown", rng.standard_normal((128, WIDTH)) / np.sqrt(128)),
             _init("g2", gamma), _init("b2", rng.standard_normal(WIDTH) * 0.1),
             _init("Whead", head)]
    nodes = [helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["n1"], name="norm1"),
             helper.make_node("MatMul", ["n1", "Wup"], ["u"], name="up"),
             helper.make_node("Relu", ["u"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "Wdown"], ["d"], name="down"),
             helper.make_node("Add", ["d", "n1"], ["s"], name="residual"),
             helper.make_node("LayerNormalization", ["s", "g2", "b2"], ["n2"], name="norm2"),
             helper.make_node("MatMul", ["n2", "Whead"], ["y"], name="head")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    return save(helper.make_graph(nodes, "outliers", [x], [y], inits), path)


def attention_block(path: Path, hidden: int = 16, heads: int = 2) -> Path:
    """x[batch, seq, 16] → com.microsoft Attention (packed QKV) → "out" MatMul → y."""
    rng = np.random.default_rng(2)
    inits = [_init("qkv", rng.standard_normal((hidden, 3 * hidden)) / 4),
             _init("qkv_bias", rng.standard_normal(3 * hidden) / 4),
             _init("Wout", rng.standard_normal((hidden, hidden)) / 4)]
    nodes = [helper.make_node("Attention", ["x", "qkv", "qkv_bias"], ["a"], name="attention",
                              domain="com.microsoft", num_heads=heads),
             helper.make_node("MatMul", ["a", "Wout"], ["y"], name="out")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])
    return save(helper.make_graph(nodes, "attention", [x], [y], inits), path,
                domains={"com.microsoft": 1})


def run(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def feeds(shape: tuple[int, ...], seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)]


def test_smoothing_is_exact_in_fp32_and_folds_where_it_is_free(tmp_path: Path) -> None:
    source = outlier_block(tmp_path / "block.onnx")
    target = tmp_path / "smoothed.onnx"
    calibration = feeds((8, WIDTH))
    report = smooth.smooth(source, target, ["up", "down", "head"], 0.5, calibration)
    assert report.to_dict() == {"alpha": 0.5, "nodes": 3, "mul_nodes": 2,
                                "folded": {"LayerNormalization": 1}, "calibration_samples": 4}
    graph = onnx.load(str(target)).graph
    muls = [n for n in graph.node if n.op_type == "Mul"]
    assert sorted(n.name for n in muls) == ["down.smooth", "up.smooth"]
    readers = {n.name: n.input[0] for n in graph.node}
    assert readers["up"] == "n1.smooth" and readers["down"] == "r.smooth"
    assert readers["head"] == "n2" and readers["residual"] == "d"  # the residual reads n1 itself
    # The outlier channels' weight rows grew (s > 1 there): range moved out of the activation.
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    original = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(source)).graph.initializer}
    grown = np.abs(weights["Wup"]).max(1) / np.abs(original["Wup"]).max(1)
    assert grown[list(OUTLIERS)].min() > 2 * np.delete(grown, OUTLIERS).max()
    x = np.random.default_rng(9).standard_normal((5, WIDTH)).astype(np.float32)
    np.testing.assert_allclose(run(target, x), run(source, x), rtol=1e-4, atol=1e-4)


def test_an_attention_takes_the_following_products_1_over_s_into_its_v_projection(
        tmp_path: Path) -> None:
    source = attention_block(tmp_path / "attention.onnx")
    target = tmp_path / "smoothed.onnx"
    report = smooth.smooth(source, target, ["attention", "out"], 0.5, feeds((1, 6, 16)))
    # The Attention's own input is a graph input (a Mul); its output feeds "out" only (folded).
    assert (report.nodes, report.mul_nodes, report.folded) == (2, 1, {"Attention": 1})
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(target)).graph.initializer}
    original = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(source)).graph.initializer}
    q_k_rows = (weights["qkv"][:, :32] / original["qkv"][:, :32])  # rows scaled by s only
    np.testing.assert_allclose(q_k_rows, q_k_rows[:, :1].repeat(32, 1), rtol=1e-5)
    np.testing.assert_allclose(weights["qkv_bias"][:32], original["qkv_bias"][:32])
    assert not np.allclose(weights["qkv_bias"][32:], original["qkv_bias"][32:])
    x = np.random.default_rng(4).standard_normal((2, 5, 16)).astype(np.float32)
    np.testing.assert_allclose(run(target, x), run(source, x), rtol=1e-4, atol=1e-4)


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


# The gate's floor between what plain and smoothed dynamic INT8 reach on outlier_block.
GATE = ("--quantize", "int8-dynamic", "--max-fp32-nodes", "0", "--min-cosine", "0.999",
        "--min-cosine-floor", "0.998")


@pytest.mark.timeout(120)
def test_outlier_channels_fail_plain_int8_and_pass_smoothed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = outlier_block(tmp_path / "block.onnx")
    assert build(source, tmp_path / "plain", *GATE) == 5
    assert "int8-dynamic fails the accuracy gate" in capsys.readouterr().err
    out = tmp_path / "smoothed"
    assert build(source, out, *GATE, "--smooth", "0.5") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["nodes"] == {"quantized": {"MatMul": 3}, "fp32": {}}
    assert quant["smoothing"] == {"alpha": 0.5, "nodes": 3, "mul_nodes": 2,
                                  "folded": {"LayerNormalization": 1},
                                  "calibration_samples": quant["smoothing"]["calibration_samples"]}
    nodes = onnx.load(str(out / "model.onnx")).graph.node
    counted: Counter[str] = Counter()
    for by_op in quant["graph"].values():
        counted.update(by_op)
    assert counted == Counter(n.op_type for n in nodes)
    # The smoothing Muls are in the file, fp32, beside the quantizer's own scale Muls.
    inserted = [n for n in nodes if n.op_type == "Mul" and n.name.endswith(smooth.MUL_SUFFIX)]
    assert len(inserted) == quant["smoothing"]["mul_nodes"]


def test_the_smoothing_alpha_names_the_try_and_fp16_ignores_it() -> None:
    settings = quantize.QuantizeSettings(method="int8-mixed", smooth=0.7)
    assert settings.name == "int8-mixed (smooth 0.7)"
    assert settings.switched("fp16").smoothing == 0 and settings.switched("fp16").name == "fp16"


def test_tuning_smooths_once_and_ranks_on_the_smoothed_graph(tmp_path: Path) -> None:
    """Every attempt (the ranking's too) quantizes the smoothed graph: its Muls are in each."""
    source = outlier_block(tmp_path / "block.onnx")
    seen: list[int] = []

    def evaluate(path: Path) -> Accuracy:
        nodes = onnx.load(str(path)).graph.node
        seen.append(sum(n.name.endswith(smooth.MUL_SUFFIX) for n in nodes))
        fine = "head" in {n.name for n in nodes}  # passes with "head" left fp32 only
        return Accuracy(1.0 if fine else 0.5, 1.0 if fine else 0.5, 0.0, None, 1)

    settings = quantize.QuantizeSettings(method="int8-dynamic", smooth=0.5)
    result = quantize.tune(source, tmp_path / "q.onnx", settings, evaluate, Thresholds(),
                           calibration=feeds((8, WIDTH)))
    assert result.excluded == ("head",) and result.smoothing is not None
    assert set(seen) == {2} and len(seen) == 1 + 3 + 1  # full, ranking of 3, one left out


@pytest.mark.parametrize(("args", "message"), [
    (("--quantize", "int8-dynamic", "--smooth", "1.5"), "between 0 and 1"),
    (("--quantize", "int8-dynamic", "--smooth", "x"), "invalid _alpha value"),
    (("--quantize", "fp16", "--smooth", "0.5"), "--smooth applies to the integer methods"),
])
def test_bad_smooth_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     args: tuple[str, ...], message: str) -> None:
    source = outlier_block(tmp_path / "block.onnx")
    try:
        assert build(source, tmp_path / "out", *args) == 2
    except SystemExit as exc:  # argparse's own refusals
        assert exc.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_smoothing_calibrates_on_a_calibration_file_too(tmp_path: Path) -> None:
    source = outlier_block(tmp_path / "block.onnx")
    np.savez(tmp_path / "more.npz", x=feeds((16, WIDTH), seed=3)[0]["x"])
    counts = []
    for name, extra in (("own", ()), ("file", ("--calibration", str(tmp_path / "more.npz")))):
        assert build(source, tmp_path / name, *GATE, "--smooth", "0.5", *extra) == 0
        counts.append(Manifest.load(tmp_path / name).metadata["quantization"]["smoothing"][
            "calibration_samples"])
    assert counts[1] == counts[0] + 1


def test_a_calibration_run_onnxruntime_refuses_is_a_clear_error(tmp_path: Path) -> None:
    source = outlier_block(tmp_path / "block.onnx")
    settings = quantize.QuantizeSettings(method="int8-dynamic", smooth=0.5)
    with pytest.raises(QuantizeError, match="--smooth cannot smooth this model"):
        quantize.tune(source, tmp_path / "q.onnx", settings, lambda _: Accuracy(1, 1, 0, None, 1),
                      Thresholds(), calibration=[{"x": np.ones((2, 7), np.float32)}])
