"""``onnx-lambda inspect MODEL``: symbolic dims by name (shared vs anonymous), sizes, external
data, quantizable nodes, the example and the flags to pass; ``build-model`` prints it first."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from onnx_lambda.cli import main
from tests.support import build_models, example_models


def inspect_json(target: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["inspect", str(target), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_named_anonymous_and_static_dims(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    summary = inspect_json(example_models.dims_zoo(tmp_path / "zoo.onnx"), capsys)
    assert summary["inputs"] == [
        {"name": "a", "dtype": "float32", "shape": ["batch", "seq", 8]},
        {"name": "b", "dtype": "int64", "shape": ["batch", "?", "unk__3", None]}]
    assert summary["outputs"][1] == {"name": "count", "dtype": "int64", "shape": []}
    assert summary["dims"] == {
        "shared": {"batch": ["a[0]", "b[0]", "total[0]"], "seq": ["a[1]", "total[1]"]},
        "anonymous": ["b[1] ('?')", "b[2] ('unk__3')", "b[3] (unnamed)"]}
    assert summary["opsets"] == {"ai.onnx": 17} and summary["nodes"] == 2
    assert summary["initializer_bytes"] > 8 * 4 * 4 and summary["external_data"] == {}
    assert summary["quantize"]["candidates"] == {"MatMul": 1}
    assert summary["quantize"]["nodes"] == ["project"]
    assert summary["example"] is None
    assert summary["suggested_flags"] == ["--shape a=1xseqx8", "--shape b=1xD1xD2xD3",
                                          "--dim seq=N", "--quantize"]


def test_external_data_is_reported_not_loaded(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    model = onnx.load(str(build_models.mlp(tmp_path / "mlp.onnx")))
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True,
              location="ext.onnx.data", size_threshold=0)
    summary = inspect_json(tmp_path / "ext.onnx", capsys)
    data_size = (tmp_path / "ext.onnx.data").stat().st_size
    assert summary["external_data"] == {"ext.onnx.data": pytest.approx(data_size, abs=256)}
    assert summary["size_bytes"] < 1024 < summary["initializer_bytes"]


def test_a_model_folder_knows_its_example(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows"
    assert main(["build-model", str(example_models.rows_of(tmp_path / "rows.onnx")), "-o",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert "dim n (shared: one size) at x[1]" in " ".join(err.split())  # build prints it first
    summary = inspect_json(out, capsys)
    assert summary["file"].endswith("model.onnx") and summary["example"] == "model.json (inline)"
    assert summary["suggested_flags"] == []  # an example is known: no shape flags needed
    assert main(["inspect", str(out)]) == 0
    assert "example: model.json (inline)" in capsys.readouterr().out


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "missing.onnx")]) == 2
    (tmp_path / "junk.onnx").write_bytes(b"not a protobuf")
    assert main(["inspect", str(tmp_path / "junk.onnx")]) == 3
    assert "not an ONNX model" in capsys.readouterr().err
