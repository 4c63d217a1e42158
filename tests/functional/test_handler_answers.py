"""What a client and CloudWatch receive for a few requests: the response, its headers (the
``Server-Timing`` entries parsed), and the request's log line read as JSON (its fields, and the
EMF document's metric names and values)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onnx_lambda.client.timing import parse_server_timing
from tests.conftest import Context

WARM = {"Decode", "Inference", "Encode", "Latency"}


def http_api(body: str, content_type: str = "application/json") -> dict[str, Any]:
    return {"version": "2.0", "rawPath": "/predict", "headers": {"Content-Type": content_type},
            "requestContext": {"http": {"method": "POST", "path": "/predict"},
                               "stage": "$default"}, "body": body, "isBase64Encoded": False}


def answer(service: Any, event: dict[str, Any], request_id: str) -> tuple[Any, dict[str, Any]]:
    """The response and the request's log line, parsed."""
    stream = service.telemetry.stream
    stream.seek(0)
    stream.truncate()
    result = service(event, Context(request_id))
    return result, json.loads(stream.getvalue().splitlines()[-1])


def metrics(record: dict[str, Any]) -> dict[str, str]:
    """The EMF document's metrics (name → unit); each must be a value of the record."""
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "OnnxLambda" and directive["Dimensions"] == [
        ["FunctionName"]]
    assert isinstance(record["_aws"]["Timestamp"], int)
    declared = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    for name in declared:
        assert isinstance(record[name], int | float), name
    return declared


def test_warm_predict_and_its_log_line(make_service: Callable[..., Any],
                                       model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    body = json.dumps({"inputs": [[0.0, 1.5, -2.25, 3.0]]})
    cold, record = answer(service, http_api(body), "r0")
    stages, is_cold = parse_server_timing(cold["headers"]["server-timing"])
    assert is_cold and {"decode", "inference", "encode", "total", "model-load"} <= set(stages)
    assert record["ColdStart"] == 1 and record["coldStart"] is True
    assert "ModelLoad" in metrics(record)  # (InitDuration: handler.app sets "init")
    for _ in range(2):
        result, record = answer(service, http_api(body), "r1")
        assert result == {"statusCode": 200, "headers": {
            "content-type": "application/json",
            "server-timing": result["headers"]["server-timing"], "x-request-id": "r1"},
            "body": '{"outputs":{"y":[[12.0,14.25]]}}', "isBase64Encoded": False}
        stages, is_cold = parse_server_timing(result["headers"]["server-timing"])
        assert not is_cold and list(stages) == ["decode", "inference", "encode", "total"]
        assert metrics(record) == {**dict.fromkeys(WARM, "Milliseconds"), "ColdStart": "Count"}
        assert record["Latency"] == stages["total"]  # the same figure in both
        assert {k: record[k] for k in ("level", "message", "functionName", "FunctionName",
                                       "ColdStart", "coldStart", "requestId", "source",
                                       "method", "path", "status", "errorType",
                                       "nonFinite")} == {
            "level": "INFO", "message": "request", "functionName": "local",
            "FunctionName": "local", "ColdStart": 0, "coldStart": False, "requestId": "r1",
            "source": "http-api", "method": "POST", "path": "/predict", "status": 200,
            "errorType": None, "nonFinite": 0}


def test_errors_answer_with_their_type(make_service: Callable[..., Any],
                                       model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    service(http_api("[[1, 2, 3, 4]]"), Context("warm"))
    result, record = answer(service, http_api("{bad"), "r2")
    assert result["statusCode"] == 400 and result["headers"]["x-error-type"] == "BadRequest"
    assert result["headers"]["content-type"] == "application/json"
    assert result["headers"]["x-request-id"] == "r2"
    error = json.loads(result["body"])
    assert error["requestId"] == "r2" and error["error"]["type"] == "BadRequest"
    assert error["error"]["message"].startswith("malformed JSON")
    assert set(metrics(record)) == {"Encode", "Latency", "ColdStart"}
    assert record["status"] == 400 and record["errorType"] == "BadRequest"
    result, _ = answer(service, http_api("[[1, 2, 3, 4]]", "text/csv"), "r4")
    assert result["statusCode"] == 415


def test_log_line_without_metrics(make_service: Callable[..., Any], model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", metrics="false")
    service(http_api("[[1, 2, 3, 4]]"), Context("warm"))
    _, record = answer(service, http_api("[[1, 2, 3, 4]]"), "r5")
    assert "_aws" not in record and isinstance(record["timestamp"], int)
    assert set(record) >= WARM and record["requestId"] == "r5" and record["status"] == 200
