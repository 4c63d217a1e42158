"""Open Inference Protocol V2: JSON and binary-tensor requests, metadata, health routes."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import numpy as np
import pytest

from handler.codecs.v2 import HEADER_LENGTH
from handler.ort.tensor import as_tensor
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event


@pytest.fixture
def multi(make_service: Any, model_dir: Any) -> Any:
    return make_service(model_dir / "multi_io.onnx")


def infer(service: Any, body: bytes | str, headers: dict[str, str] | None = None,
          model: str = "multi_io") -> dict[str, Any]:
    return service(http_event(path=f"/v2/models/{model}/infer", body=body, headers=headers),
                   Context())


A = np.array([[1.0, 2.0, 3.5], [0.5, 0.25, 4.0]], dtype=np.float32)
IDS = np.array([[1, 2], [3, -4]], dtype=np.int64)


def test_json_request_json_response(multi: Any) -> None:
    body = {"id": "r1", "inputs": [
        {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": A.ravel().tolist()},
        {"name": "ids", "datatype": "INT64", "shape": [2, 2], "data": IDS.tolist()}]}
    result = infer(multi, json.dumps(body))
    answer = json.loads(result["body"])
    assert answer["id"] == "r1" and answer["model_name"] == "multi_io"
    outputs = {o["name"]: o for o in answer["outputs"]}
    assert outputs["total"]["datatype"] == "FP32" and outputs["total"]["shape"] == [2, 1]
    np.testing.assert_allclose(outputs["total"]["data"], A.sum(axis=1))
    assert outputs["doubled"]["data"] == (IDS * 2).ravel().tolist()


def test_binary_request_binary_response(multi: Any) -> None:
    header = json.dumps({"inputs": [
        {"name": "a", "datatype": "FP32", "shape": [2, 3],
         "parameters": {"binary_data_size": A.nbytes}},
        {"name": "ids", "datatype": "INT64", "shape": [2, 2],
         "parameters": {"binary_data_size": IDS.nbytes}}],
        "outputs": [{"name": "doubled", "parameters": {"binary_data": True}}]}).encode()
    body = header + A.tobytes() + IDS.tobytes()
    result = infer(multi, body, {HEADER_LENGTH: str(len(header)),
                                 "content-type": "application/octet-stream"})
    assert result["statusCode"] == 200 and result["isBase64Encoded"] is True
    raw = base64.b64decode(result["body"])
    cut = int(result["headers"][HEADER_LENGTH])
    answer = json.loads(raw[:cut])
    (out,) = answer["outputs"]
    assert out["name"] == "doubled" and out["parameters"]["binary_data_size"] == IDS.nbytes
    np.testing.assert_array_equal(np.frombuffer(raw[cut:], "<i8").reshape(2, 2), IDS * 2)


def test_binary_overrun_is_400(multi: Any) -> None:
    header = json.dumps({"inputs": [{"name": "a", "datatype": "FP32", "shape": [2, 3],
                                     "parameters": {"binary_data_size": 999}}]}).encode()
    result = infer(multi, header + b"\0" * 8, {HEADER_LENGTH: str(len(header))})
    assert result["statusCode"] == 400


def test_bytes_elements_are_length_prefixed() -> None:
    from handler.codecs.v2 import _from_bytes, _to_bytes

    values = as_tensor(np.array(["héllo", "", "x"], dtype=object))
    raw = _to_bytes(values, "BYTES")
    assert raw[:4] == struct.pack("<I", len("héllo".encode()))
    assert _from_bytes(raw, "BYTES", 3, "s", [3]).tolist() == values.tolist()


@pytest.mark.parametrize(("change", "kind"), [
    ({"datatype": "FP99"}, "InvalidInput"),
    ({"shape": [2, 2]}, "InvalidInput"),
    ({"name": "zzz"}, "InvalidInput"),
    ({"shape": "2x3"}, "InvalidInput"),
])
def test_v2_input_errors(multi: Any, change: dict[str, Any], kind: str) -> None:
    good = {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": A.ravel().tolist()}
    ids = {"name": "ids", "datatype": "INT64", "shape": [2, 2], "data": IDS.ravel().tolist()}
    result = infer(multi, json.dumps({"inputs": [{**good, **change}, ids]}))
    assert result["statusCode"] == 400
    answer = json.loads(result["body"])
    assert isinstance(answer["error"], str) and answer["type"] == kind
    assert result["headers"]["x-error-type"] == kind


def test_missing_input_names_what_is_missing(multi: Any) -> None:
    body = {"inputs": [{"name": "a", "datatype": "FP32", "shape": [2, 3],
                        "data": A.ravel().tolist()}]}
    answer = json.loads(infer(multi, json.dumps(body))["body"])
    assert "'ids'" in answer["error"]


def test_metadata_and_health(multi: Any) -> None:
    meta = json.loads(multi(http_event("GET", "/v2/models/multi_io", ""), Context())["body"])
    assert meta["name"] == "multi_io"
    assert meta["inputs"] == [{"name": "a", "datatype": "FP32", "shape": [-1, 3]},
                              {"name": "ids", "datatype": "INT64", "shape": [-1, 2]}]
    for path in ("/v2/health/ready", "/v2/health/live", "/v2/models/multi_io/ready", "/v2"):
        assert multi(http_event("GET", path, ""), Context())["statusCode"] == 200, path
    assert multi(http_event("GET", "/v2/models/nope", ""), Context())["statusCode"] == 404


def test_model_name_setting_names_the_v2_routes(make_service: Any, model_dir: Any) -> None:
    """``ONNX_LAMBDA_MODEL_NAME`` replaces the file stem in every name the function answers."""
    named = make_service(model_dir / "multi_io.onnx", model_name="ranker")
    meta = json.loads(named(http_event("GET", "/v2/models/ranker", ""), Context())["body"])
    assert meta["name"] == "ranker"
    assert named(http_event("GET", "/v2/models/multi_io", ""), Context())["statusCode"] == 404
    health = json.loads(named(http_event("GET", "/health", ""), Context())["body"])
    assert health["model"] == "ranker"


def test_direct_invocation_of_a_v2_request(multi: Any) -> None:
    event = {"inputs": [
        {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": A.ravel().tolist()},
        {"name": "ids", "datatype": "INT64", "shape": [2, 2], "data": IDS.ravel().tolist()}],
        "parameters": {"binary_data_output": True}}
    answer = multi(event, Context())
    assert {o["name"] for o in answer["outputs"]} == {"total", "doubled"}
    assert all("data" in o for o in answer["outputs"])  # JSON only when invoked directly


def v2_error(result: dict[str, Any]) -> tuple[int, str, str]:
    body = json.loads(result["body"])
    assert set(body) == {"error", "type", "requestId"} and isinstance(body["error"], str)
    return result["statusCode"], body["type"], body["error"]


@pytest.mark.parametrize(("name", "datatype", "expected"), [
    ("a", "FP64", "FP32"), ("a", "FP16", "FP32"), ("a", "INT64", "FP32"), ("a", "BYTES", "FP32"),
    ("ids", "INT32", "INT64"), ("ids", "FP32", "INT64"), ("ids", "UINT64", "INT64"),
])
@pytest.mark.parametrize("binary", [False, True])
def test_datatype_labels_are_enforced_as_triton_does(multi: Any, name: str, datatype: str,
                                                     expected: str, binary: bool) -> None:
    from handler.model import DATATYPES

    values = {"a": A, "ids": IDS}
    inputs, chunks = [], []
    for input_name, value in values.items():
        label = datatype if input_name == name else ("FP32" if input_name == "a" else "INT64")
        item: dict[str, Any] = {"name": input_name, "datatype": label, "shape": list(value.shape)}
        if binary:
            raw = (value.astype(DATATYPES[label]).tobytes() if label != "BYTES"
                   else b"".join(struct.pack("<I", 1) + b"1" for _ in value.flat))
            item["parameters"] = {"binary_data_size": len(raw)}
            chunks.append(raw)
        else:
            item["data"] = (value.astype(DATATYPES[label]).ravel().tolist() if label != "BYTES"
                            else ["1"] * value.size)
        inputs.append(item)
    header = json.dumps({"inputs": inputs}).encode()
    result = infer(multi, header + b"".join(chunks),
                   {HEADER_LENGTH: str(len(header))} if binary else None)
    status, kind, message = v2_error(result)
    assert (status, kind) == (400, "InvalidInput")
    assert f"input {name!r}: expected datatype {expected}, got {datatype}" in message


@pytest.mark.parametrize(("datatype", "data"), [
    ("INT64", [1.5, 2, 3, 4]),  # would truncate to 1
    ("INT64", [2**63, 2, 3, 4]),  # out of range
    ("INT64", ["1", "2", "3", "4"]),
    ("INT64", [None, 2, 3, 4]),
])
def test_json_data_must_fit_its_datatype_exactly(multi: Any, datatype: str,
                                                 data: list[Any]) -> None:
    body = {"inputs": [
        {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": A.ravel().tolist()},
        {"name": "ids", "datatype": datatype, "shape": [2, 2], "data": data}]}
    status, kind, message = v2_error(infer(multi, json.dumps(body)))
    assert (status, kind) == (400, "InvalidInput") and "'ids'" in message


def test_fp32_data_as_strings_is_refused(multi: Any) -> None:
    body = {"inputs": [
        {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": ["1.5"] * 6},
        {"name": "ids", "datatype": "INT64", "shape": [2, 2], "data": IDS.ravel().tolist()}]}
    status, kind, message = v2_error(infer(multi, json.dumps(body)))
    assert (status, kind) == (400, "InvalidInput") and "a: float32[batch, 3]" in message


def test_every_v2_route_error_has_the_protocol_shape(multi: Any) -> None:
    for method, path in (("GET", "/v2/models/nope"), ("GET", "/v2/models/nope/ready"),
                         ("POST", "/v2/health/live"), ("GET", "/v2/nothing"),
                         ("POST", "/v2/models/multi_io/infer")):
        result = multi(http_event(method, path, "{not json"), Context("r9"))
        status, kind, message = v2_error(result)
        assert 400 <= status < 500 and message and result["headers"]["x-error-type"] == kind
        assert json.loads(result["body"])["requestId"] == "r9"


def test_live_answers_live(multi: Any) -> None:
    result = multi(http_event("GET", "/v2/health/live", ""), Context())
    assert json.loads(result["body"]) == {"live": True}
