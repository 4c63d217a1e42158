"""The corpus fetcher's cache and checks (a wheel made here; no network, no pip) and the
served-vs-reference error measure."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks.corpus import fetch, registry, serving
from benchmarks.corpus.registry import Wheel

PAYLOAD = b"not really onnx, but bytes with a known digest"


def _wheel(cache: Path, path: str = "demo_pkg/models/m.onnx", data: bytes = PAYLOAD) -> None:
    folder = cache / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "demo_pkg-1.0-py3-none-any.whl", "w") as zipped:
        zipped.writestr(path, data)


DEMO = Wheel("demo-pkg", "1.0", "demo_pkg/models/m.onnx", hashlib.sha256(PAYLOAD).hexdigest(), 0)


def test_extracts_checks_and_then_runs_from_the_cache(tmp_path: Path) -> None:
    _wheel(tmp_path)
    path = fetch.extract(DEMO, tmp_path)
    assert path.read_bytes() == PAYLOAD and fetch.sha256(path) == DEMO.sha256
    (tmp_path / "wheels" / "demo_pkg-1.0-py3-none-any.whl").unlink()
    assert fetch.extract(DEMO, tmp_path) == path  # offline: the extracted file is enough


def test_a_wrong_digest_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    _wheel(tmp_path, data=b"tampered")
    with pytest.raises(fetch.FetchError, match="sha256"):
        fetch.extract(DEMO, tmp_path)
    assert not (tmp_path / "models").exists()


def test_a_wheel_without_the_file_is_refused(tmp_path: Path) -> None:
    _wheel(tmp_path, path="demo_pkg/other.onnx")
    with pytest.raises(fetch.FetchError, match=r"has no demo_pkg/models/m\.onnx"):
        fetch.extract(DEMO, tmp_path)


def test_a_changed_cached_file_is_extracted_again(tmp_path: Path) -> None:
    _wheel(tmp_path)
    path = fetch.extract(DEMO, tmp_path)
    path.write_bytes(b"corrupted")
    assert fetch.extract(DEMO, tmp_path).read_bytes() == PAYLOAD


def test_cache_location() -> None:
    assert fetch.cache_dir({fetch.CACHE_VARIABLE: "/somewhere"}) == Path("/somewhere")
    assert fetch.cache_dir({}).name == "onnx-lambda-corpus"


def test_registry_is_complete() -> None:
    assert len({m.name for m in registry.MODELS}) == len(registry.MODELS)
    real = [m for m in registry.MODELS if m.derive is None]
    assert len(real) >= 6
    for model in real:
        assert model.wheel is not None and len(model.wheel.sha256) == 64
    wheels = {(m.wheel.package, m.wheel.version): m.wheel.wheel_mb
              for m in registry.MODELS if m.wheel is not None}
    assert sum(wheels.values()) < 80  # the download budget


@pytest.mark.parametrize(("expected", "got", "error"), [
    (np.array([1.0, -2.0]), np.array([1.0, -2.0]), 0.0),
    (np.array([1.0, -2.0]), np.array([1.0, -1.998]), 0.001),  # relative to the output's scale
    (np.array([1.0]), np.array([[1.0]]), float("inf")),  # a shape change is never close
    (np.array([3], np.int64), np.array([3.0]), 0.0),
    (np.array([3], np.int64), np.array([4]), 1.0),  # integers: exact
    (np.array(["setosa"], object), ["setosa"], 0.0),
    (np.array(["setosa"], object), ["virginica"], 1.0),  # strings: exact
    ([{"a": np.float32(0.25)}], [{"a": 0.25}], 0.0),  # sequence of maps: by key
    ([{"a": 0.25}], [{"b": 0.25}], 1.0),
    ([{"a": 0.25}], [], 1.0),
])
def test_error_measure(expected: object, got: object, error: float) -> None:
    assert serving.error(expected, got) == pytest.approx(error)


def test_an_installed_distribution_at_that_version_is_read_without_a_download(
        tmp_path: Path) -> None:
    import onnxruntime

    path = Path(onnxruntime.__file__).parent / "datasets" / "mul_1.onnx"
    wheel = Wheel("onnxruntime", onnxruntime.__version__, "onnxruntime/datasets/mul_1.onnx",
                  fetch.sha256(path), 0)
    assert fetch.extract(wheel, tmp_path).read_bytes() == path.read_bytes()
    assert not (tmp_path / "wheels").exists()  # no pip download was attempted
