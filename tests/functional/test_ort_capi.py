"""The C-API binding (``handler.ort``) against onnxruntime's Python API on the same models:
signatures (names, types, symbolic dims, non-tensor types), outputs bit for bit, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from handler.ort import capi
from handler.ort.session import Session
from handler.ort.tensor import Tensor, as_tensor, from_values, zeros
from tests.support import models

DTYPES = list(models.ONNX_TYPES)


def _python_session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _ours(path: Path) -> Session:
    return Session(str(path), intra_op_threads=1,
                   config={"session.intra_op.allow_spinning": "0"})


def _assert_same_signature(ours: Session, theirs: ort.InferenceSession) -> None:
    for mine, args in ((ours.inputs, theirs.get_inputs()), (ours.outputs, theirs.get_outputs())):
        assert [(v.name, v.type) for v in mine] == [(a.name, a.type) for a in args]
        for value, arg in zip(mine, args, strict=True):
            if value.type.startswith("tensor("):
                assert list(value.shape) == list(arg.shape), value


def _random(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def test_version_and_status_round_trip() -> None:
    api = capi.api()
    assert api.version == ort.__version__
    status = api.CreateStatus(6, b"a message from here")
    with pytest.raises(capi.OrtError, match="a message from here") as caught:
        api.check(status)  # releases it
    assert caught.value.code == 6


def test_library_found_without_the_binding(tmp_path: Path) -> None:
    assert capi.find_library().rsplit("/", 1)[-1].startswith("libonnxruntime.so.")
    with pytest.raises(capi.LibraryError, match="pip install onnxruntime"):
        capi.find_library([str(tmp_path)])


def test_a_library_older_than_the_api_version_fails_clearly(monkeypatch: Any) -> None:
    monkeypatch.setattr(capi, "API_VERSION", 10_000)
    with pytest.raises(capi.LibraryError, match="does not offer C API version 10000"):
        capi.Api(capi.find_library())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 3, 5])
def test_every_dtype_and_rank_matches_the_python_api(tmp_path: Path, dtype: str,
                                                     rank: int) -> None:
    path = models.identity(tmp_path / "id.onnx", dtype, rank)
    ours, theirs = _ours(path), _python_session(path)
    _assert_same_signature(ours, theirs)
    array = np.asarray(_random(dtype, (2, 3, 1, 2, 2)[:rank]))
    got = ours.run({"x": array})["y"]
    want = theirs.run(None, {"x": array})[0]
    assert (got.dtype, got.shape) == (want.dtype.name, want.shape)
    assert got.data == want.tobytes()  # bit for bit
    assert got.tolist() == want.tolist()
    assert np.array_equal(got.numpy(), want)


def test_empty_tensors_and_zero_copy_inputs(tmp_path: Path) -> None:
    path = models.multi_io(tmp_path / "m.onnx")
    ours = _ours(path)
    out = ours.run({"a": zeros("float32", (0, 3)), "ids": zeros("int64", (0, 2))})
    assert (out["total"].shape, out["total"].tolist()) == ((0, 1), [])
    body = bytearray(np.arange(6, dtype=np.float32).tobytes())
    views = {"a": Tensor("float32", (2, 3), memoryview(bytes(body))),  # read-only: pinned
             "ids": from_values("int64", (2, 2), [1, 2, 3, 4])}
    out = ours.run(views)
    assert out["total"].tolist() == [[3.0], [12.0]]
    assert out["doubled"].tolist() == [[2, 4], [6, 8]]


def test_string_tensors_both_ways(tmp_path: Path) -> None:
    path = models.strings(tmp_path / "s.onnx")
    ours, theirs = _ours(path), _python_session(path)
    _assert_same_signature(ours, theirs)
    words = ["héllo", "", "wörld ✓"]
    got = ours.run({"text": Tensor("string", (3,), tuple(words))})["same"]
    assert got.tolist() == theirs.run(None, {"text": np.array(words, dtype=object)})[0].tolist()


@pytest.mark.parametrize("labels", [[0, 1, 2], ["a", "b", "c"]])
def test_sequence_of_maps_like_a_zipmap_classifier(tmp_path: Path, labels: list) -> None:
    path = models.zipmap(tmp_path / "zip.onnx", labels)
    ours, theirs = _ours(path), _python_session(path)
    _assert_same_signature(ours, theirs)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], dtype=np.float32)
    assert ours.run({"probs": probs})["zipped"] == theirs.run(None, {"probs": probs})[0]


def test_symbolic_and_anonymous_dims_as_the_python_api_reports_them(tmp_path: Path) -> None:
    path = models.scalar_io(tmp_path / "scalar.onnx")
    ours, theirs = _ours(path), _python_session(path)
    _assert_same_signature(ours, theirs)
    feeds = {"x": np.arange(5, dtype=np.float32), "sr": np.array(3, dtype=np.int64)}
    got, want = ours.run(feeds), theirs.run(None, feeds)
    assert [v.data for v in got.values()] == [w.tobytes() for w in want]
    assert got["sr_out"].tolist() == 3 and got["sr_out"].shape == ()


def test_external_data_and_ort_format_models(tmp_path: Path) -> None:
    source = onnx.load(models.linear(tmp_path / "linear.onnx"))
    onnx.save(source, tmp_path / "ext.onnx", save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.data", size_threshold=0)
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "linear.ort")
    options.add_session_config_entry("session.save_model_format", "ORT")
    ort.InferenceSession(str(tmp_path / "linear.onnx"), options,
                         providers=["CPUExecutionProvider"])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    want = _python_session(tmp_path / "linear.onnx").run(None, {"x": x})[0]
    for name in ("ext.onnx", "linear.ort"):
        got = _ours(tmp_path / name).run({"x": x})["y"]
        assert got.data == want.tobytes(), name


def test_errors_carry_ort_messages(tmp_path: Path) -> None:
    with pytest.raises(capi.OrtError, match=r"No such file|Load model"):
        _ours(tmp_path / "missing.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(capi.OrtError):
        _ours(tmp_path / "junk.onnx")
    ours = _ours(models.gather(tmp_path / "gather.onnx"))
    with pytest.raises(capi.OrtError, match=r"out of bounds|indices"):
        ours.run({"index": np.array([7], dtype=np.int64)})
    assert ours.run({"index": np.array([2], dtype=np.int64)})["value"].tolist() == [30.0]
    with pytest.raises(capi.OrtError, match="needs 16 bytes"):
        ours.run({"index": Tensor("int64", (2,), b"\0" * 8)})
    with pytest.raises(capi.OrtError, match="Unexpected input data type"):
        ours.run({"index": np.array([1.5], dtype=np.float32)})  # wrong element type


def test_non_contiguous_and_object_numpy_arrays_are_converted() -> None:
    array = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    tensor = as_tensor(array)
    assert (tensor.dtype, tensor.shape, tensor.tolist()) == ("int32", (3, 2), array.tolist())
    assert as_tensor(np.array(["a", b"b"], dtype=object)).data == ("a", "b")
    assert as_tensor(np.float16([1.5, -2])).tolist() == [1.5, -2.0]
    with pytest.raises(TypeError):
        as_tensor([1, 2])


def test_concurrent_runs_on_one_session_each_get_their_own_answer(tmp_path: Path) -> None:
    """A run's input/output slots are reused by later runs (a per-session free list): runs
    in several threads at once (ctypes releases the GIL inside ORT) must never see each
    other's values, and every output slot is NULL again before the next Run."""
    import threading

    session = _ours(models.multi_io(tmp_path / "m.onnx"))
    failures: list[str] = []

    def worker(seed: int) -> None:
        for i in range(300):
            rows = 1 + (seed + i) % 5  # shapes vary too: the shape cache is shared
            a = np.full((rows, 3), float(seed), dtype=np.float32)
            ids = np.full((rows, 2), seed * 1000 + i, dtype=np.int64)
            out = session.run({"a": as_tensor(a), "ids": as_tensor(ids)})
            if (out["total"].tolist() != [[seed * 3.0]] * rows
                    or out["doubled"].tolist() != [[2 * (seed * 1000 + i)] * 2] * rows):
                failures.append(f"thread {seed}, run {i}")
                return

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures[:3]
