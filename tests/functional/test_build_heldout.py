"""The gate decides on samples that tuned nothing: a candidate fitted to the tuning half (static
INT8 ranges calibrated there) that passes every tuning figure is refused on the held-out half,
and a build on a user's model says which samples judged it and that they are synthetic."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from handler.manifest import Manifest
from onnx_lambda.build_model.builder import build
from onnx_lambda.build_model.errors import AccuracyGateError
from onnx_lambda.build_model.quantize import QuantizeSettings
from onnx_lambda.build_model.spec import BuildOptions, ModelSpec
from onnx_lambda.cli import main
from tests.support import build_models

STATIC = QuantizeSettings(method="int8-static", op_types=("MatMul",), max_fp32_nodes=0)


def spec(source: Path, judged_scale: float) -> ModelSpec:
    """Samples alternating tuning / judging (``gate.split``): the tuning ones small (±0.05),
    the judging ones ``judged_scale`` wide."""
    rng = np.random.default_rng(0)
    samples = [{"x": (rng.uniform(-1, 1, (1, 128)) * (0.05 if i % 2 == 0 else judged_scale))
                .astype(np.float32)} for i in range(8)]
    return ModelSpec(source=source, name="fitted", samples=samples, quantize=STATIC)


def test_a_candidate_fitted_to_the_tuning_half_is_caught_on_the_held_out_half(
        tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx", features=128, hidden=256, classes=10)
    console = Console(file=io.StringIO(), width=200)
    # Control: held-out samples like the tuning ones: the same candidate passes.
    report = build(spec(source, 0.05), tmp_path / "ok", BuildOptions(), console)
    assert report.manifest.metadata["build"]["split"] == {
        "tune": 4, "judge": 4, "held_out": True, "synthetic": False}
    assert report.accuracy.judged_on == "4 held-out sample(s), 4 others tuned"
    # Ranges calibrated on ±0.05 clip the held-out ±1 inputs: tuning saw a pass (its only
    # attempt, 0 nodes kept fp32), the held-out figure refuses it.
    with pytest.raises(AccuracyGateError) as refused:
        build(spec(source, 1.0), tmp_path / "fitted", BuildOptions(), console)
    assert "the built artifact fails the accuracy gate" in refused.value.message
    assert "0 node(s) kept fp32: cosine" in console.file.getvalue()  # type: ignore[attr-defined]
    assert not (tmp_path / "fitted").exists()


def test_a_user_models_gate_says_it_judged_synthetic_samples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    assert main(["build-model", str(source), "-o", str(tmp_path / "out"), "--quantize",
                 "int8-weights"]) == 0
    built = Manifest.load(tmp_path / "out").metadata["build"]
    assert built["split"] == {"tune": 4, "judge": 4, "held_out": True, "synthetic": True}
    assert built["accuracy"]["judged_on"] == "4 held-out synthetic sample(s), 4 others tuned"
    assert built["batch_invariance"] >= 0.99999
    err = " ".join(capsys.readouterr().err.split())
    assert "judged on synthetic inputs only" in err and "--calibration" in err


def test_an_examples_stricter_cosine_gate_applies_unless_the_command_line_sets_one(
        tmp_path: Path) -> None:
    """``ModelSpec.cosine`` (minilm: 0.995 / 0.99) replaces the default 0.99 / 0.98, not a
    gate the command line set: here a promise no quantized model keeps (a cosine of 1.0 to
    the last bit is refused) fails the build, and an explicit --min-cosine wins over it."""
    from dataclasses import replace

    from onnx_lambda.build_model.gate import Thresholds

    source = build_models.mlp(tmp_path / "mlp.onnx", features=128, hidden=256, classes=10)
    console = Console(file=io.StringIO(), width=200)
    strict = replace(spec(source, 0.05), cosine=(1.0, 1.0), quantize=QuantizeSettings(
        method="int8-weights", op_types=("MatMul",), max_fp32_nodes=0))
    with pytest.raises(AccuracyGateError, match=r"< 1\.0"):
        build(strict, tmp_path / "strict", BuildOptions(), console)
    report = build(strict, tmp_path / "given", BuildOptions(thresholds=Thresholds(0.98, 0.95)),
                   console)
    assert report.accuracy.min_cosine is not None and report.accuracy.min_cosine < 1.0
