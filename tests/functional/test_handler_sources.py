"""Real event payloads (events/linear-*, from ``sam local generate-event``) through the handler:
each source is recognised and answered in the shape that source expects."""

from __future__ import annotations

import base64
import io
import json
import re
import time
from typing import Any

import numpy as np
import pytest

from handler import sources
from tests.conftest import EVENTS, Context
from tests.support.models import WEIGHTS

EXPECTED = np.array([[1.0, 2.0, 3.0, 4.0]]) @ WEIGHTS


def load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@pytest.mark.parametrize(("fixture", "source"), [
    ("linear-http-api-predict.json", "http-api"),
    ("linear-rest-api-predict.json", "rest-api"),
    ("linear-alb-predict.json", "alb"),
    ("linear-function-url-predict.json", "function-url"),
])
def test_predict_through_each_source(linear_service: Any, fixture: str, source: str) -> None:
    event = load(fixture)
    assert sources.detect(event).name == source
    result = linear_service(event, Context())
    assert result["statusCode"] == 200
    assert result["isBase64Encoded"] is False
    np.testing.assert_allclose(json.loads(result["body"])["outputs"]["y"], EXPECTED)
    timing = result.get("headers", {}).get("server-timing") or \
        result["multiValueHeaders"]["server-timing"][0]
    assert "inference;dur=" in timing


def test_alb_answers_with_status_description_and_multi_value_headers(linear_service: Any) -> None:
    event = load("linear-alb-predict.json")
    event["multiValueHeaders"] = {k: [v] for k, v in event.pop("headers").items()}
    result = linear_service(event, Context())
    assert result["statusDescription"] == "200 OK"
    assert result["multiValueHeaders"]["content-type"] == ["application/json"]


def test_alb_query_strings_are_url_decoded() -> None:
    event = load("linear-alb-predict.json")
    event["queryStringParameters"] = {"output": "a%20b"}
    assert sources.detect(event).to_request(event).query == {"output": "a b"}


def test_rest_api_queue_time_from_request_epoch(linear_service: Any) -> None:
    event = load("linear-rest-api-predict.json")
    assert sources.detect(event).to_request(event).received_epoch_ms == \
        event["requestContext"]["requestTimeEpoch"]
    event["requestContext"]["requestTimeEpoch"] = time.time() * 1000 - 25
    timing = linear_service(event, Context())["headers"]["server-timing"]
    queue = float(re.search(r"queue;dur=([\d.]+)", timing).group(1))
    assert 25 <= queue < 30_000


def test_stale_request_timestamp_gives_no_queue_time(linear_service: Any) -> None:
    event = load("linear-rest-api-predict.json")  # SAM's sample timestamp is from 2015
    assert "queue" not in linear_service(event, Context())["headers"]["server-timing"]


def test_http_api_named_stage_is_stripped(linear_service: Any) -> None:
    event = load("linear-http-api-predict.json")
    event["rawPath"] = "/prod/predict"
    event["requestContext"]["stage"] = "prod"
    assert linear_service(event, Context())["statusCode"] == 200


def test_health_get(linear_service: Any) -> None:
    result = linear_service(load("http-api-health.json"), Context())
    body = json.loads(result["body"])
    assert result["statusCode"] == 200
    assert body["status"] == "ok" and body["model"] == "linear"


def test_npy_in_npy_out_is_base64(linear_service: Any) -> None:
    event = load("linear-http-api-predict.json")
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1, 2, 3, 4]], dtype=np.float32))
    event["body"] = base64.b64encode(buffer.getvalue()).decode()
    event["headers"] = {"content-type": "application/x-npy"}
    result = linear_service(event, Context())
    assert result["isBase64Encoded"] is True
    assert result["headers"]["content-type"] == "application/x-npy"
    out = np.load(io.BytesIO(base64.b64decode(result["body"])), allow_pickle=False)
    np.testing.assert_allclose(out, EXPECTED)


def test_npy_in_json_out_by_accept(linear_service: Any) -> None:
    event = load("linear-http-api-predict.json")
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1, 2, 3, 4]], dtype=np.float32))
    event["body"] = base64.b64encode(buffer.getvalue()).decode()
    event["headers"] = {"content-type": "application/x-npy", "accept": "application/json"}
    result = linear_service(event, Context())
    np.testing.assert_allclose(json.loads(result["body"])["outputs"]["y"], EXPECTED)


def test_scheduled_event_is_a_ping_not_traffic(linear_service: Any) -> None:
    answer = linear_service(load("scheduled.json"), Context())
    assert answer["warm"] is True and answer["requestsServed"] == 0


def test_cookies_of_http_api_reach_the_request() -> None:
    event = load("linear-http-api-predict.json")
    request = sources.detect(event).to_request(event)
    assert request.headers["cookie"] == "; ".join(event["cookies"])


def test_custom_source_is_tried_first(linear_service: Any,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from handler.http import Request

    class Sqs:
        name = "sqs"

        def matches(self, event: Any) -> bool:
            return isinstance(event, dict) and "Records" in event

        def to_request(self, event: dict[str, Any]) -> Request:
            return Request("POST", "/predict", body=event["Records"][0]["body"].encode())

        def to_response(self, response: Any, event: Any) -> Any:
            return {"batchItemFailures": [] if response.status == 200 else ["0"]}

    monkeypatch.setattr(sources, "SOURCES", list(sources.SOURCES))
    sources.register(Sqs())
    event = {"Records": [{"body": json.dumps({"inputs": [[1, 2, 3, 4]]})}]}
    assert linear_service(event, Context()) == {"batchItemFailures": []}

