"""The Invoke API's request checks (events as Lambda parses them, client contexts) and the
HTTP server's response encoding: pure functions, no sockets."""

from __future__ import annotations

import base64
import json

import pytest

from onnx_lambda.emulator.apigw import gateway_refusal
from onnx_lambda.emulator.http11 import Response, encode_response
from onnx_lambda.emulator.invoke_api import ServiceError, check_json, decode_client_context, refusal
from onnx_lambda.emulator.limits import LAMBDA_CLIENT_CONTEXT_BYTES


@pytest.mark.parametrize("payload", [b"NaN", b'{"a": [Infinity]}', b"-Infinity",
                                     b"[" * 5000 + b"]" * 5000, b"{", b"\xff", b""])
def test_events_lambda_refuses(payload: bytes) -> None:
    with pytest.raises(ServiceError) as refused:
        check_json(payload)
    error = refused.value
    assert (error.status, error.error_type) == (400, "InvalidRequestContentException")
    assert error.message.startswith("Could not parse request body into json: ")


def test_events_lambda_accepts() -> None:
    assert check_json(b'{"x": [1e308, -0.0, "\\u00e9"]}') == {"x": [1e308, -0.0, "é"]}
    assert check_json(b'"text"') == "text"
    assert check_json(b"[" * 200 + b"]" * 200) is not None


def test_client_context_is_reencoded_as_ascii_json() -> None:
    text = '{"custom": {"name": "€ 日本", "crlf": "a\\r\\nb"}}'
    delivered = decode_client_context(base64.b64encode(text.encode()).decode())
    assert delivered is not None and delivered.isascii()
    assert "\r" not in delivered and "\n" not in delivered
    assert json.loads(delivered) == json.loads(text)


@pytest.mark.parametrize("context", [
    "%%%", base64.b64encode(b"[1]").decode(), base64.b64encode(b"{} trailing").decode(),
    base64.b64encode(b'{"a": NaN}').decode(), "e30=" * (LAMBDA_CLIENT_CONTEXT_BYTES // 4 + 1),
])
def test_bad_client_contexts(context: str) -> None:
    with pytest.raises(ServiceError) as refused:
        decode_client_context(context)
    assert refused.value.status == 400


def test_refusals_have_the_callers_shape() -> None:
    body = json.loads(gateway_refusal(431).body)
    assert body == {"message": "HTTP header is larger than 10240 bytes."}
    assert json.loads(gateway_refusal(408).body) == {"message": "Request Timeout"}
    invoke = refusal(413, "/2015-03-31/functions/F/invocations")
    assert dict(invoke.headers)["x-amzn-ErrorType"] == "RequestTooLargeException"
    assert json.loads(refusal(413, "/predict").body) == {"message": "Request Entity Too Large"}


@pytest.mark.parametrize("value", ["a\r\nInjected: yes", "a\nb", "€"])
def test_unsendable_header_values_raise(value: str) -> None:
    with pytest.raises(ValueError):
        encode_response(Response(200, b"", [("X-A", value)]), keep_alive=True)
