"""Non-numeric outputs: a scikit-learn classifier exported by skl2onnx with its defaults (class
labels as a tensor of strings or ints, probabilities as a sequence of maps) builds, is gated on
what can be compared, and serves the right JSON; a model with nothing to compare still builds."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.bootstrap import create
from handler.manifest import Manifest
from handler.service import Service
from handler.settings import Settings
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import example_models

SPECIES = np.array(["setosa", "versicolor", "virginica"])


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def iris_classifier(path: Path, *, string_labels: bool) -> tuple[Path, Any, np.ndarray]:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, target = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    labels = SPECIES[target] if string_labels else target
    model = LogisticRegression(max_iter=1000).fit(features, labels)
    path.write_bytes(to_onnx(model, features[:1]).SerializeToString())  # defaults: ZipMap on
    return path, model, features[::15]


def serve(folder: Path) -> Service:
    service = create(Settings.from_env({"ONNX_LAMBDA_MODEL": str(folder)}))
    service.telemetry.stream = io.StringIO()
    return service


@pytest.mark.parametrize("string_labels", [True, False])
def test_a_default_skl2onnx_classifier_builds_and_serves(tmp_path: Path, string_labels: bool,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    source, model, x = iris_classifier(tmp_path / "iris.onnx", string_labels=string_labels)
    out = tmp_path / "iris"
    assert build(source, out) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "output_label (agreement)" in err and "output_probability (cosine)" in err
    accuracy = Manifest.load(out).metadata["build"]["accuracy"]
    assert accuracy["agreement"] == 1.0 and accuracy["min_cosine"] > 0.9999

    service = serve(out)
    assert service.warmup_status == "ok"
    body = service({"inputs": {"X": x.tolist()}}, Context())
    labels, probabilities = body["outputs"]["output_label"], body["outputs"]["output_probability"]
    assert labels == model.predict(x).tolist()
    expected = model.predict_proba(x)
    classes = sorted(str(c) for c in model.classes_)
    assert [sorted(row) for row in probabilities] == [classes] * len(x)
    got = np.array([[row[str(c)] for c in model.classes_] for row in probabilities])
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_quantizing_a_classifier_with_no_matmul_is_exit_8(tmp_path: Path) -> None:
    source, _, _ = iris_classifier(tmp_path / "iris.onnx", string_labels=True)
    assert build(source, tmp_path / "out", "--quantize") == 8


def test_nothing_comparable_builds_unquantized_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = example_models.empty_output(tmp_path / "empty.onnx")
    out = tmp_path / "empty"
    assert build(source, out, "--quantize") == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "nothing comparable" in err and "quantize skipped" in err
    manifest = Manifest.load(out)
    assert manifest.metadata["quantization"] == {"type": "none",
                                                 "reason": "no comparable output"}
    assert manifest.metadata["build"]["accuracy"]["compared"] == []


def test_an_examples_own_reference_rows_gate_the_build(tmp_path: Path) -> None:
    """What minilm does: its own samples, comparable and reference rows (one array)."""
    import onnxruntime as ort
    from rich.console import Console

    from onnx_lambda.build_model.builder import build as build_folder
    from onnx_lambda.build_model.quantize import QuantizeSettings
    from onnx_lambda.build_model.spec import BuildOptions, ModelSpec
    from tests.support import build_models

    source = build_models.mlp(tmp_path / "big.onnx", features=256, hidden=512, classes=10)
    samples = [{"x": np.random.default_rng(i).standard_normal((1, 256)).astype(np.float32)}
               for i in range(4)]
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    reference = np.concatenate([session.run(None, s)[0] for s in samples])
    spec = ModelSpec(source=source, name="own", samples=samples, reference=reference,
                     comparable=lambda outputs, feeds: outputs["logits"],
                     quantize=QuantizeSettings(method="int8-weights"),
                     example=samples[0]["x"].tolist())
    report = build_folder(spec, tmp_path / "own", BuildOptions(), Console(file=io.StringIO()))
    # judged on the held-out half of the 4 samples, with their own reference rows
    assert report.accuracy.compared == ("output (cosine)",) and report.accuracy.samples == 2
    assert report.manifest.metadata["quantization"]["type"] == "int8-weights"
