"""``onnx-lambda build-model`` on small generated models: the artifact, its manifest, the gate,
and every failure path leaving nothing behind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from handler.manifest import Manifest
from onnx_lambda.build_model import quantize
from onnx_lambda.build_model.gate import Accuracy, Thresholds
from onnx_lambda.build_model.output import sha256
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import build_models


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    return build_models.mlp(tmp_path / "mlp.onnx")


def raw_outputs(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_builds_an_artifact_the_handler_serves(tmp_path: Path, mlp: Path,
                                               make_service: Callable[..., Any]) -> None:
    out = tmp_path / "models" / "mlp"
    assert build(mlp, out) == 0
    manifest = Manifest.load(out)
    assert manifest.model == "model.opt.onnx" and manifest.portable == "model.onnx"
    assert manifest.onnxruntime == ort.__version__ and manifest.optimization == "extended"
    assert [(t.name, t.dtype, t.shape) for t in manifest.inputs] == [("x", "float32",
                                                                       ("batch", 32))]
    assert [(t.name, t.dtype, t.shape) for t in manifest.outputs] == [("logits", "float32",
                                                                        ("batch", 5))]
    files = sorted(p.name for p in out.iterdir() if p.name != "model.json")
    assert sorted(manifest.files) == files
    assert all(sha256(out / name) == digest for name, digest in manifest.files.items())
    assert manifest.metadata["build"]["accuracy"]["min_cosine"] > 0.9999
    assert leftovers(out.parent) == []

    x = np.random.default_rng(5).standard_normal((3, 32)).astype(np.float32)
    service = make_service(out, verify="always")
    assert service.model.graph_optimization == "disable"  # optimized offline: online off
    body = service({"inputs": x.tolist()}, Context())
    np.testing.assert_allclose(body["outputs"]["logits"], raw_outputs(mlp, x), rtol=1e-5,
                               atol=1e-5)


def test_ort_format(tmp_path: Path, mlp: Path, make_service: Callable[..., Any]) -> None:
    out = tmp_path / "mlp"
    assert build(mlp, out, "--ort-format", "--opt-level", "all") == 0
    manifest = Manifest.load(out)
    assert manifest.model == "model.ort" and manifest.optimization == "all"
    x = np.ones((2, 32), dtype=np.float32)
    body = make_service(out)({"inputs": x.tolist()}, Context())
    np.testing.assert_allclose(body["outputs"]["logits"], raw_outputs(mlp, x), rtol=1e-5,
                               atol=1e-5)


def test_no_optimize_ships_the_portable_model_only(tmp_path: Path, mlp: Path) -> None:
    out = tmp_path / "mlp"
    assert build(mlp, out, "--no-optimize") == 0
    manifest = Manifest.load(out)
    assert manifest.model == manifest.portable == "model.onnx"
    assert manifest.optimization == "none"
    assert sorted(p.name for p in out.iterdir()) == ["model.json", "model.onnx"]


def test_quantize_passes_the_gate_and_shrinks_the_weights(tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "big.onnx", features=256, hidden=512, classes=10)
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "--pipeline", "classifier") == 0
    manifest = Manifest.load(out)
    quant = manifest.metadata["quantization"]
    assert quant["type"] == "dynamic-int8" and quant["per_channel"] is True
    accuracy = manifest.metadata["build"]["accuracy"]
    assert accuracy["mean_cosine"] >= 0.99 and accuracy["min_cosine"] >= 0.98
    assert accuracy["top1"] >= 0.99
    assert (out / "model.onnx").stat().st_size < source.stat().st_size / 2
    ops = {n.op_type for n in onnx.load(str(out / "model.onnx")).graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops


def test_failing_gate_exits_5_and_writes_nothing(tmp_path: Path, mlp: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mlp"
    code = build(mlp, out, "--quantize", "--min-cosine-floor", "1.0", "--max-fp32-nodes", "0")
    assert code == 5
    assert "accuracy gate" in capsys.readouterr().err
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_failed_rebuild_keeps_the_previous_artifact(tmp_path: Path, mlp: Path) -> None:
    out = tmp_path / "mlp"
    assert build(mlp, out) == 0
    before = Manifest.load(out).files
    assert build(mlp, out, "--quantize", "--min-cosine", "1.01", "--max-fp32-nodes", "0") == 5
    assert Manifest.load(out).files == before
    assert build(mlp, out, "--no-optimize") == 0  # a successful rebuild replaces it
    assert Manifest.load(out).optimization == "none" and leftovers(tmp_path) == []


def test_not_an_onnx_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "notes.onnx"
    bogus.write_text("this is not a protobuf at all, just text\n")
    assert build(bogus, tmp_path / "out") == 3
    assert "not an ONNX model" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_a_model_with_external_data_builds_and_its_summary_says_so(
        tmp_path: Path, mlp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "ext" / "ext.onnx"
    source.parent.mkdir()
    onnx.save(onnx.load(str(mlp)), str(source), save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.onnx.data", size_threshold=0)
    out = tmp_path / "out"
    assert build(source, out) == 0
    assert "(external: ext.onnx.data" in " ".join(capsys.readouterr().err.split())
    x = np.random.default_rng(0).standard_normal((2, 32)).astype(np.float32)
    shipped = out / Manifest.load(out).portable  # self-contained: the weights are inside
    assert not list(out.glob("*.data"))
    np.testing.assert_allclose(raw_outputs(shipped, x), raw_outputs(mlp, x), rtol=1e-5)
    (source.parent / "ext.onnx.data").unlink()
    assert build(source, tmp_path / "again") == 3
    assert "its external data cannot be read" in capsys.readouterr().err


def test_unsupported_operator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.custom_op(tmp_path / "custom.onnx")
    assert build(source, tmp_path / "out") == 4
    assert "com.example:Frobnicate" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_unwritable_output(tmp_path: Path, mlp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert build(mlp, blocker / "model") == 6
    assert "cannot write" in capsys.readouterr().err


def test_refuses_to_replace_a_folder_that_is_not_a_model(tmp_path: Path, mlp: Path) -> None:
    precious = tmp_path / "docs"
    precious.mkdir()
    (precious / "thesis.txt").write_text("keep me")
    assert build(mlp, precious) == 6
    assert (precious / "thesis.txt").read_text() == "keep me"


def test_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    assert build(tmp_path / "nope.onnx", tmp_path / "out") == 2


def test_classifier_options_labels_and_files(tmp_path: Path, mlp: Path) -> None:
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\nd\ne\n")
    extra = tmp_path / "README.txt"
    extra.write_text("notes")
    out = tmp_path / "clf"
    assert build(mlp, out, "--pipeline", "classifier", "--labels", str(labels), "--file",
                 str(extra), "--pipeline-option", "top_k=2", "--name", "my-model") == 0
    data = json.loads((out / "model.json").read_text())
    assert data["name"] == "my-model" and data["pipeline"] == "classifier"
    assert data["labels"] == ["a", "b", "c", "d", "e"]
    assert data["pipeline_options"] == {"top_k": 2}
    assert (out / "README.txt").read_text() == "notes" and "README.txt" in data["files"]


def test_tuning_keeps_the_sensitive_node_in_fp32(tmp_path: Path) -> None:
    """A fake evaluation (the real quantized file is inspected) that fails while the node named
    ``second`` is quantized: tuning must rank it first and keep only it in fp32."""
    source = build_models.mlp(tmp_path / "mlp.onnx")

    def evaluate(path: Path) -> Accuracy:
        graph = onnx.load(str(path)).graph
        second_is_fp32 = any(n.name == "second" and n.op_type == "MatMul" for n in graph.node)
        cosine = 1.0 if second_is_fp32 else 0.5
        return Accuracy(cosine, cosine, 0.0, None, 1)

    target = tmp_path / "q.onnx"
    notes: list[str] = []
    result = quantize.tune(source, target, quantize.QuantizeSettings(), evaluate, Thresholds(),
                           on_attempt=notes.append)
    assert result.excluded == ("second",)
    assert [kept for kept, _ in result.attempts] == [0, 1]
    assert target.is_file() and any("ranking 2 nodes" in n for n in notes)


def test_the_recorded_sha256_catch_a_replaced_file(tmp_path: Path, mlp: Path,
                                                   make_service: Callable[..., Any]) -> None:
    from handler.errors import ModelLoadError

    out = tmp_path / "mlp"
    assert build(mlp, out) == 0
    make_service(out, verify="always")  # intact: loads
    with open(out / "model.onnx", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ModelLoadError, match="sha256 mismatch"):
        make_service(out, verify="always")
