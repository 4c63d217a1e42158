"""Rank-0 tensors in and out of every codec, output dims that are expressions or generated names
(never validated), and symbolic names kept where users read the signature."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.codecs.v2 import HEADER_LENGTH
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support import models

X = [1.0, 2.0, 3.0]


@pytest.fixture(scope="module")
def scalar_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.scalar_io(tmp_path_factory.mktemp("scalar") / "scalar_io.onnx")


@pytest.fixture
def service(make_service: Any, scalar_model: Path) -> Any:
    return make_service(scalar_model)


def answer(service: Any, event: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    result = service(event, Context())
    raw = result["body"]
    body = base64.b64decode(raw) if result["isBase64Encoded"] else raw.encode()
    return result["statusCode"], result["headers"], body


def test_simple_json_scalar_in_and_out(service: Any) -> None:
    status, _, body = answer(service, http_event(
        body=json.dumps({"inputs": {"x": X, "sr": 16000}})))
    assert status == 200, body
    outputs = json.loads(body)["outputs"]
    assert outputs["sr_out"] == 16000  # a scalar, not [16000]
    assert outputs["y"] == [16000.0, 32000.0, 48000.0]
    assert outputs["copy"] == X  # its declared dim "floor(n/32)" is never checked


def test_simple_json_refuses_a_list_for_a_scalar(service: Any) -> None:
    status, _, body = answer(service, http_event(
        body=json.dumps({"inputs": {"x": X, "sr": [16000]}})))
    assert status == 400
    assert "sr: int64[]" in json.loads(body)["error"]["message"]


def v2_body(binary_outputs: bool) -> dict[str, Any]:
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": X},
                       {"name": "sr", "datatype": "INT64", "shape": [], "data": [16000]}],
            "parameters": {"binary_data_output": binary_outputs}}


def test_v2_json_scalar_in_and_out(service: Any) -> None:
    status, _, body = answer(service, http_event(path="/v2/models/scalar_io/infer",
                                                 body=json.dumps(v2_body(False))))
    assert status == 200, body
    outputs = {o["name"]: o for o in json.loads(body)["outputs"]}
    assert outputs["sr_out"] == {"name": "sr_out", "datatype": "INT64", "shape": [],
                                 "data": [16000]}
    assert outputs["copy"]["shape"] == [3] and outputs["copy"]["data"] == X


def test_v2_binary_scalar_in_and_out(service: Any) -> None:
    header = json.dumps({
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [3],
                    "parameters": {"binary_data_size": 12}},
                   {"name": "sr", "datatype": "INT64", "shape": [],
                    "parameters": {"binary_data_size": 8}}],
        "outputs": [{"name": "sr_out", "parameters": {"binary_data": True}},
                    {"name": "y", "parameters": {"binary_data": True}}]}).encode()
    payload = header + np.array(X, "<f4").tobytes() + np.array(8000, "<i8").tobytes()
    status, headers, body = answer(service, http_event(
        path="/v2/models/scalar_io/infer", body=payload,
        headers={HEADER_LENGTH: str(len(header)), "content-type": "application/octet-stream"}))
    assert status == 200, body
    cut = int(headers[HEADER_LENGTH])
    items = json.loads(body[:cut])["outputs"]
    assert [(o["name"], o["shape"], o["parameters"]["binary_data_size"]) for o in items] == [
        ("sr_out", [], 8), ("y", [3], 12)]
    assert np.frombuffer(body[cut:cut + 8], "<i8").tolist() == [8000]
    assert np.frombuffer(body[cut + 8:], "<f4").tolist() == [8000.0, 16000.0, 24000.0]


@pytest.fixture
def scalar_identity(make_service: Any, tmp_path: Path) -> Any:
    return make_service(models.identity(tmp_path / "identity_int64.onnx", "int64", 0))


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


@pytest.mark.parametrize("accept", ["application/x-npy", "application/json"])
def test_npy_scalar_in_and_out(scalar_identity: Any, accept: str) -> None:
    status, headers, body = answer(scalar_identity, http_event(
        body=npy(np.array(42, dtype=np.int64)),
        headers={"content-type": "application/x-npy", "accept": accept}))
    assert (status, headers["content-type"]) == (200, accept), body
    if accept == "application/x-npy":
        out = np.load(io.BytesIO(body), allow_pickle=False)
        assert (out.shape, out.dtype, int(out)) == ((), np.dtype(np.int64), 42)
    else:
        assert json.loads(body) == {"outputs": {"y": 42}}


def test_health_and_errors_keep_symbolic_names(service: Any) -> None:
    status, _, body = answer(service, http_event("GET", "/health", ""))
    health = json.loads(body)
    assert status == 200
    assert health["inputs"] == ["x: float32[?]", "sr: int64[]"]
    assert health["outputs"] == ["y: float32[unk__5]", "sr_out: int64[]",
                                 "copy: float32[floor(n/32)]"]


def test_v2_metadata_uses_minus_one_for_every_dynamic_dim(service: Any) -> None:
    status, _, body = answer(service, http_event("GET", "/v2/models/scalar_io", ""))
    meta = json.loads(body)
    assert status == 200
    assert [(t["name"], t["shape"]) for t in meta["inputs"] + meta["outputs"]] == [
        ("x", [-1]), ("sr", []), ("y", [-1]), ("sr_out", []), ("copy", [-1])]
