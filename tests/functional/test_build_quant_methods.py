"""The quantization menu (``--quantize METHOD``): each method builds a tiny model under the gate,
the manifest's node counts are what the file really holds, the gate refuses a method that loses
too much, and int4 shrinks a MatMul-heavy model."""

from __future__ import annotations

import io
import json
import platform
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from handler.manifest import Manifest
from onnx_lambda.build_model import quant_methods, quant_writers, quantize
from onnx_lambda.build_model.gate import Accuracy, Thresholds
from onnx_lambda.cli import main
from tests.support import build_models, models

METHODS = [("int8-dynamic",), ("int8-static",), ("int4", "--algo", "rtn"),
           ("int4", "--algo", "hqq"), ("int4", "--algo", "gptq"), ("int4", "--algo", "mixed"),
           ("int4", "--algo", "minmax"),
           ("fp16",), ("int8-mixed",), ("int8-weights",)]


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def ops(path: Path) -> Counter[str]:
    return Counter(n.op_type for n in onnx.load(str(path)).graph.node)


def conv_net(path: Path, opset: int = 17, constants: bool = False) -> Path:
    """x: float32[batch, 3, 16, 16] → Conv 3→16 (+ bias) → Relu → Conv 16→8 → y;
    ``constants``: weights and bias as ``Constant`` nodes, as paddle2onnx writes them."""
    rng = np.random.default_rng(3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 16, 16])
    inits = [onnx.numpy_helper.from_array((rng.standard_normal(shape) / 4).astype(np.float32),
                                          name) for name, shape in
             (("K1", (16, 3, 3, 3)), ("B1", (16,)), ("K2", (8, 16, 3, 3)))]
    nodes = [helper.make_node("Conv", ["x", "K1", "B1"], ["c1"], name="conv1",
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "K2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    if constants:
        nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in inits] + nodes
        inits = []
    model = helper.make_model(helper.make_graph(nodes, "conv", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", METHODS, ids=lambda m: " ".join(m))
def test_each_method_builds_and_the_manifest_counts_what_the_file_holds(
        tmp_path: Path, method: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", features=128, hidden=256, classes=10)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", *method, "--min-cosine", "0.98",
                 "--min-cosine-floor", "0.97") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["type"] == ("dynamic-int8" if method[0] == "int8-dynamic" else method[0])
    assert quant["method"] == " ".join(m for m in method if m != "--algo")
    assert quant["nodes"] == {"quantized": {"MatMul": 2}, "fp32": {}}
    assert quant["tuned_on"]["machine"] == platform.machine()
    # The whole-graph counts are the portable file's real op counts, precision by precision.
    held = ops(out / "model.onnx")
    counted: Counter[str] = Counter()
    for by_op in quant["graph"].values():
        counted.update(by_op)
    assert counted == held
    if method[-1] in ("hqq", "minmax", "mixed"):  # float zero points: the fraction apart
        offsets = [n.name for n in onnx.load(str(out / "model.onnx")).graph.node
                   if n.op_type == "MatMul"]
        assert offsets and all(n.endswith(quant_writers.ZERO_OFFSET) for n in offsets)
    if method[-1] == "mixed":  # the last MatMul (a decoder's vocabulary projection) in 8 bits
        assert quant["graph"]["int4"]["MatMulNBits"] == quant["graph"]["int8"]["MatMulNBits"] == 1
    elif method[0] == "int8-weights":
        assert quant["graph"]["int8"] == {"MatMulNBits": 2} and "MatMul" not in held
    elif method[0] == "int4":
        assert quant["graph"]["int4"]["MatMulNBits"] == 2
        assert ("MatMul" in held) is (method[-1] in ("hqq", "minmax"))
        assert quant["algo"] == method[2] and quant["block_size"] == 32
    elif method[0] == "int8-static":
        assert quant["graph"]["int8 (qdq)"]["MatMul"] == 2
        assert quant["calibration_samples"] == 4  # the tuning half of the 8 gate samples
    elif method[0] == "fp16":
        assert quant["graph"]["fp16"]["MatMul"] == 2
    else:
        assert quant["graph"]["int8"]["MatMulInteger"] == 2
    label = quant["method"]
    assert f"quantize ({label}: 2 node(s) quantized, 0 kept fp32)" in capsys.readouterr().err


def test_the_gate_refuses_a_method_that_loses_too_much(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", features=128, hidden=256, classes=10)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "int4", "--block-size", "128",
                 "--min-cosine", "0.99999", "--max-fp32-nodes", "0") == 5
    err = " ".join(capsys.readouterr().err.split())
    assert "int4 rtn fails the accuracy gate (mean cosine" in err
    assert "Try another --quantize method" in err and "Traceback" not in err
    assert not out.exists()


def test_tuning_keeps_the_most_sensitive_node_fp32_for_every_method(tmp_path: Path) -> None:
    """A gate only an fp32 "second" passes: ranking finds it, for GPTQ too (whose own node
    table ignores exclusions)."""
    source = build_models.mlp(tmp_path / "mlp.onnx", features=64, hidden=64, classes=8)
    target = tmp_path / "q.onnx"

    def evaluate(path: Path) -> Accuracy:
        kinds = {n.name: n.op_type for n in onnx.load(str(path)).graph.node}
        fine = kinds.get("second") == "MatMul"
        return Accuracy(1.0 if fine else 0.5, 1.0 if fine else 0.5, 0.0, None, 1)

    for algo in ("rtn", "gptq"):
        settings = quantize.QuantizeSettings(method="int4", algo=algo)
        result = quantize.tune(source, target, settings, evaluate, Thresholds(),
                               calibration=[{"x": np.ones((1, 64), np.float32)}])
        assert result.excluded == ("second",), algo
        assert result.counts == {"quantized": {"MatMul": 1}, "fp32": {"MatMul": 1}}


def test_int8_mixed_gives_the_nodes_tuning_leaves_out_8_bit_blocks(tmp_path: Path) -> None:
    """A gate only a "second" outside int8-dynamic passes: tuning leaves it out, and it becomes
    an 8-bit MatMulNBits (quantized, not fp32)."""
    source = build_models.mlp(tmp_path / "mlp.onnx", features=64, hidden=64, classes=8)
    target = tmp_path / "q.onnx"

    def evaluate(path: Path) -> Accuracy:
        fine = "second_quant" not in {n.name for n in onnx.load(str(path)).graph.node}
        return Accuracy(1.0 if fine else 0.5, 1.0 if fine else 0.5, 0.0, None, 1)

    settings = quantize.QuantizeSettings(method="int8-mixed")
    result = quantize.tune(source, target, settings, evaluate, Thresholds())
    assert result.excluded == ("second",) and result.fp32 == ()
    assert result.counts == {"quantized": {"MatMul": 2}, "fp32": {}}
    blocks = [n for n in onnx.load(str(target)).graph.node if n.op_type == "MatMulNBits"]
    assert [n.name for n in blocks] == ["second_Q8"]
    assert onnx.helper.get_node_attr_value(blocks[0], "bits") == 8
    assert result.graph["int8"]["MatMulNBits"] == 1 and result.graph["int8"]["MatMulInteger"] == 1


def test_int4_shrinks_a_matmul_heavy_model(tmp_path: Path) -> None:
    source = build_models.chain(tmp_path / "chain.onnx", layers=6, width=256)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "int4", "--min-cosine", "0.95",
                 "--min-cosine-floor", "0.9") == 0
    assert (out / "model.onnx").stat().st_size < source.stat().st_size / 5  # 4 bits + scales
    assert Manifest.load(out).metadata["quantization"]["nodes"]["quantized"] == {"MatMul": 6}


def test_static_int8_quantizes_a_conv_net_calibrated_on_a_file_too(tmp_path: Path) -> None:
    source = conv_net(tmp_path / "conv.onnx")
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, x=np.random.default_rng(9).standard_normal((4, 3, 16, 16)).astype(
        np.float32))
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "int8-static", "--quantize-ops", "Conv",
                 "--calibration", str(calibration), "--min-cosine-floor", "0.95") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["nodes"] == {"quantized": {"Conv": 2}, "fp32": {}}
    # the file's batch joins the build's 8 samples; every other one of the 9 calibrates
    assert quant["calibration_samples"] == 5


def test_static_int8_per_channel_lifts_an_opset_12_graph_with_constant_weights(
        tmp_path: Path) -> None:
    """paddle2onnx's shape (ocr-rec): opset 12, weights and biases as Constant nodes. Per-channel
    QDQ writes DequantizeLinear with an ``axis`` (opset 13): it was INVALID_GRAPH."""
    source = conv_net(tmp_path / "conv.onnx", opset=12, constants=True)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "int8-static", "--quantize-ops", "Conv",
                 "--min-cosine-floor", "0.95", "--max-fp32-nodes", "0") == 0
    assert Manifest.load(out).metadata["quantization"]["nodes"] == {"quantized": {"Conv": 2},
                                                                    "fp32": {}}
    portable = onnx.load(str(out / "model.onnx"))
    assert [o.version for o in portable.opset_import if o.domain in ("", "ai.onnx")] == [13]
    dequantized = {n.input[0] for n in portable.graph.node if n.op_type == "DequantizeLinear"}
    assert {"K1_quantized", "B1_quantized", "K2_quantized"} <= dequantized  # the bias too


def test_fp16_keeps_sensitive_ops_in_fp32(tmp_path: Path) -> None:
    source = build_models.probabilities(tmp_path / "probs.onnx")  # MatMul then Softmax
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "fp16", "--min-cosine-floor", "0.97") == 0
    graph = Manifest.load(out).metadata["quantization"]["graph"]
    assert graph["fp16"]["MatMul"] == 1 and graph["fp32"]["Softmax"] == 1


@pytest.mark.parametrize(("args", "code", "message"), [
    (("--quantize", "int8-dynamic", "--calibration", "{npz}"), 2,
     "--calibration applies to --quantize int8-static"),
    (("--quantize", "int8-static", "--calibration", "{bad}"), 2, "not a readable .npz"),
    (("--quantize", "int4", "--block-size", "24"), 2, "a power of two"),
    (("--quantize", "int5"), 2, "invalid choice"),
])
def test_bad_quantize_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       args: tuple[str, ...], code: int, message: str) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    np.savez(tmp_path / "c.npz", x=np.ones((1, 32), np.float32))
    (tmp_path / "bad.npz").write_text("not a zip")
    filled = [a.format(npz=tmp_path / "c.npz", bad=tmp_path / "bad.npz") for a in args]
    try:
        assert build(source, tmp_path / "out", *filled) == code
    except SystemExit as exc:  # argparse's own refusals
        assert exc.code == code
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_int4_on_a_graph_without_matmul_is_nothing_to_quantize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = conv_net(tmp_path / "conv.onnx")
    assert build(source, tmp_path / "out", "--quantize", "int4", "--quantize-ops", "Conv") == 8
    err = " ".join(capsys.readouterr().err.split())
    assert "nothing to quantize with int4 rtn" in err and "int4 rtn quantizes MatMul, Gather" in err


def test_no_quantize_and_quantize_none_build_fp32(tmp_path: Path) -> None:
    source = models.linear(tmp_path / "linear.onnx")
    for flag in (("--no-quantize",), ("--quantize", "none")):
        out = tmp_path / flag[-1].strip("-")
        assert build(source, out, *flag) == 0
        assert "quantization" not in Manifest.load(out).metadata


def auto_tries(out: Path) -> list[dict]:
    return Manifest.load(out).metadata["quantization"]["auto"]["tries"]


def most_accurate_of_the_fastest(tries: list[dict]) -> dict:
    """The latency objective's pick: of the tries within 3 % of the lowest CPU time (measured
    side by side), the one with the best min cosine, then mean cosine."""
    fastest = min(t["cpu_ms"] for t in tries)
    tied = [t for t in tries if t["cpu_ms"] <= fastest * 1.03]
    return max(tied, key=lambda t: (t["accuracy"]["min_cosine"], t["accuracy"]["mean_cosine"],
                                    -t["cpu_ms"]))


@pytest.mark.parametrize(("fp16_cpu_ms", "chosen"), [(1.02, "fp16"), (1.05, "int8-dynamic")])
def test_latency_ties_go_to_the_more_accurate_try(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fp16_cpu_ms: float,
        chosen: str) -> None:
    """CPU times within 3 % are one figure on a shared VM: the more accurate try wins them (a
    rebuild keeps its pick); beyond that, the faster one."""
    from onnx_lambda.build_model import measure, quant_auto
    from onnx_lambda.build_model.quantize import QuantizeSettings

    source = build_models.mlp(tmp_path / "mlp.onnx", features=64, hidden=64, classes=8)
    candidates = [QuantizeSettings(method="int8-dynamic"), QuantizeSettings(method="fp16")]
    monkeypatch.setattr(measure, "interleaved",
                        lambda models, feeds: [(1.0, 1.0), (1.0, fp16_cpu_ms)])

    def evaluate(path: Path) -> Accuracy:
        half = any(t.data_type == TensorProto.FLOAT16
                   for t in onnx.load(str(path)).graph.initializer)
        cosine = 0.9995 if half else 0.995  # fp16 the more accurate
        return Accuracy(cosine, cosine, 0.0, None, 1)

    feeds = {"x": np.zeros((1, 64), np.float32)}
    best = quant_auto.choose(source, tmp_path, candidates, evaluate, Thresholds(), [], feeds,
                             "latency", 60.0, "extended", lambda _: None)
    assert best.settings.method == chosen
    assert [t["method"] for t in best.tries if t["chosen"]] == [chosen]


def test_auto_keeps_the_best_passing_method_for_the_objective(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.chain(tmp_path / "chain.onnx", layers=4, width=128)
    for objective in ("size", "latency"):
        out = tmp_path / objective
        assert build(source, out, "--quantize", "auto", "--objective", objective,
                     "--min-cosine", "0.95", "--min-cosine-floor", "0.9") == 0
        tries = auto_tries(out)
        passed = [t for t in tries if t["outcome"] == "passed"]
        assert all(t["cpu_ms"] > 0 and t["p50_ms"] > 0 for t in passed)
        best = min(passed, key=lambda t: t["size_bytes"]) if objective == "size" else (
            most_accurate_of_the_fastest(passed))
        assert [t["method"] for t in tries if t["chosen"]] == [best["method"]]
        assert Manifest.load(out).metadata["quantization"]["method"] == best["method"]
        assert f"quantize (auto → {best['method']}:" in capsys.readouterr().err
    assert min(auto_tries(tmp_path / "size"), key=lambda t: t.get("size_bytes", 1e12))[
        "method"].startswith("int4")
    # docs/explanation/examples.md's method table is rendered from these manifests, between its
    # markers
    from benchmarks import quant_table

    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{quant_table.BEGIN}\nSTALE ROWS\n{quant_table.END}\nafter\n")
    assert quant_table.main(["--write", str(doc), str(tmp_path / "latency")]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "STALE" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and " ms |" in line]
    assert len(rows) == sum(t["outcome"] == "passed" for t in auto_tries(tmp_path / "latency"))
    assert sum("**" in row for row in rows) == 1


def test_an_examples_own_candidates_are_its_default_and_auto_tries_the_whole_menu(
        tmp_path: Path) -> None:
    """minilm's shape: a spec with its own latency candidates builds ``auto`` over them by
    default, names each variant, and keeps the fastest (ties: the most accurate); ``--quantize
    auto`` tries the whole menu, and a named method only that method."""
    from rich.console import Console

    from onnx_lambda.build_model.builder import build as build_folder
    from onnx_lambda.build_model.quantize import QuantizeSettings
    from onnx_lambda.build_model.spec import BuildOptions, ModelSpec

    weights = QuantizeSettings(method="int8-weights")
    spec = ModelSpec(source=build_models.chain(tmp_path / "chain.onnx", layers=4, width=128),
                     name="own", quantize=weights, auto_tries={"latency": (
                         QuantizeSettings(method="int8-weights", block_size=64),
                         QuantizeSettings(method="int4"))})
    loose = Thresholds(mean_cosine=0.95, min_cosine=0.9)

    def quantization(options: BuildOptions) -> dict:
        report = build_folder(spec, tmp_path / "out", options, Console(file=io.StringIO()))
        return report.manifest.metadata["quantization"]

    own = quantization(BuildOptions(thresholds=loose))["auto"]["tries"]
    assert [t["method"] for t in own] == ["int8-weights (block 64)", "int4 rtn"]
    assert [t["chosen"] for t in own] == [t is most_accurate_of_the_fastest(own) for t in own]
    menu = quantization(BuildOptions(quantize="auto", budget_s=0, thresholds=loose))
    # the whole menu of batch-invariant methods, in the records' order
    assert [t["method"] for t in menu["auto"]["tries"]] == [
        r.label for r in quant_methods.tries("latency", "tensor")]
    assert "int8-dynamic" not in [t["method"] for t in menu["auto"]["tries"]]
    assert "auto" not in quantization(BuildOptions(quantize="int8-dynamic", thresholds=loose))


def test_auto_honours_its_time_budget(tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "auto", "--budget", "0") == 0
    tries = auto_tries(out)
    assert tries[0]["outcome"] == "passed" and tries[0]["chosen"]
    assert {t["outcome"] for t in tries[1:]} <= {"skipped (time budget 0 s spent)",
                                                 "skipped (needs torch)"}


def test_a_cancel_inside_an_auto_try_stops_auto_instead_of_failing_the_try(
        tmp_path: Path) -> None:
    """SIGINT/SIGTERM raise ``BuildCancelledError`` wherever the build is: inside a try it must
    end ``auto``, not read as that try's failure and go on to the next method."""
    from onnx_lambda.build_model import quant_auto
    from onnx_lambda.build_model.errors import BuildCancelledError
    from onnx_lambda.build_model.quantize import QuantizeSettings

    source = build_models.mlp(tmp_path / "mlp.onnx", features=64, hidden=64, classes=8)
    evaluated: list[Path] = []

    def evaluate(path: Path) -> Accuracy:
        evaluated.append(path)
        raise BuildCancelledError(signal.SIGINT)

    candidates = [QuantizeSettings(method="int8-dynamic"), QuantizeSettings(method="fp16")]
    with pytest.raises(BuildCancelledError) as cancelled:
        quant_auto.choose(source, tmp_path, candidates, evaluate, Thresholds(), [],
                          {"x": np.zeros((1, 64), np.float32)}, "latency", 60.0, "extended",
                          lambda _: None)
    assert len(evaluated) == 1 and cancelled.value.exit_code == 128 + signal.SIGINT


def test_auto_fails_clearly_when_no_method_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    assert build(source, tmp_path / "q", "--quantize", "auto", "--max-abs-error", "0",
                 "--max-fp32-nodes", "0", "--budget", "60") == 5
    err = " ".join(capsys.readouterr().err.split())
    assert "--quantize auto: no method passed the accuracy gate" in err
    assert "int8-weights: failed the gate" in err and "Traceback" not in err


def test_a_quantizer_that_refuses_or_writes_a_broken_model_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Third-party quantizers raise their own exceptions, or write graphs onnxruntime rejects
    (fp16 on a graph its converter cannot type): exit 1 naming the method, no traceback."""
    from onnx_lambda.build_model import quant_methods

    source = build_models.mlp(tmp_path / "mlp.onnx")

    def refuse(method: str, source: Path, target: Path, **_: object) -> None:
        raise NotImplementedError("Gather quantization is not supported yet")

    def broken(method: str, source: Path, target: Path, **_: object) -> None:
        model = onnx.load(str(source))
        model.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(
            np.zeros((32, 64), np.float16), model.graph.initializer[0].name))
        onnx.save(model, str(target))

    for apply, message in ((refuse, "int4 rtn cannot quantize this model (NotImplementedError"),
                           (broken, "int4 rtn wrote a model onnxruntime cannot run here")):
        monkeypatch.setattr(quant_methods, "apply", apply)
        assert build(source, tmp_path / "out", "--quantize", "int4") == 1
        err = " ".join(capsys.readouterr().err.split())
        assert message in err and "Traceback" not in err
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("method", ["fp16", "int8-static"])
def test_the_appended_pipeline_math_is_never_quantized(tmp_path: Path, method: str) -> None:
    """The pooling build-model appends (Mul by the mask, ReduceSum, the L2 norm) comes after
    quantization: it stays fp32 even where the method quantizes its op types (Mul), and the
    manifest's whole-graph counts include it."""
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=16)
    tokenizer = build_models.word_tokenizer(tmp_path / "tokenizer.json")
    out = tmp_path / "q"
    assert build(source, out, "--pipeline", "text-embedding", "--file", str(tokenizer),
                 "--quantize", method, "--quantize-ops", "Gather,Mul",
                 "--min-cosine-floor", "0.9") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["nodes"]["quantized"] == {"Gather": 1}
    model = onnx.load(str(out / "model.onnx"))
    table = quantize.precisions(model)
    appended = [name for name in table if name.startswith("onnx_lambda/")]
    assert "onnx_lambda/Mul" in appended and all(table[n][1] == "fp32" for n in appended)
    assert quant["graph"] == quantize.tally(table)


def test_a_dynamically_quantized_gather_counts_as_int8(tmp_path: Path) -> None:
    """quantize_dynamic keeps a Gather's name and op type and gives it an int8 table: it is
    quantized (this was counted as fp32)."""
    source, _ = build_models.token_embeddings(tmp_path / "tokens.onnx", dim=64)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "--quantize-ops", "Gather",
                 "--min-cosine-floor", "0.9") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["nodes"] == {"quantized": {"Gather": 1}, "fp32": {}}
    assert quant["graph"]["int8"]["Gather"] == 1


def test_auto_on_a_graph_with_nothing_to_quantize_exits_8(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = models.multi_io(tmp_path / "multi.onnx")  # ReduceSum and Mul only
    assert build(source, tmp_path / "out", "--quantize", "auto") == 8
    assert "--quantize auto:" in capsys.readouterr().err


def _int8_weights(path: Path) -> np.ndarray:
    model = onnx.load(str(path))
    quantized = [onnx.numpy_helper.to_array(t) for t in model.graph.initializer
                 if t.data_type == TensorProto.INT8 and len(t.dims) == 2]
    assert quantized, "no int8 weight matrix in the file"
    return np.concatenate([w.ravel() for w in quantized]).astype(np.int32)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", ["int8-dynamic", "int8-static", "int8-mixed"])
def test_u8s8_weights_fit_seven_bits_unless_asked_for_eight(tmp_path: Path, method: str) -> None:
    """x86 CPUs without VNNI add pairs of u8 x s8 products in saturating 16-bit arithmetic:
    with |w| <= 64 no pair can saturate (255 x 64 x 2 < 32768), so every CPU computes what the
    gate measured. --no-reduce-range keeps all 8 bits, and the manifest says which it was."""
    source = build_models.mlp(tmp_path / "mlp.onnx", features=128, hidden=256, classes=10)
    gate = ("--min-cosine", "0.9", "--min-cosine-floor", "0.8")
    assert build(source, tmp_path / "seven", "--quantize", method, *gate) == 0
    weights = _int8_weights(tmp_path / "seven" / "model.onnx")
    assert np.abs(weights).max() <= 64 and np.abs(weights).max() >= 32  # 7 bits, all used
    assert Manifest.load(tmp_path / "seven").metadata["quantization"]["reduce_range"] is True
    assert build(source, tmp_path / "eight", "--quantize", method, "--no-reduce-range",
                 *gate) == 0
    assert np.abs(_int8_weights(tmp_path / "eight" / "model.onnx")).max() > 64
    assert Manifest.load(tmp_path / "eight").metadata["quantization"]["reduce_range"] is False



def _block_int8(x: np.ndarray, block: int) -> np.ndarray:
    """Activations as MatMulNBits' int8 compute sees them: symmetric int8 per block along K."""
    out = np.empty_like(x, dtype=np.float64)
    for start in range(0, x.shape[1], block):
        part = x[:, start:start + block].astype(np.float64)
        scale = np.abs(part).max(axis=1, keepdims=True) / 127
        scale[scale == 0] = 1
        out[:, start:start + block] = np.round(part / scale) * scale
    return out


def _one_matmul(path: Path, weights: np.ndarray) -> Path:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="only")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", weights.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", weights.shape[1]])],
        [onnx.numpy_helper.from_array(weights, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=9), str(path))
    return path


def _u8s8_control(path: Path, depth: int) -> Path:
    """255 x 127 summed ``depth`` times by a u8 x s8 MatMulInteger: what saturates on AVX2."""
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, depth])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
        [onnx.numpy_helper.from_array(np.full((depth, 1), 127, np.int8), "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), str(path))
    return path


# Runs the files under ``valgrind --tool=none``: valgrind's CPU hides AVX-512 and VNNI, so
# onnxruntime dispatches to its AVX2 kernels (VPMADDUBSW) whatever CPU runs the test.
_AVX2_RUN = """
import json, sys
import numpy as np, onnxruntime as ort
args = json.loads(sys.argv[1])
def run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
x, full = np.load(args["x"]), np.full((1, args["depth"]), 255, np.uint8)
out = {"control": int(run(args["control"], {"x": full})[0, 0])}
out.update({name: run(path, {"x": x}).tolist() for name, path in args["blocks"].items()})
print(json.dumps(out))
"""


@pytest.mark.timeout(240)
def test_int8_mixed_8_bit_blocks_use_all_8_bits_without_saturating(tmp_path: Path) -> None:
    """The blocks int8-mixed gives left-out MatMuls keep full 8-bit weights (no reduce_range):
    their int8 compute does not add pairs of u8 x s8 products in 16 bits, so full-scale
    weights times all-127 activations come out as exact int8 arithmetic (the dequantized
    weights times the block-quantized activations), on this CPU's kernels and on AVX2's
    without VNNI, where a u8 x s8 MatMulInteger with 8-bit weights saturates (the control)."""
    import onnxruntime as ort

    features, width, block = 256, 8, quantize.BLOCK_SIZE
    rng = np.random.default_rng(0)
    weights = rng.uniform(-1, 1, (features, width)).astype(np.float32)
    weights[:, 0], weights[:, 1] = 1.0, -1.0  # every product at the int8 extremes
    weights[:, 2] = np.where(np.arange(features) % 2, 1.0, -1.0)
    source = _one_matmul(tmp_path / "one.onnx", weights)
    x = np.concatenate([np.ones((1, features)), -np.ones((1, features)),
                        rng.uniform(0, 3, (64, features)), rng.standard_normal((64, features))])
    x = x.astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    blocks, expected = {}, {}
    for symmetric in (False, True):  # int8-mixed's default, and --symmetric
        target = tmp_path / f"q8-{symmetric}.onnx"
        quant_writers.nbits(source, target, ("MatMul",), "rtn", block, symmetric,
                                      (), [], bits=8, only=["only"])
        model = onnx.load(str(target))
        (node,) = model.graph.node
        assert node.op_type == "MatMulNBits" and helper.get_node_attr_value(node, "bits") == 8
        assert helper.get_node_attr_value(node, "accuracy_level") == 4  # int8 compute
        codes = next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer
                     if t.name == node.input[1]).astype(np.int32)
        assert codes.max() - codes.min() >= 254  # all 8 bits used, not 7
        exact_weights = _fp32_compute(model, tmp_path).run(
            None, {"x": np.eye(features, dtype=np.float32)})[0]  # the weights, dequantized
        expected[str(symmetric)] = _block_int8(x, block) @ exact_weights.astype(np.float64)
        blocks[str(symmetric)] = str(target)
        host = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
        _assert_int8_exact(host.run(None, {"x": x})[0], expected[str(symmetric)], features)
    depth = 64
    control = _u8s8_control(tmp_path / "control.onnx", depth)
    args = {"x": str(tmp_path / "x.npy"), "control": str(control), "depth": depth,
            "blocks": blocks}
    done = subprocess.run(["valgrind", "--tool=none", "-q", sys.executable, "-c", _AVX2_RUN,
                           json.dumps(args)], capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr[-2000:]
    avx2 = json.loads(done.stdout.strip().splitlines()[-1])
    if platform.machine() == "x86_64":  # AVX2's VPMADDUBSW clamps 255 x 127 x 2 to 32,767
        assert avx2["control"] < 255 * 127 * depth
    for symmetric, want in expected.items():
        _assert_int8_exact(np.array(avx2[symmetric]), want, features)


def _assert_int8_exact(got: np.ndarray, expected: np.ndarray, features: int) -> None:
    assert got[0, 0] == pytest.approx(features, rel=1e-3)  # 127 x 127 per product, summed
    assert got[1, 1] == pytest.approx(features, rel=1e-3)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def _fp32_compute(model: onnx.ModelProto, tmp_path: Path) -> Any:
    """The same block with fp32 compute (accuracy_level 0): its weights, dequantized."""
    import onnxruntime as ort

    plain = onnx.ModelProto()
    plain.CopyFrom(model)
    for attribute in plain.graph.node[0].attribute:
        if attribute.name == "accuracy_level":
            attribute.i = 0
    return ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"])
