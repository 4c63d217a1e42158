"""Every error the handler can answer: status, stable type, request id, and the environment
stays healthy (the next good request on the same service succeeds)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import Context
from tests.support.models import WEIGHTS

GOOD = json.dumps({"inputs": [[1, 2, 3, 4]]})


def http_event(method: str = "POST", path: str = "/predict", body: str | bytes = GOOD,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
    binary = isinstance(body, bytes)
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json", **(headers or {})},
        "requestContext": {"http": {"method": method, "path": path}, "stage": "$default",
                           "requestId": "gw-1", "timeEpoch": 1},
        "body": base64.b64encode(body).decode() if binary else body,
        "isBase64Encoded": binary,
    }


def call(service: Any, event: dict[str, Any], request_id: str = "req-1",
         remaining_ms: int = 30_000) -> tuple[int, dict[str, Any], dict[str, str]]:
    result = service(event, Context(request_id, remaining_ms))
    return result["statusCode"], json.loads(result["body"]), result["headers"]


def assert_healthy(service: Any) -> None:
    status, body, _ = call(service, http_event(), request_id="after")
    assert status == 200
    np.testing.assert_allclose(body["outputs"]["y"], [np.array([1, 2, 3, 4]) @ WEIGHTS])


CASES = [
    ("malformed JSON", http_event(body="{not json"), 400, "BadRequest"),
    ("not an object", http_event(body='"just a string"'), 400, "BadRequest"),
    ("invalid UTF-8", http_event(body=b"\xff\xfe{"), 400, "BadRequest"),
    ("unknown input", http_event(body=json.dumps({"inputs": {"nope": [[1, 2, 3, 4]]}})),
     400, "InvalidInput"),
    ("wrong dtype", http_event(body=json.dumps({"inputs": [["a", "b", "c", "d"]]})),
     400, "InvalidInput"),
    ("wrong shape", http_event(body=json.dumps({"inputs": [[1, 2, 3]]})), 400, "InvalidInput"),
    ("wrong rank", http_event(body=json.dumps({"inputs": [1, 2, 3, 4]})), 400, "InvalidInput"),
    ("ragged", http_event(body=json.dumps({"inputs": [[1, 2, 3, 4], [1]]})),
     400, "InvalidInput"),
    ("unknown route", http_event(path="/nope"), 404, "NotFound"),
    ("unknown model", http_event(path="/v2/models/other/infer"), 404, "NotFound"),
    ("wrong method", http_event(method="GET"), 405, "MethodNotAllowed"),
    ("unsupported media type", http_event(headers={"content-type": "text/csv"}),
     415, "UnsupportedMediaType"),
    ("not acceptable", http_event(headers={"accept": "text/html"}), 406, "NotAcceptable"),
    ("bad base64", {**http_event(), "body": "%%%", "isBase64Encoded": True}, 400, "BadRequest"),
]


@pytest.mark.parametrize(("case", "event", "status", "kind"), CASES, ids=[c[0] for c in CASES])
def test_error_then_next_request_succeeds(linear_service: Any, case: str, event: dict[str, Any],
                                          status: int, kind: str) -> None:
    got, body, headers = call(linear_service, event, request_id="bad-1")
    # /v2/ routes answer the Open Inference Protocol's {"error": message, ...} shape
    error = body["error"] if isinstance(body["error"], dict) else {
        "type": body["type"], "message": body["error"]}
    assert (got, error["type"]) == (status, kind) == (got, headers["x-error-type"]), body
    assert body["requestId"] == "bad-1" == headers["x-request-id"]
    assert error["message"]
    assert "Traceback" not in json.dumps(body)
    assert_healthy(linear_service)


def test_wrong_shape_message_says_what_the_model_expects(linear_service: Any) -> None:
    _, body, _ = call(linear_service, http_event(body=json.dumps({"inputs": [[1, 2, 3]]})))
    assert "x: float32[batch, 4]" in body["error"]["message"]


def test_method_not_allowed_lists_allowed_methods(linear_service: Any) -> None:
    _, _, headers = call(linear_service, http_event(method="DELETE"))
    assert headers["allow"] == "POST"


def test_payload_too_large(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", max_payload_bytes="64")
    body = json.dumps({"inputs": [[1.0] * 4] * 10})
    status, answer, _ = call(service, http_event(body=body))
    assert (status, answer["error"]["type"]) == (413, "PayloadTooLarge")
    assert_healthy(service)


def test_inference_failure_is_500_without_internals(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "gather.onnx")
    status, body, _ = call(service, http_event(body=json.dumps({"inputs": [5]})), "boom")
    assert (status, body["error"]["type"], body["requestId"]) == (500, "InferenceFailed", "boom")
    assert "Traceback" not in body["error"]["message"]
    log = service.telemetry.stream.getvalue()
    assert '"level":"ERROR"' in log and "boom" in log  # full detail goes to the log
    status, body, _ = call(service, http_event(body=json.dumps({"inputs": [2]})))
    assert (status, body["outputs"]["value"]) == (200, [30.0])


def test_deadline_that_cannot_be_met_is_504(make_service: Any, model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", deadline_margin_ms="50")
    assert call(service, http_event())[0] == 200  # learns how long inference takes
    status, body, _ = call(service, http_event(), remaining_ms=10)
    assert (status, body["error"]["type"]) == (504, "DeadlineExceeded")
    assert call(service, http_event(), remaining_ms=30_000)[0] == 200


def test_pipeline_bug_is_500_and_logged(make_service: Any, model_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    service = make_service(model_dir / "linear.onnx")

    def broken(inputs: Any, parameters: Any) -> Any:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(service.pipeline, "preprocess", broken)
    status, body, _ = call(service, http_event(), "bug-1")
    assert (status, body["error"]["type"]) == (500, "InternalError")
    assert "oops" not in body["error"]["message"]
    assert "ZeroDivisionError" in service.telemetry.stream.getvalue()
    monkeypatch.undo()
    assert_healthy(service)


def test_direct_invocation_errors_are_data(linear_service: Any) -> None:
    answer = linear_service({"inputs": [[1, 2]]}, Context("direct-1"))
    assert answer["error"]["type"] == "InvalidInput"
    assert answer["requestId"] == "direct-1"
    answer = linear_service({"inputs": [[1, 2, 3, 4]]}, Context())
    np.testing.assert_allclose(answer["outputs"]["y"], [np.array([1, 2, 3, 4]) @ WEIGHTS])


def test_response_over_lambdas_limit_is_a_clear_error(make_service: Any,
                                                      model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", max_payload_bytes=str(20 << 20))
    rows = 600_000  # ~14 bytes of JSON per output row: over 8 MB of response
    body = json.dumps({"inputs": [[1, 2, 3, 4]] * rows})
    status, answer, _ = call(service, http_event(body=body))
    assert (status, answer["error"]["type"]) == (500, "ResponseTooLarge")
    assert "binary" in answer["error"]["message"]
    assert_healthy(service)
