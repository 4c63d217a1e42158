"""Init (the cold start): where the model comes from, and the loud failures of a bad artifact."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import onnxruntime
import pytest
from moto import mock_aws

from handler.bootstrap import create
from handler.errors import ModelLoadError
from handler.manifest import Manifest, TensorInfo
from handler.settings import Settings
from tests.conftest import Context


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_folder(tmp_path: Path, model_dir: Path, **overrides: Any) -> Path:
    folder = tmp_path / "artifact"
    folder.mkdir()
    shutil.copy(model_dir / "linear.onnx", folder / "model.onnx")
    fields: dict[str, Any] = dict(
        name="lin", model="model.onnx", portable="model.onnx",
        onnxruntime=onnxruntime.__version__, optimization="none",
        inputs=(TensorInfo("x", "float32", (None, 4)),),
        outputs=(TensorInfo("y", "float32", (None, 2)),),
        files={"model.onnx": sha256(folder / "model.onnx")},
        example=[[0.5, 0.5, 0.5, 0.5]])
    fields.update(overrides)
    Manifest(**fields).dump(folder)
    return folder


def service_for(location: Path | str, **env: str) -> Any:
    variables = {"ONNX_LAMBDA_MODEL": str(location),
                 **{f"ONNX_LAMBDA_{k.upper()}": v for k, v in env.items()}}
    service = create(Settings.from_env(variables))
    service.telemetry.stream = io.StringIO()
    return service


def test_model_folder_with_manifest(tmp_path: Path, model_dir: Path) -> None:
    service = service_for(make_folder(tmp_path, model_dir), verify="always")
    assert service.model.name == "lin"
    assert "warmup" in service.init_durations and "model-load" in service.init_durations


def test_missing_model_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"model not found: .*nothing-here"):
        service_for(tmp_path / "nothing-here")


def test_corrupt_model_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    with pytest.raises(ModelLoadError, match="onnxruntime cannot load it"):
        service_for(bad)


def test_not_a_model_file(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(ModelLoadError, match="expected a model folder"):
        service_for(tmp_path / "weights.bin")


def test_sha256_mismatch_fails_init(tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir, files={"model.onnx": "0" * 64})
    with pytest.raises(ModelLoadError, match="sha256 mismatch"):
        service_for(folder, verify="always")
    assert service_for(folder, verify="never").model.name == "lin"


def test_invalid_manifest(tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir)
    (folder / "model.json").write_text(json.dumps({"model": "model.onnx"}))
    with pytest.raises(ModelLoadError, match="invalid manifest"):
        service_for(folder)


def test_manifest_for_another_onnxruntime_falls_back_to_portable(
        tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir, model="model.ort", portable="model.onnx",
                         onnxruntime="0.0.1", optimization="all")
    service = service_for(folder)  # model.ort does not even exist: never touched
    assert Path(service.model.artifact.path).name == "model.onnx"
    assert service.model.graph_optimization == "basic"


def packaged_folder(tmp_path: Path, model_dir: Path, **overrides: Any) -> Path:
    """An artifact as the image and the zip ship it: the optimized file only, the manifest
    still naming (and hashing) the portable copy that packaging left out."""
    digest = sha256(model_dir / "linear.onnx")
    folder = make_folder(tmp_path, model_dir, model="model.opt.onnx", optimization="extended",
                         files={"model.onnx": digest, "model.opt.onnx": digest}, **overrides)
    (folder / "model.onnx").rename(folder / "model.opt.onnx")
    return folder


def test_packaged_artifact_without_its_portable_copy_loads_and_verifies(
        tmp_path: Path, model_dir: Path) -> None:
    service = service_for(packaged_folder(tmp_path, model_dir), verify="always")
    assert Path(service.model.artifact.path).name == "model.opt.onnx"
    assert service.model.artifact.warning == ""
    assert service.model.graph_optimization == "disable"


def test_packaged_artifact_for_another_onnxruntime_without_portable_fails_clearly(
        tmp_path: Path, model_dir: Path) -> None:
    folder = packaged_folder(tmp_path, model_dir, onnxruntime="0.0.1")
    with pytest.raises(ModelLoadError, match=r"optimized for onnxruntime 0\.0\.1, this is "
                       r".*the portable model\.onnx was not shipped"):
        service_for(folder)


def test_verify_still_requires_every_other_listed_file(tmp_path: Path, model_dir: Path) -> None:
    digest = sha256(model_dir / "linear.onnx")
    folder = packaged_folder(tmp_path, model_dir)
    manifest = json.loads((folder / "model.json").read_text())
    manifest["files"]["tokenizer.json"] = digest
    (folder / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match=r"tokenizer\.json: listed in model\.json but missing"):
        service_for(folder, verify="always")


def test_offline_optimized_artifact_loads_without_online_optimization(
        tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir, optimization="extended")
    assert service_for(folder).model.graph_optimization == "disable"


def test_warm_up_uses_the_manifest_example(tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir, example=[[1, 2, 3]])  # wrong: init must fail
    with pytest.raises(ModelLoadError, match=r"warm-up inference failed: .*expected"):
        service_for(folder)


def test_invalid_setting_names_the_variable() -> None:
    with pytest.raises(ValueError, match="ONNX_LAMBDA_THREADS"):
        Settings.from_env({"ONNX_LAMBDA_THREADS": "-2"})


@mock_aws
def test_s3_folder_is_downloaded_once_and_verified(tmp_path: Path, model_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    folder = make_folder(tmp_path, model_dir)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    for path in folder.iterdir():
        s3.upload_file(str(path), "models", f"lin/v1/{path.name}")
    cache = tmp_path / "cache"
    service = service_for("s3://models/lin/v1", s3_cache_dir=str(cache))
    assert service.model.artifact.path == str(cache / "models" / "lin" / "v1" / "model.onnx")
    assert service({"inputs": [[1, 2, 3, 4]]}, Context())["outputs"]["y"]

    s3.put_object(Bucket="models", Key="lin/v1/model.onnx", Body=b"tampered")
    with pytest.raises(ModelLoadError, match="sha256 mismatch"):
        service_for("s3://models/lin/v1", s3_cache_dir=str(tmp_path / "cache2"))


@mock_aws
def test_s3_missing_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    boto3.client("s3").create_bucket(Bucket="models")
    with pytest.raises(ModelLoadError, match="download failed"):
        service_for("s3://models/none.onnx", s3_cache_dir=str(tmp_path))
    with pytest.raises(ModelLoadError, match="no objects"):
        service_for("s3://models/empty/", s3_cache_dir=str(tmp_path))


def test_unknown_variable_is_logged_at_init(model_dir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    service_for(model_dir / "linear.onnx", colour="red")
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "COLOUR" in x]
    assert json.loads(line)["level"] == "WARNING"


def test_warm_up_with_another_pipeline_uses_that_pipelines_example(
        tmp_path: Path, model_dir: Path) -> None:
    folder = make_folder(tmp_path, model_dir, pipeline="classifier", example=[[1, 2, 3, 4]],
                         labels=("a", "b"))
    service = service_for(folder, pipeline="tests.support.user_pipeline")
    assert service.pipeline.name == "tests.support.user_pipeline"
