"""``build-model``'s example: found by the ladder on constrained models, given with
``--example`` / ``--shape`` / ``--dim``, refused clearly (exit 7) when none runs, written into the
artifact, and used by the runtime's warm-up."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.errors import ModelLoadError
from handler.manifest import Manifest
from onnx_lambda.build_model.output import sha256
from onnx_lambda.cli import main
from tests.conftest import Context
from tests.support import example_models


def build(source: Path, output: Path, *args: str) -> int:
    return main(["build-model", str(source), "-o", str(output), *args])


def example_of(folder: Path) -> dict[str, np.ndarray]:
    manifest = Manifest.load(folder)
    if manifest.example_file:
        with np.load(folder / manifest.example_file) as archive:
            return {name: archive[name] for name in archive.files}
    return {name: np.asarray(value) for name, value in manifest.example.items()}


def test_a_dim_that_must_be_a_multiple_of_32(tmp_path: Path,
                                             make_service: Callable[..., Any]) -> None:
    source = example_models.rows_of(tmp_path / "rows.onnx", width=32)
    out = tmp_path / "rows"
    assert build(source, out) == 0
    assert example_of(out)["x"].shape == (1, 32)  # 1 and 16 fail inside the Reshape
    service = make_service(out)
    assert service.warmup_status == "ok"
    body = service({"inputs": {"x": np.ones((1, 64)).tolist()}}, Context())
    assert np.asarray(body["outputs"]["rows"]).shape == (2, 32)


def test_a_minimum_sample_count(tmp_path: Path) -> None:
    source = example_models.long_conv(tmp_path / "conv.onnx", kernel=512)
    out = tmp_path / "conv"
    assert build(source, out) == 0
    assert example_of(out)["audio"].shape == (1, 1, 512)


@pytest.mark.parametrize(("valid", "name", "expected"), [
    ((8000,), "sr", 8000),  # a sample rate: 16000 is tried first, fails; 8000 runs
    ((44100,), "mode", 44100),  # not named like a rate: 1, 0, 16000, 8000 fail first
])
def test_an_enumerated_scalar(tmp_path: Path, valid: tuple[int, ...], name: str,
                              expected: int, make_service: Callable[..., Any]) -> None:
    source = example_models.rate_gated(tmp_path / "gated.onnx", valid=valid, name=name)
    out = tmp_path / "gated"
    assert build(source, out) == 0
    example = example_of(out)
    assert example[name].shape == () and int(example[name]) == expected
    assert make_service(out).warmup_status == "ok"


def test_state_tensors_a_scalar_and_a_minimum_length_together(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    """The state's anonymous axis must equal x's batch: at 512 samples only the rung that keeps
    that lone axis at 1 runs."""
    source = example_models.vad_like(tmp_path / "vad.onnx")
    out = tmp_path / "vad"
    assert build(source, out) == 0
    example = example_of(out)
    assert example["x"].shape == (1, 512) and example["state"].shape == (2, 1, 8)
    assert int(example["sr"]) == 16000
    assert make_service(out).warmup_status == "ok"


def test_no_example_found_exits_7_with_the_error_and_the_flag(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    source = example_models.rows_of(tmp_path / "rows96.onnx", width=96)  # no ladder size fits
    assert build(source, tmp_path / "out") == 7
    err = capfd.readouterr().err  # the file descriptor: onnxruntime's own log would show here
    assert "Traceback" not in err and "sequential_executor" not in err
    one_line = " ".join(err.split())
    assert "Reshape node. Name:'to_rows'" in one_line and "requested shape:{-1,96}" in one_line
    assert "onnxruntime_src" not in one_line  # C++ source locations are noise to a user
    assert "--shape x=1xn" in one_line and "--dim n=N" in one_line
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_input_no_numpy_dtype_holds_asks_for_an_example(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "bf16", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "bf16.onnx")
    assert build(tmp_path / "bf16.onnx", tmp_path / "out") == 7
    assert "cannot make values for input(s) x (tensor(bfloat16))" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--shape", "x=1x96"], ["--dim", "n=192"]])
def test_shape_or_dim_pins_what_the_ladder_cannot_find(tmp_path: Path, flag: list[str]) -> None:
    source = example_models.rows_of(tmp_path / "rows96.onnx", width=96)
    out = tmp_path / "rows"
    assert build(source, out, *flag) == 0
    assert example_of(out)["x"].shape[1] in (96, 192)


def test_example_files(tmp_path: Path) -> None:
    source = example_models.rows_of(tmp_path / "rows96.onnx", width=96)
    data = np.arange(192, dtype=np.float64).reshape(2, 96) / 192  # float64 → the float32 input
    np.save(tmp_path / "x.npy", data)
    np.savez(tmp_path / "x.npz", x=data)
    (tmp_path / "x.json").write_text(json.dumps({"inputs": {"x": data.tolist()}}))
    for name in ("x.npy", "x.npz", "x.json"):
        out = tmp_path / name.replace(".", "-")
        assert build(source, out, "--example", str(tmp_path / name)) == 0, name
        np.testing.assert_allclose(example_of(out)["x"], data, rtol=1e-6)


def test_a_scalar_given_in_json_the_rest_found(tmp_path: Path) -> None:
    source = example_models.rate_gated(tmp_path / "gated.onnx", valid=(12345,))
    assert build(source, tmp_path / "no", "--quantize") == 7  # 12345 is on no list
    (tmp_path / "sr.json").write_text('{"sr": 12345}')
    out = tmp_path / "gated"
    assert build(source, out, "--example", str(tmp_path / "sr.json")) == 0
    assert int(example_of(out)["sr"]) == 12345


@pytest.mark.parametrize(("args", "message"), [
    (["--shape", "x=1xq"], "expected NAME=1x3x224x224"),
    (["--shape", "nope=1x2"], "unknown input(s) nope"),
    (["--shape", "x=1x2x3"], "does not fit the model's"),
    (["--dim", "q=3"], "no input axis is named q"),
    (["--dim", "n"], "expected SYMBOL=N"),
    (["--example", "missing.npz"], "cannot read it"),
    (["--example", "notes.txt"], "expected a .npz, .npy or .json"),
])
def test_bad_example_arguments_exit_2(tmp_path: Path, args: list[str], message: str,
                                      capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    source = example_models.rows_of(tmp_path / "rows.onnx")
    assert build(source, tmp_path / "out", *args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_given_example_that_does_not_run_exits_7(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    source = example_models.rows_of(tmp_path / "rows.onnx")
    np.save(tmp_path / "bad.npy", np.zeros((1, 33), np.float32))
    assert build(source, tmp_path / "out", "--example", str(tmp_path / "bad.npy")) == 7
    assert "the given example (x=1x33) does not run" in " ".join(capsys.readouterr().err.split())


def test_a_large_example_is_a_file_the_warm_up_reads(tmp_path: Path,
                                                     make_service: Callable[..., Any]) -> None:
    source = example_models.long_conv(tmp_path / "conv.onnx", kernel=2048)  # 16000 samples
    out = tmp_path / "conv"
    assert build(source, out) == 0
    manifest = Manifest.load(out)
    assert manifest.example is None and manifest.example_file == "example.npz"
    assert manifest.files["example.npz"] == sha256(out / "example.npz")
    assert example_of(out)["audio"].shape == (1, 1, 16000)
    assert make_service(out, verify="always").warmup_status == "ok"

    np.savez(out / "example.npz", audio=np.zeros((1, 1, 100), np.float32))  # too short now
    with pytest.raises(ModelLoadError, match="manifest's example does not run"):
        make_service(out)


def test_a_bare_model_whose_guess_fails_starts_anyway(tmp_path: Path,
                                                      make_service: Callable[..., Any],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    source = example_models.rows_of(tmp_path / "rows.onnx")  # the 1x1 guess cannot reshape
    service = make_service(source)
    assert service.warmup_status.startswith("failed: ")
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "warm-up" in x]
    assert json.loads(line)["level"] == "WARNING" and "to_rows" in json.loads(line)["error"]
    health = service({"rawPath": "/health", "requestContext": {"http": {"method": "GET"}},
                      "version": "2.0", "headers": {}}, Context())
    assert json.loads(health["body"])["warmup"].startswith("failed: ")
    body = service({"inputs": {"x": np.ones((1, 32)).tolist()}}, Context())
    assert np.asarray(body["outputs"]["rows"]).shape == (1, 32)
    service.warm_up()  # a warmer ping: the failed guess is not retried, nothing raises


def test_manifest_without_example_file_stays_as_it_was(tmp_path: Path) -> None:
    source = example_models.rows_of(tmp_path / "rows.onnx")
    out = tmp_path / "rows"
    assert build(source, out) == 0
    data = json.loads((out / "model.json").read_text())
    assert "example_file" not in data and data["format_version"] == 1
    data["example_file"] = "example.npz"
    assert Manifest.from_dict(data).example_file == "example.npz"
