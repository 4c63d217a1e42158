"""Quantization is honest: tuning ends, "nothing to quantize" has its own exit code, the
manifest says what was really quantized, and a cancelled build leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handler.manifest import Manifest
from onnx_lambda.build_model import quantize
from onnx_lambda.build_model.errors import AccuracyGateError
from onnx_lambda.build_model.gate import Accuracy, Thresholds
from onnx_lambda.cli import main
from onnx_lambda.source_tree import root
from tests.support import build_models, models

ROOT = root()


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.timeout(60)
def test_tuning_ends_when_the_budget_is_smaller_than_the_candidates(tmp_path: Path) -> None:
    """The gate never passes and --max-fp32-nodes 1 < 2 candidates: a bounded search, then a
    clear failure (this looped forever)."""
    source = build_models.mlp(tmp_path / "mlp.onnx")
    calls = []

    def evaluate(path: Path) -> Accuracy:
        calls.append(path)
        if len(calls) > 50:
            raise RuntimeError("tuning does not terminate")
        return Accuracy(0.5, 0.5, 1.0, None, 1)

    settings = quantize.QuantizeSettings(max_fp32_nodes=1)
    with pytest.raises(AccuracyGateError, match="up to 1 of 2 nodes kept fp32"):
        quantize.tune(source, tmp_path / "q.onnx", settings, evaluate, Thresholds())
    assert len(calls) == 1 + 2 + 1  # all quantized, ranking both nodes, one kept fp32
    assert not (tmp_path / "q.onnx").exists()


def test_tuning_sizes_end_at_the_budget() -> None:
    assert quantize._sizes(1) == [1]
    assert quantize._sizes(5) == [1, 2, 4, 5]
    assert quantize._sizes(8) == [1, 2, 4, 8]
    assert quantize._sizes(0) == []


def test_nothing_to_quantize_exits_8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = models.multi_io(tmp_path / "multi.onnx")  # ReduceSum and Mul: no MatMul
    assert build(source, tmp_path / "out", "--quantize") == 8
    err = " ".join(capsys.readouterr().err.split())
    assert "nothing to quantize" in err and "ReduceSum" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and hidden(tmp_path) == []


def test_the_manifest_counts_what_was_quantized(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    source = build_models.mlp(tmp_path / "big.onnx", features=256, hidden=512, classes=10)
    out = tmp_path / "q"
    assert build(source, out, "--quantize") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["type"] == "dynamic-int8"
    assert quant["nodes"] == {"quantized": {"MatMul": 2}, "fp32": {}}
    assert "2 node(s) quantized, 0 kept fp32" in capsys.readouterr().err


def test_a_build_that_kept_every_node_fp32_does_not_claim_int8(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only an unquantized model has max abs error 0: tuning ends with both nodes in fp32."""
    source = build_models.mlp(tmp_path / "mlp.onnx")
    out = tmp_path / "q"
    assert build(source, out, "--quantize", "--max-abs-error", "0") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["type"] == "none" and quant["nodes"] == {"quantized": {},
                                                          "fp32": {"MatMul": 2}}
    assert "dynamic-int8" not in (out / "model.json").read_text()
    err = capsys.readouterr().err
    assert "quantize: nothing quantized" in err and "✓ quantize (dynamic INT8" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_cancelled_build_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    source = build_models.chain(tmp_path / "chain.onnx", layers=16, width=256)
    out = tmp_path / "models" / "chain"
    # a gate nothing passes: ranking 16 nodes keeps the build busy long after staging begins
    scratch = tmp_path / "tmp"  # the build's temporary folder, which it must remove too
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "onnx_lambda.cli", "build-model", str(source), "-o", str(out),
         "--quantize", "--min-cosine", "1.01"], cwd=ROOT, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 60
    while not (out.parent.is_dir() and hidden(out.parent)) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert hidden(out.parent), "the build never started staging"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert f"cancelled by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert not out.exists() and hidden(out.parent) == []
    # (.ses: onnxruntime's own file, which its library writes there on every session)
    assert [path.name for path in scratch.iterdir() if path.name != ".ses"] == []


def test_a_killed_builds_staging_is_removed_by_the_next_build(tmp_path: Path) -> None:
    source = build_models.mlp(tmp_path / "mlp.onnx")
    finished = subprocess.Popen(["true"])
    finished.wait()
    orphan = tmp_path / f".out.{finished.pid}.abc123.building"  # its builder is gone
    orphan.mkdir()
    alive = tmp_path / f".out.{os.getpid()}.def456.building"  # a live build's: kept
    alive.mkdir()
    assert build(source, tmp_path / "out") == 0
    assert hidden(tmp_path) == [alive.name]
    assert json.loads((tmp_path / "out" / "model.json").read_text())["name"] == "out"


def test_weights_written_as_constant_nodes_are_quantized(tmp_path: Path) -> None:
    """paddle2onnx-style: the MatMul's weight is a Constant node's tensor, not an initializer."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32) / 8
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])
    nodes = [helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(weight)),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="project")]
    model = helper.make_model(helper.make_graph(nodes, "const_weight", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "const.onnx")
    out = tmp_path / "q"
    assert build(tmp_path / "const.onnx", out, "--quantize", "--min-cosine-floor", "0.9") == 0
    quant = Manifest.load(out).metadata["quantization"]
    assert quant["type"] == "dynamic-int8" and quant["nodes"]["quantized"] == {"MatMul": 1}
