"""layers/build_layer.py without network: pruning, pip flags, the size limits."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.support import cfn
from tests.support.layer import build_layer

KEPT = ("numpy/__init__.py", "numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so",
        "numpy/testing/__init__.py", "numpy.libs/libscipy_openblas64_.so",
        "onnxruntime/__init__.py", "onnxruntime/capi/onnxruntime_pybind11_state.so",
        "onnxruntime/capi/onnxruntime_inference_collection.py",
        "onnxruntime-1.32.0.dist-info/METADATA")
PRUNED = ("numpy/_core/tests/test_api.py", "numpy/_core/include/numpy/ndarrayobject.h",
          "numpy/__init__.pyi", "numpy/f2py/__init__.py", "numpy/_core/lib/libnpymath.a",
          "onnxruntime/tools/symbolic_shape_infer.py",
          "onnxruntime/transformers/optimizer.py", "onnxruntime/quantization/quantize.py",
          "onnxruntime/backend/backend.py", "onnxruntime/__pycache__/__init__.cpython-312.pyc",
          "bin/f2py")


def make_tree(root: Path, files: tuple[str, ...], size: int = 100) -> None:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * size)


def test_prune_removes_what_inference_never_loads_and_keeps_the_rest(tmp_path: Path) -> None:
    make_tree(tmp_path, KEPT + PRUNED)
    freed = build_layer.prune(tmp_path)
    remaining = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert remaining == set(KEPT)
    assert freed == 100 * len(PRUNED)
    assert build_layer.tree_size(tmp_path) == 100 * len(KEPT)


@pytest.mark.parametrize(("arch", "machine"), [("x86_64", "x86_64"), ("arm64", "aarch64")])
def test_pip_installs_lambda_runtime_wheels_for_the_architecture(arch: str, machine: str) -> None:
    command = build_layer.pip_command(Path("/out"), arch)
    platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert platforms == [f"manylinux2014_{machine}", f"manylinux_2_28_{machine}"]
    assert command[command.index("--python-version") + 1] == "3.12"
    assert command[command.index("--target") + 1] == "/out"
    assert command[command.index("-r") + 1] == str(cfn.ROOT / "layers" / "requirements.txt")
    assert {"--only-binary=:all:", "--no-deps", "--no-cache-dir"} <= set(command)


def test_layer_over_250_mb_unzipped_is_refused() -> None:
    build_layer.check_layer_size(250 * build_layer.MB)
    with pytest.raises(SystemExit, match="250 MB"):
        build_layer.check_layer_size(250 * build_layer.MB + 1)


def test_layer_build_prunes_measures_and_zips(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_layer, "install",
                        lambda target, arch: make_tree(target, KEPT + PRUNED))
    archive = tmp_path / "layer.zip"
    size = build_layer.build_layer(tmp_path / "out", "x86_64", archive)
    assert size == 100 * len(KEPT)
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == sorted(f"python/{rel}" for rel in KEPT)


@pytest.mark.parametrize(("budget_mb", "status"), [(1, 0), (0.001, 1)])
def test_image_size_fails_over_its_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        budget_mb: float, status: int) -> None:
    monkeypatch.setattr(build_layer, "install", lambda target, arch: make_tree(target, KEPT))
    model = tmp_path / "model"
    make_tree(model, ("model.onnx", "model.json"), size=1000)
    code = build_layer.main(["image-size", "--model", str(model), "--budget-mb", str(budget_mb)])
    assert code == status
    out = capsys.readouterr().out
    assert "dependencies" in out and "model" in out and "total" in out
