"""The client's pure parts: Server-Timing parsing, telling API Gateway's throttle answer from
our errors, and V2 tensors through their binary and JSON forms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from onnx_lambda.client.errors import ClientError, ThrottledError, from_answer
from onnx_lambda.client.timing import parse_server_timing
from onnx_lambda.client.wire import HEADER_LENGTH, v2_request, v2_response


def test_server_timing_stages_and_cold_flag() -> None:
    stages, cold = parse_server_timing(
        'queue;dur=1.5, decode;dur=0.2, inference;dur=3, total;dur=3.4, init;dur=80.25, '
        'cold-start;desc="first request of this environment", bad;dur=x')
    assert stages == {"queue": 1.5, "decode": 0.2, "inference": 3.0, "total": 3.4, "init": 80.25}
    assert cold
    assert parse_server_timing(None) == ({}, False)
    assert parse_server_timing("total;dur=2") == ({"total": 2.0}, False)


@pytest.mark.parametrize(("status", "body", "headers", "throttled", "kind", "rid"), [
    (500, b'{"message":"Internal Server Error"}', {}, True, None, None),  # API Gateway's
    (429, b'{"message":"Too Many Requests"}', {}, True, None, None),
    (503, b'{"message":"Service Unavailable"}', {}, True, None, None),
    (500, b'{"error":{"type":"InferenceError","message":"boom"},"requestId":"r1"}',
     {"x-request-id": "r1"}, False, "InferenceError", "r1"),  # the function's own 500
    (400, b'{"error":"bad shape","type":"InvalidInput","requestId":"r2"}',
     {"x-error-type": "InvalidInput"}, False, "InvalidInput", "r2"),  # the /v2 shape
    (400, b'{"error":{"type":"BadRequest","message":"no"},"requestId":"r3"}', {}, False,
     "BadRequest", "r3"),
    (502, b"<html>bad gateway</html>", {}, False, None, None),  # not known to be safe
])
def test_errors_are_told_apart(status: int, body: bytes, headers: dict[str, str],
                               throttled: bool, kind: str | None, rid: str | None) -> None:
    error = from_answer(status, body, headers, attempts=1)
    assert isinstance(error, ClientError) and isinstance(error, ThrottledError) is throttled
    assert (error.status, error.type, error.request_id) == (status, kind, rid)


FEEDS = {"f": np.array([[1.5, -2.0]], dtype=np.float32), "i": np.array([7, -8], dtype=np.int64),
         "b": np.array([True, False]), "s": np.array([b"ab", b""], dtype=object)}


def echo(body: bytes, headers: dict[str, str], binary: bool) -> tuple[bytes, dict[str, str]]:
    """What a V2 server answers with the request's tensors as its outputs."""
    cut = int(headers[HEADER_LENGTH]) if binary else len(body)
    doc = json.loads(body[:cut])
    answer = {"outputs": doc["inputs"]}
    text = json.dumps(answer).encode()
    return (text + body[cut:], {HEADER_LENGTH: str(len(text))}) if binary else (text, {})


@pytest.mark.parametrize("binary", [True, False])
def test_v2_tensors_round_trip(binary: bool) -> None:
    body, headers = v2_request(FEEDS, binary=binary)
    assert (HEADER_LENGTH in headers) is binary
    out = v2_response(*echo(body, headers, binary))
    for name, array in FEEDS.items():
        got = out[name]
        if name == "s":
            got = np.array([v if isinstance(v, bytes) else v.encode() for v in got], dtype=object)
        else:
            assert got.dtype == array.dtype
        np.testing.assert_array_equal(got, array)


def test_probe_example_inputs_from_v2_metadata() -> None:
    from onnx_lambda.client.probe import example_inputs

    meta = {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, -1]},
                       {"name": "x", "datatype": "FP32", "shape": [3, -1, 2]}]}
    arrays = example_inputs(meta, dim=16, batch=2)
    assert arrays["ids"].shape == (2, 16) and arrays["ids"].dtype == np.int64
    assert arrays["x"].shape == (3, 16, 2) and arrays["x"].dtype == np.float32
    with pytest.raises(ValueError, match="--input"):
        example_inputs({"inputs": [{"name": "s", "datatype": "BYTES", "shape": [1]}]}, 1)
