"""The exact answer and log line of a few requests, byte for byte (only the measured numbers,
the timestamp and the environment id vary): the warm path is tuned for speed, and none of that
may change what a client or CloudWatch receives."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Context

NUMBER = re.compile(r"\d+\.\d+")
EMF = ('{"_aws":{"CloudWatchMetrics":[{"Namespace":"OnnxLambda","Dimensions":[["FunctionName"]],'
       '"Metrics":[%s{"Name":"ColdStart","Unit":"Count"}]}],"Timestamp":T},"level":"INFO",'
       '"message":"request","functionName":"local","FunctionName":"local","ColdStart":%d,'
       '"coldStart":%s,"requestId":"%s",%s"source":"http-api","method":"POST",'
       '"path":"/predict","status":%d,"errorType":%s,"nonFinite":0}')
WARM = ("Decode", "Inference", "Encode", "Latency")


def http_api(body: str, content_type: str = "application/json") -> dict[str, Any]:
    return {"version": "2.0", "rawPath": "/predict", "headers": {"Content-Type": content_type},
            "requestContext": {"http": {"method": "POST", "path": "/predict"},
                               "stage": "$default"}, "body": body, "isBase64Encoded": False}


def emf(metrics: tuple[str, ...], request_id: str, *, cold: bool = False, status: int = 200,
        error: str | None = None) -> str:
    definitions = "".join(f'{{"Name":"{m}","Unit":"Milliseconds"}},' for m in metrics)
    values = "".join(f'"{m}":N,' for m in metrics)
    return EMF % (definitions, int(cold), json.dumps(cold), request_id, values, status,
                  json.dumps(error))


def answer(service: Any, event: dict[str, Any], request_id: str) -> tuple[Any, str]:
    stream = service.telemetry.stream
    stream.seek(0)
    stream.truncate()
    result = service(event, Context(request_id))
    line = stream.getvalue().splitlines()[-1]
    return result, re.sub(r'"(Timestamp|timestamp)":\d+', r'"\1":T', NUMBER.sub("N", line))


def test_warm_predict_and_its_log_line(make_service: Callable[..., Any],
                                       model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    body = json.dumps({"inputs": [[0.0, 1.5, -2.25, 3.0]]})
    cold, cold_line = answer(service, http_api(body), "r0")
    assert list(cold["headers"]) == ["content-type", "server-timing", "x-request-id"]
    stages = NUMBER.sub("N", cold["headers"]["server-timing"]).split(", ")
    assert stages[:4] == ["decode;dur=N", "inference;dur=N", "encode;dur=N", "total;dur=N"]
    assert stages[-1] == 'cold-start;desc="first request of this environment"'
    assert '"ColdStart":1,"coldStart":true,"requestId":"r0"' in cold_line
    for _ in range(2):  # the second warm line comes from the remembered layout
        result, line = answer(service, http_api(body), "r1")
        assert result == {"statusCode": 200, "headers": {
            "content-type": "application/json",
            "server-timing": result["headers"]["server-timing"], "x-request-id": "r1"},
            "body": '{"outputs":{"y":[[12.0,14.25]]}}', "isBase64Encoded": False}
        assert NUMBER.sub("N", result["headers"]["server-timing"]) == (
            "decode;dur=N, inference;dur=N, encode;dur=N, total;dur=N")
        assert line == emf(WARM, "r1")


def test_errors_answer_exactly(make_service: Callable[..., Any], model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    service(http_api("[[1, 2, 3, 4]]"), Context("warm"))
    result, line = answer(service, http_api("{bad"), "r2")
    assert result["statusCode"] == 400 and list(result["headers"]) == [
        "x-error-type", "server-timing", "x-request-id", "content-type"]
    assert result["body"] == ('{"error":{"type":"BadRequest","message":"malformed JSON: '
                              'Expecting property name enclosed in double quotes: line 1 column '
                              '2 (char 1)"},"requestId":"r2"}')
    assert line == emf(("Encode", "Latency"), "r2", status=400, error="BadRequest")
    result, _ = answer(service, http_api("[[1, 2, 3, 4]] x"), "r3")
    assert json.loads(result["body"])["error"]["message"] == (
        "malformed JSON: Extra data: line 1 column 16 (char 15)")
    result, _ = answer(service, http_api("[[1, 2, 3, 4]]", "text/csv"), "r4")
    assert result["statusCode"] == 415


def test_log_line_without_metrics(make_service: Callable[..., Any], model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx", metrics="false")
    service(http_api("[[1, 2, 3, 4]]"), Context("warm"))
    _, line = answer(service, http_api("[[1, 2, 3, 4]]"), "r5")
    assert line == ('{"timestamp":T,"level":"INFO","message":"request","functionName":"local",'
                    '"coldStart":false,"requestId":"r5","Decode":N,"Inference":N,"Encode":N,'
                    '"Latency":N,"source":"http-api","method":"POST","path":"/predict",'
                    '"status":200,"errorType":null,"nonFinite":0}')
