"""Hostile requests against the real handler: odd event fields, shapes that declare
more than the body carries, mistyped Open Inference Protocol fields, Unicode digits, NaN and
Infinity both ways, and failures in telemetry or encoding. Each answers a clear 4xx (or a 500
JSON body for a real failure) in the event's own shape; nothing is ever raised to the runtime
(Lambda would hand the caller a ``stackTrace`` with file paths)."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.codecs.v2 import HEADER_LENGTH
from tests.conftest import Context
from tests.functional.test_handler_errors import assert_healthy, http_event
from tests.support.models import WEIGHTS

V2_PATH = "/v2/models/linear/infer"
X = [1.0, 2.0, 3.0, 4.0]
NPY = {"content-type": "application/x-npy", "accept": "application/json"}


def strict_json(text: str | bytes) -> Any:
    """``json.loads`` as a strict client parses: no NaN, no Infinity, no overflow to inf."""
    def refuse(literal: str) -> Any:
        raise AssertionError(f"{literal} in a response body")

    def finite(number: str) -> float:
        value = float(number)
        assert np.isfinite(value), f"{number} overflows to infinity"
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


def answer(service: Any, event: Any, request_id: str = "h-1") -> tuple[int, Any]:
    result = service(event, Context(request_id))
    assert isinstance(result, dict)
    return result["statusCode"], strict_json(result["body"])


def message(body: dict[str, Any]) -> str:
    """The error text, whether ``error`` is our object or the V2 protocol's plain string."""
    error = body["error"]
    return error if isinstance(error, str) else error["message"]


def v2_item(**extra: Any) -> dict[str, Any]:
    return {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": X, **extra}


def v2_binary(header: dict[str, Any], data: bytes) -> dict[str, Any]:
    raw = json.dumps(header).encode()
    return http_event(path=V2_PATH, body=raw + data, headers={HEADER_LENGTH: str(len(raw))})


def npy_bytes(header: str, data: bytes = b"") -> bytes:
    text = header + " " * (-(len(header) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1") + data


# -- the event itself ----------------------------------------------------------------------


@pytest.mark.parametrize("epoch", ["abc", "", [1], {"t": 1}, True, 10**400, "1e400"],
                         ids=["text", "empty", "list", "object", "bool", "10**400", "1e400"])
def test_odd_receive_timestamp_is_ignored_not_raised(linear_service: Any, epoch: Any) -> None:
    event = http_event()
    event["requestContext"]["timeEpoch"] = epoch
    status, body = answer(linear_service, event)
    assert status == 200, body
    np.testing.assert_allclose(body["outputs"]["y"], [np.array(X) @ WEIGHTS])


def test_odd_rest_api_timestamp_is_ignored(linear_service: Any) -> None:
    event = {"httpMethod": "POST", "path": "/predict", "body": json.dumps({"inputs": [X]}),
             "headers": {"content-type": "application/json"},
             "requestContext": {"requestTimeEpoch": "yesterday"}}
    status, _ = answer(linear_service, event)
    assert status == 200


@pytest.mark.parametrize("hold", [10**400, float("nan"), float("inf"), "x", [1], -5])
def test_odd_ping_hold_is_no_hold(linear_service: Any, hold: Any) -> None:
    answer_ = linear_service({"warmer": True, "holdMs": hold}, Context())
    assert answer_["warm"] is True and answer_["heldMs"] == 0


def _set(event: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    target = event
    for key in parents:
        target = target[key]
    target[last] = value
    return event


FIELDS = [
    ("headers", ["content-type"]), ("headers", "text"), ("body", 12), ("body", 10**12),
    ("body", {"inputs": [X]}), ("isBase64Encoded", "true"), ("isBase64Encoded", 1),
    ("rawPath", 7), ("rawPath", ["/predict"]), ("requestContext.http", "POST"),
    ("queryStringParameters", "output=y"), ("queryStringParameters", [["output", "y"]]),
]


@pytest.mark.parametrize(("field", "value"), FIELDS, ids=[f"{f}={v!r:.20}" for f, v in FIELDS])
def test_mistyped_event_field_is_4xx(linear_service: Any, field: str, value: Any) -> None:
    status, body = answer(linear_service, _set(http_event(), field, value))
    assert 400 <= status < 500, body
    assert body["requestId"] == "h-1" and message(body)
    assert_healthy(linear_service)


def test_stage_that_is_not_a_string_is_no_stage(linear_service: Any) -> None:
    event = _set(_set(http_event(), "requestContext.stage", 5), "rawPath", "/5/predict")
    assert answer(linear_service, event)[0] == 404


def test_request_context_of_the_wrong_type_is_not_an_http_event(linear_service: Any) -> None:
    event = {"version": "2.0", "requestContext": "http", "httpMethod": "POST"}
    for context in ("http", ["http"], 5, ["elb"]):
        event["requestContext"] = context
        status, _ = answer(linear_service, event)
        assert 400 <= status < 500


def test_cookies_of_any_type_never_fail(linear_service: Any) -> None:
    for cookies in (["a=1", 2, None], "a=1", 5, {"a": 1}):
        status, _ = answer(linear_service, {**http_event(), "cookies": cookies})
        assert status == 200


def test_alb_multi_value_fields_of_the_wrong_type_are_4xx(linear_service: Any) -> None:
    base = {"requestContext": {"elb": {}}, "httpMethod": "POST", "path": "/predict",
            "body": json.dumps({"inputs": [X]}), "isBase64Encoded": False}
    for field, value in (("multiValueHeaders", {"content-type": "application/json"}),
                         ("multiValueHeaders", ["x"]),
                         ("multiValueQueryStringParameters", {"output": 5})):
        status, _ = answer(linear_service, {**base, field: value})
        assert 400 <= status < 500, (field, value)


# -- sizes declared before the data ---------------------------------------------------------


@pytest.mark.parametrize(("header", "data"), [
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 4), }", b""),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", b"\0" * 16),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }", b"\0" * 20),  # trailing
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", b"\0" * 16),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2**70), }", b""),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1," * 70 + "), }", b"\0" * 4),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': " + "(1," * 70 + ")", b"\0" * 4),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), 'x': 1}", b"\0" * 16),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (0, " + "9" * 4000 + ", 2), }", b""),
], ids=["huge", "short", "trailing", "negative", "beyond-numpy", "rank-70", "unclosed",
        "extra-key", "4000-digit-dims"])
def test_npy_header_must_account_for_every_byte(linear_service: Any, header: str,
                                                data: bytes) -> None:
    status, body = answer(linear_service, http_event(body=npy_bytes(header, data),
                                                     headers=NPY))
    assert status == 400, body
    assert_healthy(linear_service)


def test_npy_message_says_what_the_header_declared(linear_service: Any) -> None:
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 4), }"
    _, body = answer(linear_service, http_event(body=npy_bytes(header), headers=NPY))
    assert "[100000000000, 4]" in message(body) and "0 bytes" in message(body)


def test_npy_fortran_order_and_big_endian_still_decode(linear_service: Any) -> None:
    array = np.asfortranarray(np.arange(8, dtype=">f4").reshape(2, 4))
    buffer = io.BytesIO()
    np.save(buffer, array)
    status, body = answer(linear_service, http_event(body=buffer.getvalue(), headers=NPY))
    assert status == 200, body
    np.testing.assert_allclose(body["outputs"]["y"], array.astype(np.float32) @ WEIGHTS)


@pytest.mark.parametrize(("item", "data"), [
    (v2_item(shape=[0, 2**70], data=[]), None),
    (v2_item(shape=[1] * 70, data=[1.0]), None),
    (v2_item(shape=[0, 2**70], parameters={"binary_data_size": 0}), b""),
    (v2_item(shape=[0, 2**70], datatype="BYTES", parameters={"binary_data_size": 0}), b""),
    (v2_item(shape=[10**11, 4], parameters={"binary_data_size": 16}), b"\0" * 16),
    (v2_item(shape=[10**3999] * 64, parameters={"binary_data_size": 0}), b""),
    (v2_item(shape=[10**3999] * 64, data=[1.0]), None),
], ids=["json-beyond-numpy", "json-rank-70", "binary-beyond-numpy", "bytes-beyond-numpy",
        "binary-huge", "binary-4000-digit-dims", "json-4000-digit-dims"])
def test_v2_shape_beyond_the_data_is_4xx(linear_service: Any, item: dict[str, Any],
                                         data: bytes | None) -> None:
    if data is None:
        event = http_event(path=V2_PATH, body=json.dumps({"inputs": [item]}))
    else:
        item.pop("data")
        event = v2_binary({"inputs": [item]}, data)
    status, body = answer(linear_service, event)
    assert 400 <= status < 500, body
    assert_healthy(linear_service)


# -- Open Inference Protocol field types ----------------------------------------------------

V2_FIELDS = [
    ("outputs", 5), ("outputs", "y"), ("outputs", {"name": "y"}), ("outputs", [{"name": ["y"]}]),
    ("outputs", [{"name": 5}]), ("outputs", [{"name": "y", "parameters": {"binary_data": "no"}}]),
    ("id", 5), ("id", {"a": 1}), ("parameters", {"binary_data_output": "yes"}),
    ("parameters", {"binary_data_output": 1}), ("inputs", [v2_item(datatype=["FP32"])]),
    ("inputs", [v2_item(datatype={"t": 1})]), ("inputs", [v2_item(parameters=5)]),
    ("inputs", [v2_item(parameters={"binary_data_size": True})]),
]


@pytest.mark.parametrize(("field", "value"), V2_FIELDS,
                         ids=[f"{f}={v!r:.30}" for f, v in V2_FIELDS])
def test_v2_mistyped_field_is_400(linear_service: Any, field: str, value: Any) -> None:
    request = {"inputs": [v2_item()], field: value}
    status, body = answer(linear_service, http_event(path=V2_PATH, body=json.dumps(request)))
    assert 400 <= status < 500, body
    assert message(body)


def test_error_messages_quoting_the_request_stay_short(linear_service: Any) -> None:
    request = {"inputs": [v2_item(name="n" * 1_000_000, datatype="FP99")]}
    result = linear_service(http_event(path=V2_PATH, body=json.dumps(request)), Context())
    assert result["statusCode"] == 400 and len(result["body"]) < 3000
    assert message(strict_json(result["body"])).endswith(" characters)")


def test_v2_mistyped_field_message_names_it(linear_service: Any) -> None:
    request = {"inputs": [v2_item()], "outputs": 5}
    _, body = answer(linear_service, http_event(path=V2_PATH, body=json.dumps(request)))
    assert "outputs" in message(body) and "list" in message(body)


@pytest.mark.parametrize("length", ["²", "٣", "１２", "9" * 5000, " 12", "-1", "0x10", ""])
def test_header_length_is_ascii_digits_only(linear_service: Any, length: str) -> None:
    raw = json.dumps({"inputs": [v2_item()]}).encode()
    event = http_event(path=V2_PATH, body=raw, headers={HEADER_LENGTH: length})
    status, body = answer(linear_service, event)
    assert status == 400, body
    assert "Inference-Header-Content-Length" in message(body)


# -- RFC 8259 in requests --------------------------------------------------------------------

LITERALS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E+0400", "1" + "0" * 400 + ".5",
            "1" + "0" * 250 + "e99"]


@pytest.mark.parametrize("literal", LITERALS, ids=[x[:12] for x in LITERALS])
def test_non_finite_numbers_in_requests_are_400(linear_service: Any, literal: str) -> None:
    simple = http_event(body='{"inputs": [[@, 1, 2, 3]]}'.replace("@", literal))
    v2 = http_event(path=V2_PATH, body='{"inputs": [{"name": "x", "shape": [1, 4], '
                    '"datatype": "FP32", "data": [@, 1, 2, 3]}]}'.replace("@", literal))
    header = ('{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
              '"parameters": {"binary_data_size": 16, "scale": @}}]}').replace("@", literal)
    header = header.encode()
    binary = http_event(path=V2_PATH, body=header + np.ones(4, "<f4").tobytes(),
                        headers={HEADER_LENGTH: str(len(header))})
    for event in (simple, v2, binary):
        status, body = answer(linear_service, event)
        assert status == 400, body
        assert "JSON" in message(body) or "overflows" in message(body)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_in_direct_events_are_400(linear_service: Any, value: float) -> None:
    for event in ({"inputs": [[value, 1.0, 2.0, 3.0]]},
                  {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                               "data": [value, 1.0, 2.0, 3.0]}]}):
        result = linear_service(event, Context("d-1"))
        assert result["requestId"] == "d-1" and "JSON" in message(result)


def test_big_but_finite_numbers_and_lookalike_text_are_fine(linear_service: Any) -> None:
    """The overflow pre-filter's false positives (3-digit exponents, long digit runs) still
    parse: only a number that really is infinite is refused."""
    tiny, long_fraction = "0." + "0" * 99 + "1e+100", "0." + "1" * 300  # 1.0 and 0.111…
    body = json.dumps({"inputs": [[1e-300, 1.0, 0.5, 2e7]],
                       "parameters": {"n": "e123 " + "9" * 250}})
    body = body.replace("1.0", tiny).replace("0.5", long_fraction)
    status, answer_body = answer(linear_service, http_event(body=body))
    assert status == 200, answer_body


# -- RFC 8259 in responses -------------------------------------------------------------------

NON_FINITE_ROWS = np.array([[np.nan, 1, 2, 3], [3e38, 3e38, 3e38, 3e38], X], dtype=np.float32)


def _request_line(service: Any) -> dict[str, Any]:
    lines = [json.loads(line) for line in service.telemetry.stream.getvalue().splitlines()]
    return [line for line in lines if line.get("message") == "request"][-1]


def test_non_finite_outputs_become_null_and_are_counted(linear_service: Any) -> None:
    buffer = io.BytesIO()
    np.save(buffer, NON_FINITE_ROWS)
    status, body = answer(linear_service, http_event(body=buffer.getvalue(), headers=NPY))
    assert status == 200
    y = body["outputs"]["y"]
    assert y[:2] == [[None, None], [None, None]]
    np.testing.assert_allclose(y[2], np.array(X) @ WEIGHTS)
    assert _request_line(linear_service)["nonFinite"] == 4


def test_fp32_overflow_in_simple_json_is_null(linear_service: Any) -> None:
    status, body = answer(linear_service, http_event(body=json.dumps({"inputs": [[3e38] * 4]})))
    assert (status, body["outputs"]["y"]) == (200, [[None, None]])
    assert _request_line(linear_service)["nonFinite"] == 2
    answer(linear_service, http_event())
    assert _request_line(linear_service)["nonFinite"] == 0


def test_cached_answer_keeps_its_count(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", cache_size="4")
    event = http_event(body=json.dumps({"inputs": [[3e38] * 4]}))
    for _ in range(2):
        assert answer(service, event) == (200, {"outputs": {"y": [[None, None]]}})
        assert _request_line(service)["nonFinite"] == 2


def test_v2_json_outputs_are_strict_json(linear_service: Any) -> None:
    header = {"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32",
                          "parameters": {"binary_data_size": NON_FINITE_ROWS.nbytes}}]}
    result = linear_service(v2_binary(header, NON_FINITE_ROWS.tobytes()), Context())
    assert result["statusCode"] == 200
    assert strict_json(result["body"])["outputs"][0]["data"][:4] == [None] * 4


def test_json_outputs_beside_binary_ones_are_strict_json(make_service: Any,
                                                        model_dir: Path) -> None:
    service = make_service(model_dir / "multi_io.onnx")
    a, ids = np.array([[np.inf, -np.inf, 1]], "<f4"), np.array([[1, 2]], "<i8")
    header = {"inputs": [{"name": "a", "shape": [1, 3], "datatype": "FP32",
                          "parameters": {"binary_data_size": a.nbytes}},
                         {"name": "ids", "shape": [1, 2], "datatype": "INT64",
                          "parameters": {"binary_data_size": ids.nbytes}}],
              "outputs": [{"name": "total"},
                          {"name": "doubled", "parameters": {"binary_data": True}}]}
    event = v2_binary(header, a.tobytes() + ids.tobytes())
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v2/models/multi_io/infer"
    result = service(event, Context())
    assert result["statusCode"] == 200 and result["isBase64Encoded"] is True
    raw = base64.b64decode(result["body"])
    cut = int(result["headers"][HEADER_LENGTH])
    assert strict_json(raw[:cut])["outputs"][0]["data"] == [None]
    assert np.frombuffer(raw[cut:], "<i8").tolist() == [2, 4]
    assert _request_line(service)["nonFinite"] == 1


def test_direct_answer_is_strict_json(linear_service: Any) -> None:
    result = linear_service({"inputs": [[3e38] * 4]}, Context())
    assert result["outputs"]["y"] == [[None, None]]
    strict_json(json.dumps(result))


# -- failures outside the request's own code --------------------------------------------------


def test_telemetry_failure_is_a_500_json_body(linear_service: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("log stream closed")

    monkeypatch.setattr(linear_service.telemetry, "request", broken)
    result = linear_service(http_event(), Context("t-1"))
    body = strict_json(result["body"])
    assert (result["statusCode"], body["requestId"]) == (500, "t-1")
    assert result["headers"]["x-request-id"] == "t-1" and "Traceback" not in result["body"]
    monkeypatch.undo()
    assert_healthy(linear_service)


def test_closed_log_stream_still_answers(linear_service: Any) -> None:
    linear_service.telemetry.stream.close()
    result = linear_service(http_event(), Context("t-2"))
    assert result["statusCode"] == 500 and strict_json(result["body"])["requestId"] == "t-2"
    assert linear_service({"inputs": [[1, 2]]}, Context("t-3"))["requestId"] == "t-3"


def test_unencodable_pipeline_answer_is_a_500_json_body(make_service: Any, model_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    service = make_service(model_dir / "linear.onnx")
    monkeypatch.setattr(service.pipeline, "postprocess",
                        lambda outputs, parameters, feeds: {"score": np.float32(1.0)})
    for event in (http_event(), {"inputs": [X]}):
        result = service(event, Context("enc-1"))
        body = strict_json(result["body"]) if "body" in result else result
        assert body["error"]["type"] == "InternalError" and body["requestId"] == "enc-1"
    assert "not JSON serializable" in service.telemetry.stream.getvalue()
