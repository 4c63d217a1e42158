"""layers/build_layer.py without network: pruning, pip flags, the size limits."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.support import cfn
from tests.support.layer import build_layer

# Of onnxruntime only the C library handler/ort/capi.py loads stays; numpy (installed only when a
# pipeline asks, EXTRA_REQUIREMENTS) keeps what `import numpy` needs.
KEPT = ("numpy/__init__.py", "numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so",
        "numpy/testing/__init__.py", "numpy.libs/libscipy_openblas64_.so",
        "onnxruntime/capi/libonnxruntime.so.1.32.0",
        "onnxruntime-1.32.0.dist-info/METADATA", "tokenizers/tokenizers.abi3.so")
PRUNED = ("numpy/_core/tests/test_api.py", "numpy/_core/include/numpy/ndarrayobject.h",
          "numpy/__init__.pyi", "numpy/f2py/__init__.py", "numpy/_core/lib/libnpymath.a",
          "onnxruntime/__init__.py", "onnxruntime/capi/__init__.py",
          "onnxruntime/capi/onnxruntime_pybind11_state.cpython-312-x86_64-linux-gnu.so",
          "onnxruntime/capi/onnxruntime_inference_collection.py",
          "onnxruntime/capi/_pybind_state.py",
          "onnxruntime/capi/libonnxruntime_providers_shared.so",
          "onnxruntime/tools/symbolic_shape_infer.py", "onnxruntime/LICENSE",
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
    # no empty package folders left behind: only capi/ with the library
    assert sorted(p.name for p in (tmp_path / "onnxruntime").iterdir()) == ["capi"]


@pytest.mark.parametrize(("arch", "machine"), [("x86_64", "x86_64"), ("arm64", "aarch64")])
def test_pip_installs_lambda_runtime_wheels_for_the_architecture(arch: str, machine: str) -> None:
    command = build_layer.pip_command(Path("/out"), arch)
    platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert platforms == [f"manylinux2014_{machine}", f"manylinux_2_28_{machine}"]
    assert command[command.index("--python-version") + 1] == "3.12"
    assert command[command.index("--target") + 1] == "/out"
    assert command[command.index("-r") + 1] == str(cfn.ROOT / "layers" / "requirements.txt")
    assert command.count("-r") == 1
    assert {"--only-binary=:all:", "--no-deps", "--no-cache-dir"} <= set(command)


def test_a_pipelines_extra_requirements_come_on_top_by_file_name() -> None:
    command = build_layer.pip_command(Path("/out"), "x86_64",
                                      extra=("requirements-text.txt", "requirements-numpy.txt"))
    files = [command[i + 1] for i, arg in enumerate(command) if arg == "-r"]
    layers = cfn.ROOT / "layers"
    assert files == [str(layers / n) for n in
                     ("requirements.txt", "requirements-text.txt", "requirements-numpy.txt")]
    with pytest.raises(SystemExit, match="no requirements file"):
        build_layer.pip_command(Path("/out"), "x86_64", extra=("requirements-nope.txt",))


def test_runtime_requirements_are_the_c_library_and_yyjson_and_numpy_is_an_option() -> None:
    def pins(name: str) -> set[str]:
        text = (cfn.ROOT / "layers" / name).read_text()
        return {line.split("==")[0] for line in text.splitlines()
                if line.strip() and not line.startswith("#")}

    assert pins("requirements.txt") == {"onnxruntime", "yyjson"}  # handler/json_codec.py
    assert pins("requirements-numpy.txt") == {"numpy"}
    assert pins("requirements-text.txt") == {"tokenizers", "jinja2", "markupsafe"}
    assert build_layer.pinned_version(build_layer.REQUIREMENTS) == "1.32.0"


def write_manifest(folder: Path, **fields: str) -> None:
    manifest = {"name": "m", "model": "model.opt.onnx", "portable": "model.onnx",
                "onnxruntime": "1.32.0", "optimization": "extended"} | fields
    make_tree(folder, ("model.onnx", "model.opt.onnx", "tokenizer.json"))
    (folder / "model.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(("fields", "left"), [
    ({}, ["model.json", "model.opt.onnx", "tokenizer.json"]),  # pinned version: portable goes
    ({"onnxruntime": "1.31.0"}, ["model.json", "model.onnx", "model.opt.onnx", "tokenizer.json"]),
    ({"model": "model.onnx"}, ["model.json", "model.onnx", "model.opt.onnx", "tokenizer.json"]),
])
def test_prune_model_keeps_the_portable_copy_only_where_the_runtime_can_fall_back(
        tmp_path: Path, fields: dict[str, str], left: list[str]) -> None:
    write_manifest(tmp_path, **fields)
    freed = build_layer.prune_model(tmp_path, "1.32.0")
    assert sorted(p.name for p in tmp_path.iterdir()) == left
    assert freed == (100 if len(left) == 3 else 0)


def test_layer_over_250_mb_unzipped_is_refused() -> None:
    build_layer.check_layer_size(250 * build_layer.MB)
    with pytest.raises(SystemExit, match="250 MB"):
        build_layer.check_layer_size(250 * build_layer.MB + 1)


def test_layer_build_prunes_measures_and_zips(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_layer, "install",
                        lambda target, arch, extra=(): make_tree(target, KEPT + PRUNED))
    archive = tmp_path / "layer.zip"
    size = build_layer.build_layer(tmp_path / "out", "x86_64", archive)
    assert size == 100 * len(KEPT)
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == sorted(f"python/{rel}" for rel in KEPT)


@pytest.mark.parametrize(("budget_mb", "status"), [(4, 0), (0.001, 1)])  # the code is ~1 MB
def test_image_size_measures_the_assembled_task_root_and_fails_over_its_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        budget_mb: float, status: int) -> None:
    monkeypatch.setattr(build_layer, "install",
                        lambda target, arch, extra=(): make_tree(target, KEPT + PRUNED))
    model = tmp_path / "model"
    write_manifest(model)
    code = build_layer.main(["image-size", "--model", str(model), "--budget-mb", str(budget_mb)])
    assert code == status
    out = capsys.readouterr().out
    sizes = {line.split(":")[0].strip() for line in out.splitlines()}
    assert sizes == {"dependencies", "model", "code", "total"}


def test_image_report_is_the_task_root_the_dockerfile_assembles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_layer, "install",
                        lambda target, arch, extra=(): make_tree(target, KEPT + PRUNED))
    model = tmp_path / "digits"
    write_manifest(model)
    seen: dict[str, set[str]] = {}
    real_tree_size = build_layer.tree_size

    def spy(root: Path) -> int:
        if (root / "models").is_dir() or root.name in ("models", "handler"):  # not prune's
            seen[root.name] = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
        return real_tree_size(root)

    monkeypatch.setattr(build_layer, "tree_size", spy)
    report = build_layer.image_report("x86_64", model, cfn.ROOT / "handler")
    (root,) = set(seen) - {"models", "handler"}
    dependencies = {name for name in seen[root] if not name.startswith(("models/", "handler/"))}
    assert {n for n in dependencies if "__pycache__" not in n} == set(KEPT)  # pruned as the layer
    shipped = seen["models"]
    assert shipped == {"digits/model.json", "digits/model.opt.onnx", "digits/tokenizer.json"}
    assert report["model"] == real_tree_size(model) - 100  # one model file, not two
    code = seen["handler"]
    assert "app.py" in code and "Dockerfile" not in code
    assert any(name.endswith(".pyc") for name in code)  # byte-compiled, as in the image
    assert report["total"] == sum(v for k, v in report.items() if k != "total")


def test_image_size_also_checks_the_250_mb_zip_and_layer_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    big = {"dependencies": 251 * build_layer.MB, "model": 0, "code": 0,
           "total": 251 * build_layer.MB}
    monkeypatch.setattr(build_layer, "image_report", lambda *args: big)
    model = tmp_path / "model"
    model.mkdir()
    assert build_layer.main(["image-size", "--model", str(model), "--budget-mb", "1000"]) == 1
    assert "250 MB" in capsys.readouterr().err


def test_code_copies_a_function_package_as_it_ships(tmp_path: Path) -> None:
    """layers/Makefile's copy of handler/ and warmer/: no Dockerfile, no bytecode caches."""
    for package in ("handler", "warmer"):
        dest = tmp_path / package
        for _ in range(2):  # again into the same folder, as a second `make` would
            assert build_layer.main(["code", str(cfn.ROOT / package), str(dest)]) == 0
        shipped = {str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()}
        sources = {str(p.relative_to(cfn.ROOT / package))
                   for p in (cfn.ROOT / package).rglob("*.py")}
        assert sources <= shipped, sources - shipped
        assert not [n for n in shipped if n.endswith((".pyc", "Dockerfile"))], shipped
