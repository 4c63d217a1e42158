"""The handler (C-API runtime, numpy-free codecs) answers exactly what onnxruntime's Python API
computes on the same inputs: bit for bit for float outputs (their JSON text reads back as the
same float32), through simple JSON, V2 JSON and binary and ``.npy``; ORT failures at run time
are a 500 with ORT's first line, and the environment keeps serving."""

from __future__ import annotations

import base64
import io
import json
import resource
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from tests.functional.test_handler_errors import call, http_event
from tests.support import models

V2 = "/v2/models/{}/infer"
DTYPES = list(models.ONNX_TYPES)


def _python_api(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, Any]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def _values(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.integers(0, 2, shape).astype(bool))
    if dtype.startswith("float"):
        return np.asarray((rng.standard_normal(shape) * 1000).astype(dtype))
    info = np.iinfo(dtype)
    return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))


def _same(got: Any, want: np.ndarray) -> None:
    """A JSON value equals the Python API's array exactly (floats as their own dtype)."""
    back = np.asarray(got, dtype=want.dtype).reshape(want.shape)
    assert back.tobytes() == want.tobytes()


def _v2_binary(name: str, items: list[tuple[str, np.ndarray]]) -> dict[str, Any]:
    datatypes = {"float32": "FP32", "float64": "FP64", "float16": "FP16", "bool": "BOOL"}
    header, chunks = [], []
    for input_name, array in items:
        data = array.tobytes()
        datatype = datatypes.get(array.dtype.name, array.dtype.name.upper())
        header.append({"name": input_name, "shape": list(array.shape), "datatype": datatype,
                       "parameters": {"binary_data_size": len(data)}})
        chunks.append(data)
    head = json.dumps({"inputs": header, "parameters": {"binary_data_output": True}}).encode()
    return http_event(path=V2.format(name), body=head + b"".join(chunks), headers={
        "content-type": "application/octet-stream",
        "inference-header-content-length": str(len(head))})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 5])
def test_every_dtype_and_rank_through_every_codec(tmp_path: Path, make_service: Callable,
                                                  dtype: str, rank: int) -> None:
    path = models.identity(tmp_path / f"id_{dtype}.onnx", dtype, rank)
    service = make_service(path)
    x = _values(dtype, (2, 1, 3, 1, 2)[:rank])
    want = _python_api(path, {"x": x})["y"]
    status, body, _ = call(service, http_event(body=json.dumps({"inputs": {"x": x.tolist()}})))
    assert status == 200, body
    _same(body["outputs"]["y"], want)
    result = service(_v2_binary(path.stem, [("x", x)]), None)
    raw = base64.b64decode(result["body"])
    cut = int(result["headers"]["inference-header-content-length"])
    assert raw[cut:] == want.tobytes()
    if rank:  # .npy both ways (numpy's own writer and reader as the client)
        buffer = io.BytesIO()
        np.save(buffer, x)
        result = service(http_event(body=buffer.getvalue(), headers={
            "content-type": "application/x-npy", "accept": "application/x-npy"}), None)
        got = np.load(io.BytesIO(base64.b64decode(result["body"])))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_float32_json_is_the_shortest_text_and_exact(tmp_path: Path,
                                                     make_service: Callable) -> None:
    path = models.linear(tmp_path / "linear.onnx")
    x = (np.random.default_rng(3).standard_normal((64, 4)) / 7).astype(np.float32)
    want = _python_api(path, {"x": x})["y"]
    text = make_service(path)(http_event(body=json.dumps({"inputs": x.tolist()})), None)["body"]
    _same(json.loads(text)["outputs"]["y"], want)
    shortest = ",".join(np.format_float_positional(v, unique=True, trim="-")
                        for v in want.ravel())
    digits = sum(c.isdigit() for c in shortest)
    assert sum(c.isdigit() for c in text) <= digits + 40  # "outputs", "y": a few more
    assert len(text) < len(json.dumps(want.tolist())) * 0.7


def test_multi_io_scalars_strings_and_maps(tmp_path: Path, make_service: Callable) -> None:
    path = models.multi_io(tmp_path / "multi.onnx")
    a, ids = _values("float32", (3, 3)), _values("int64", (3, 2)) // 4
    want = _python_api(path, {"a": a, "ids": ids})
    _, body, _ = call(make_service(path), http_event(body=json.dumps(
        {"inputs": {"a": a.tolist(), "ids": ids.tolist()}})))
    for name, value in want.items():
        _same(body["outputs"][name], value)

    path = models.scalar_io(tmp_path / "scalar.onnx")
    x, sr = _values("float32", (40,)), np.array(3, dtype=np.int64)
    want = _python_api(path, {"x": x, "sr": sr})
    _, body, _ = call(make_service(path), http_event(body=json.dumps(
        {"inputs": {"x": x.tolist(), "sr": 3}})))
    for name, value in want.items():
        _same(body["outputs"][name], value)

    path = models.strings(tmp_path / "strings.onnx")
    words = np.array(["héllo", "", "✓ wörld"], dtype=object)
    want = _python_api(path, {"text": words})["same"]
    _, body, _ = call(make_service(path), http_event(body=json.dumps(
        {"inputs": words.tolist()})))
    assert body["outputs"]["same"] == want.tolist()

    path = models.zipmap(tmp_path / "zip.onnx", ["a", "b", "c"])
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], dtype=np.float32)
    want = _python_api(path, {"probs": probs})
    _, body, _ = call(make_service(path), http_event(body=json.dumps(
        {"inputs": probs.tolist()})))
    assert body["outputs"]["zipped"] == [{k: float(v) for k, v in row.items()}
                                         for row in want["zipped"]]
    _same(body["outputs"]["probs_out"], want["probs_out"])


def test_an_ort_failure_is_a_500_with_its_first_line_and_the_next_request_works(
        tmp_path: Path, make_service: Callable) -> None:
    service = make_service(models.gather(tmp_path / "gather.onnx"))
    status, body, _ = call(service, http_event(body=json.dumps({"inputs": [7]})))
    assert status == 500 and body["error"]["type"] == "InferenceFailed"
    message = body["error"]["message"]
    assert message.startswith("inference failed: ") and "\n" not in message
    assert "out of bounds" in message or "indices" in message
    status, body, _ = call(service, http_event(body=json.dumps({"inputs": [2]})))
    assert (status, body["outputs"]["value"]) == (200, [30.0])


def _rss_kb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() // 1024


def test_long_run_memory_stays_flat(tmp_path: Path, make_service: Callable) -> None:
    """100k warm requests through ``Service`` (JSON, V2 binary, .npy, errors): every OrtValue
    and pinned buffer is released, so resident memory does not grow."""
    path = models.multi_io(tmp_path / "multi.onnx")
    service = make_service(path, metrics="false", log_level="error")
    a, ids = np.ones((2, 3), np.float32), np.ones((2, 2), np.int64)
    direct = {"inputs": {"a": a.tolist(), "ids": ids.tolist()}}
    binary = _v2_binary(path.stem, [("a", a), ("ids", ids)])
    bad = {"inputs": {"a": a.tolist(), "ids": [[1.5, 2], [3, 4]]}}
    events = [direct] * 8 + [binary, bad]
    for event in events * 200:  # warm: arenas, caches and interned strings settle
        service(event, None)
    before = _rss_kb()
    for _ in range(10_000):
        for event in events:
            service(event, None)
    grown = _rss_kb() - before
    assert grown < 4096, f"RSS grew {grown} kB over 100k requests"
    assert struct.calcsize("P") == 8  # the layout the binding assumes (64-bit)
